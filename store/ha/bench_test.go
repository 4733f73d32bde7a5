package ha

import (
	"context"
	"sync"
	"testing"
	"time"

	"rmqd/store"
)

// BenchmarkSyncMasterPut times puts on a SYNC_MASTER answered after an
// in-process slave over loopback acknowledged them: one at a time (the round
// trip) and 64 in flight (what one slave ack covers).
func BenchmarkSyncMasterPut(b *testing.B) {
	for _, inflight := range []int{1, 64} {
		b.Run(map[int]string{1: "serial", 64: "inflight64"}[inflight], func(b *testing.B) {
			t := &testing.T{}
			master := openStore(t, b.TempDir(), store.RoleSyncMaster)
			defer master.Shutdown()
			m := NewMaster(master, Config{Logger: testLogger()})
			if err := m.Start("127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			slave := openStore(t, b.TempDir(), store.RoleSlave)
			defer slave.Shutdown()
			sl := NewSlave(slave, Config{Logger: testLogger()})
			defer sl.Close()
			sl.SetMasterAddr(m.Addr().String())
			sl.Start()
			for deadline := time.Now().Add(5 * time.Second); len(m.Status()) == 0 || m.Status()[0].AckOffset < 0; {
				if time.Now().After(deadline) {
					b.Fatal("slave did not connect")
				}
				time.Sleep(time.Millisecond)
			}
			msg := msg(1)
			b.SetBytes(int64(len(msg.Body)))
			b.ResetTimer()
			var wg sync.WaitGroup
			sem := make(chan struct{}, inflight)
			for i := 0; i < b.N; i++ {
				sem <- struct{}{}
				wg.Add(1)
				mm := *msg
				master.PutMessageAsync(context.Background(), &mm, func(r store.PutResult) {
					if r.Status != store.PutOK {
						b.Errorf("put: status %v", r.Status)
					}
					<-sem
					wg.Done()
				})
			}
			wg.Wait()
		})
	}
}

// BenchmarkAutoSwitchSyncPut times controller-mode SYNC puts: stored on the
// master, answered once the other member of the sync state set
// (allAckInSyncStateSet) acknowledged them over loopback, through
// WaitAckedAsync as the put path uses it; serial and 64 in flight.
func BenchmarkAutoSwitchSyncPut(b *testing.B) {
	for _, inflight := range []int{1, 64} {
		b.Run(map[int]string{1: "serial", 64: "inflight64"}[inflight], func(b *testing.B) {
			t := &testing.T{}
			mdir, sdir := b.TempDir(), b.TempDir()
			master := openStore(t, mdir, store.RoleAsyncMaster)
			defer master.Shutdown()
			mcfg := AutoConfig{Config: Config{Logger: testLogger()}, ListenAddr: "127.0.0.1:0", EpochFile: EpochFilePath(mdir),
				LocalBrokerID: 1, AllAckInSyncStateSet: true}
			a, err := NewAutoSwitch(master, mcfg)
			if err != nil {
				b.Fatal(err)
			}
			defer a.Close()
			joined := make(chan []int64, 4)
			a.OnSyncStateSetChange(func(s []int64) { joined <- s })
			if err := a.ChangeToMaster(1, 1, []int64{1}); err != nil {
				b.Fatal(err)
			}
			slave := openStore(t, sdir, store.RoleSlave)
			defer slave.Shutdown()
			s, err := NewAutoSwitch(slave, AutoConfig{Config: Config{Logger: testLogger()}, EpochFile: EpochFilePath(sdir), LocalBrokerID: 2})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.ChangeToSlave(a.Addr().String(), 1, 2); err != nil {
				b.Fatal(err)
			}
			select {
			case set := <-joined:
				a.SetSyncStateSet(set, 2)
			case <-time.After(10 * time.Second):
				b.Fatal("slave did not join the sync state set")
			}
			msg := msg(1)
			b.SetBytes(int64(len(msg.Body)))
			b.ResetTimer()
			var wg sync.WaitGroup
			sem := make(chan struct{}, inflight)
			for i := 0; i < b.N; i++ {
				sem <- struct{}{}
				wg.Add(1)
				mm := *msg
				master.PutMessageAsync(context.Background(), &mm, func(r store.PutResult) {
					if r.Status != store.PutOK {
						b.Errorf("put: status %v", r.Status)
					}
					a.WaitAckedAsync(r.WroteOffset+int64(r.WroteBytes), 3*time.Second, func(err error) {
						if err != nil {
							b.Errorf("wait acked: %v", err)
						}
						<-sem
						wg.Done()
					})
				})
			}
			wg.Wait()
		})
	}
}

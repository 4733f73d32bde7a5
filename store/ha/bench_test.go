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

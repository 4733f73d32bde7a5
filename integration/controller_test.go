package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestControllerFailover runs RocketMQ 5.x controller mode: a 3-node Apache controller (DLedger Raft), an
// Apache name server and a group of three brokers of one kind (all-Java is the control). It checks that the
// controller elects a master that serves sends, that a SIGKILLed master is replaced by one of its slaves
// (the time is logged, never asserted), that no send acknowledged under SYNC replication is lost, that the
// old master rejoins as a slave, and that losing a controller node, a follower then the leader, does not
// stop the group. Long (JVMs): it runs only with RMQD_CONTROLLER=1 (make integration-controller).
func TestControllerFailover(t *testing.T) {
	if os.Getenv("RMQD_CONTROLLER") != "1" {
		t.Skip("controller mode runs with RMQD_CONTROLLER=1 (make integration-controller)")
	}
	kinds := targetsFromEnv(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) { controllerFailover(t, kind, [3]string{kind, kind, kind}) })
	}
	if containsKind(kinds, harness.KindApache) && containsKind(kinds, harness.KindRmqd) {
		// One group, both kinds: Java and rmqd brokers replicate to each other with the auto-switch protocol.
		// The Java broker starts first, so it is usually the first master: killing it hands the group to
		// rmqd, and the Java broker comes back as a slave of an rmqd master.
		t.Run("mixed", func(t *testing.T) {
			controllerFailover(t, "mixed", [3]string{harness.KindApache, harness.KindRmqd, harness.KindRmqd})
		})
	}
}

func controllerFailover(t *testing.T, kind string, brokerKinds [3]string) {
	const (
		brokerName = "broker-ctl"
		topic      = "IT_ctl_topic"
		queues     = 4
	)
	opts := harness.Options{StartTimeout: 180 * time.Second}
	ctrl := harness.StartController(t, 3, opts)
	ns := harness.StartNamesrv(t, harness.KindApache, opts)

	bopts := harness.Options{BrokerName: brokerName, StartTimeout: 180 * time.Second,
		BrokerConf: map[string]string{"flushDiskType": "ASYNC_FLUSH", "allAckInSyncStateSet": "true"}}
	var brokers []*harness.GroupBroker
	var addrs []string
	for _, k := range brokerKinds {
		g := harness.StartGroupBroker(t, k, ns.Addr, ctrl, bopts)
		brokers = append(brokers, g)
		addrs = append(addrs, g.BrokerAddr)
	}
	master, took := harness.WaitGroupMaster(t, ns.Addr, brokerName, addrs, "", 180*time.Second)
	t.Logf("%s group: master %s elected and registered %v after the last broker's port opened", kind, master, took)
	byAddr := func(a string) *harness.GroupBroker {
		for _, g := range brokers {
			if g.BrokerAddr == a {
				return g
			}
		}
		t.Fatalf("no broker %s", a)
		return nil
	}
	// Every broker knows the topics, so whichever is master next serves them at once.
	timerTopic := topic + "_timer"
	for _, g := range brokers {
		r := newRawClient(t, g.Target)
		r.createTopic(topic, queues)
		r.createTopic(timerTopic, 1)
	}
	waitSlavesRefuse(t, brokers, master, topic)

	// Timers the master delivers before the kill: the new master must not deliver them again (its slave
	// copy of the master's timer checkpoint says they were delivered).
	mr := newRawClient(t, byAddr(master).Target)
	for i := range 3 {
		mr.sendOK(timerTopic, 0, "TIMER_DELAY_SEC\x011\x02", fmt.Sprintf("timer-%d", i))
	}
	waitMaxOffset(t, mr, timerTopic, 0, 3)
	// A Java master writes its checkpoint every second, its slaves copy it every 3 s, as rmqd's do.
	timersSynced := time.Now().Add(8 * time.Second)

	ledger := startAckLedger(t, ns.Addr, "IT_ctl_pg_"+kind, topic, "ctl", 256)
	ledger.waitMore(t, "before the kill", 200, 90*time.Second)
	time.Sleep(time.Until(timersSynced))

	old := byAddr(master)
	killed := time.Now()
	old.Kill(t)
	newMaster, _ := harness.WaitGroupMaster(t, ns.Addr, brokerName, addrs, master, 120*time.Second)
	routed := time.Since(killed)
	// The new master itself serves a send (the client below may still hold the old route for a while).
	nr := newRawClient(t, byAddr(newMaster).Target)
	deadline := time.Now().Add(120 * time.Second)
	for {
		resp := nr.invoke(codec.ReqSendMessage, sendHeader(topic+"_direct", 0, ""), []byte("ctl-direct"), 10*time.Second)
		if resp.Code == codec.RespSuccess {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("new master %s still refuses sends 120 s after the kill: code %d %q", newMaster, resp.Code, resp.Remark)
		}
		time.Sleep(50 * time.Millisecond)
	}
	direct := time.Since(killed)
	// A promoted slave's wheel loads at once and would put a timer it took for undelivered out at once.
	time.Sleep(5 * time.Second)
	if n := nr.maxOffset(timerTopic, 0); n != 3 {
		t.Errorf("new master %s (%s) holds %d timer deliveries, want the old master's 3, none again",
			newMaster, byAddr(newMaster).Kind, n)
	}
	// The first send acknowledged after the kill: the group serves again.
	servedAt := ledger.waitMore(t, "after the master "+master+" was killed", 1, 120*time.Second)
	t.Logf("FAILOVER %s group: master %s (%s) SIGKILLed; new master %s in the route after %v, serves a direct send after %v, "+
		"the Go producer's first acknowledged send after %v", kind, master, old.Kind, newMaster, routed.Round(time.Millisecond),
		direct.Round(time.Millisecond), servedAt.Sub(killed).Round(time.Millisecond))

	// The old master comes back as a slave of the new one.
	old.Restart(t)
	waitRouteSlave(t, ns.Addr, brokerName, master, 120*time.Second)
	waitSameEpochs(t, byAddr(newMaster), old)
	ledger.waitMore(t, "after the old master rejoined", 100, 60*time.Second)

	// Losing a controller follower, then the leader, does not stop the group.
	leader := ctrl.WaitLeader(t, 30*time.Second)
	follower := (leader + 1) % len(ctrl.Nodes)
	ctrl.KillNode(t, follower)
	ledger.waitMore(t, "without controller follower", 100, 60*time.Second)
	ctrl.RestartNode(t, follower)
	ctrl.KillNode(t, leader)
	ledger.waitMore(t, "without the controller leader", 100, 60*time.Second)
	next := ctrl.WaitLeader(t, 120*time.Second)
	t.Logf("controller %s leads after %s was killed", ctrl.Nodes[next].ID, ctrl.Nodes[leader].ID)
	ledger.waitMore(t, "under the new controller leader", 100, 60*time.Second)

	want := ledger.finish()
	t.Logf("%d sends acknowledged in all", len(want))

	// Every acknowledged send is readable from the group: first its queues hold them all.
	nm := newRawClient(t, byAddr(newMaster).Target)
	// They may hold more: a send in flight at a kill, one that timed out on the client.
	inQueues := settledTotal(nm, topic, queues, int64(len(want)), 30*time.Second)
	if inQueues < int64(len(want)) {
		t.Fatalf("the new master's queues of %s hold %d messages, fewer than the %d acknowledged", topic, inQueues, len(want))
	}
	t.Logf("the new master's queues of %s hold %d messages", topic, inQueues)
	via := &harness.Target{Kind: kind, NamesrvAddr: ns.Addr, BrokerAddr: newMaster, BrokerName: brokerName,
		ClusterName: "DefaultCluster", LogDir: harness.LogDir(t)}
	// The result of 66,000 messages (a fast master's share of the run) did not fit the runner's usual 192 MiB.
	r := harness.RunJava(t, via, "5", "consume", "-Xmx768m", "--topic", topic, "--group", "IT_ctl_cg",
		"--count", fmt.Sprint(inQueues), "--timeout", "180000", "--deadline", "200000")
	seen := make(map[string]bool, len(r.Received))
	for _, m := range r.Received {
		seen[m.MsgID] = true
	}
	lost := 0
	for _, id := range want {
		if !seen[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged messages are not in the group", lost, len(want))
	}
}

// waitSlavesRefuse waits until every broker but the master answers a send with Java's slave refusal.
func waitSlavesRefuse(t *testing.T, brokers []*harness.GroupBroker, master, topic string) {
	t.Helper()
	for _, g := range brokers {
		if g.BrokerAddr == master {
			continue
		}
		resp := newRawClient(t, g.Target).invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), []byte("x"), 10*time.Second)
		if resp.Code == codec.RespSuccess {
			t.Fatalf("slave %s accepted a send", g.BrokerAddr)
		}
		t.Logf("slave %s refuses a send: code %d %q", g.BrokerAddr, resp.Code, resp.Remark)
	}
}

// waitRouteSlave waits until the name server lists addr in brokerName under a slave id.
func waitRouteSlave(t *testing.T, namesrv, brokerName, addr string, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	last := ""
	for {
		m, err := harness.RouteBrokers(ctx, namesrv, "TBW102", brokerName)
		if err == nil {
			for id, a := range m {
				if a == addr && id != "0" {
					t.Logf("%s rejoined as slave %s", addr, id)
					return
				}
			}
			last = fmt.Sprint(m)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not a slave of %s after %v (last route %s)", addr, brokerName, timeout, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// epochsOf is GET_BROKER_EPOCH_CACHE's epoch list ("epoch@startOffset" each, the open end left out).
func epochsOf(t *testing.T, g *harness.GroupBroker) ([]string, error) {
	resp := newRawClient(t, g.Target).invoke(codec.ReqGetBrokerEpochCache, nil, nil, 10*time.Second)
	if resp.Code != codec.RespSuccess {
		return nil, fmt.Errorf("GET_BROKER_EPOCH_CACHE on %s: code %d %q", g.BrokerAddr, resp.Code, resp.Remark)
	}
	strict, err := codec.StrictJSON(resp.Body)
	if err != nil {
		return nil, err
	}
	var c struct {
		EpochList []struct {
			Epoch       int32 `json:"epoch"`
			StartOffset int64 `json:"startOffset"`
		} `json:"epochList"`
	}
	if err := json.Unmarshal(strict, &c); err != nil {
		return nil, fmt.Errorf("GET_BROKER_EPOCH_CACHE on %s: %w", g.BrokerAddr, err)
	}
	var out []string
	for _, e := range c.EpochList {
		out = append(out, fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset))
	}
	return out, nil
}

// waitSameEpochs waits until the rejoined old master holds the new master's epoch history: it cut its
// log back to the last epoch they share and took the new master's epochs from there.
func waitSameEpochs(t *testing.T, master, old *harness.GroupBroker) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var want, got []string
	var err error
	for {
		if want, err = epochsOf(t, master); err == nil {
			if got, err = epochsOf(t, old); err == nil && slices.Equal(want, got) && len(want) >= 2 {
				t.Logf("the rejoined %s broker holds the new master's epochs %v", old.Kind, got)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("rejoined broker %s epochs %v, master %s epochs %v (err %v)", old.BrokerAddr, got, master.BrokerAddr, want, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

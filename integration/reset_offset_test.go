package integration

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"rmqd/integration/harness"
)

// TestResetOffsetJava4 checks that `mqadmin resetOffsetByTime` moves running 4.9.7 push consumers back to
// the start, both ways a broker can do it:
//
//   - useServerSideResetOffset=true (the 5.x default): the broker keeps the new offsets and answers the
//     next pull of each queue with PULL_OFFSET_MOVED, which the 4.9.7 client follows;
//   - useServerSideResetOffset=false (what 4.9.x brokers always do, Broker2Client.resetOffset): the broker
//     pushes RESET_CONSUMER_CLIENT_OFFSET to every client of the group, which drops its queues, commits
//     the new offsets and pulls from there.
//
// One consumer group per way, both running at once; the setting is switched with updateBrokerConfig right
// before each reset (ending at the default, true), which also checks that both brokers read it live.
func TestResetOffsetJava4(t *testing.T) {
	harness.RequireJars(t, "apache", "mqadmin", "client4")
	kinds := targetsFromEnv(t)
	// As in TestMqadmin: the JVM clients start once every broker is up, not next to a starting JVM broker.
	var started sync.WaitGroup
	started.Add(len(kinds))
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			ready := func() { once.Do(started.Done) }
			defer ready()
			tg := harness.Start(t, kind, harness.Options{})
			ready()
			started.Wait()
			runResetOffsetJava4(t, tg)
		})
	}
}

func runResetOffsetJava4(t *testing.T, tg *harness.Target) {
	const (
		topic = "IT_rst"
		msgs  = 6
	)
	groups := map[string]string{"true": "IT_rst_server", "false": "IT_rst_push"} // useServerSideResetOffset → group
	addr := tg.BrokerAddr
	harness.Mqadmin(t, tg, "updateTopic", "-b", addr, "-t", topic, "-r", "2", "-w", "2")
	for _, g := range groups {
		harness.Mqadmin(t, tg, "updateSubGroup", "-b", addr, "-g", g)
	}
	before := time.Now().Add(-time.Second).UnixMilli()
	sent := harness.RunJava(t, tg, "4", "produce", "--topic", topic, "--count", fmt.Sprint(msgs))
	if len(sent.Sent) != msgs {
		t.Fatalf("produced %d of %d messages", len(sent.Sent), msgs)
	}

	// Each consumer takes every message once, then keeps listening (--linger) until the reset brought every
	// message again (--until-each 2), or long enough for it to: 10 s of client-side pause plus up to 20 s to
	// the next rebalance, plus up to 15 s of a held pull for the server-side way. The client rebalances
	// every 2 s here instead of 20: when it does is the client's business, not the broker's answer's.
	results := map[string]<-chan javaOutcome{}
	for mode, g := range groups {
		results[mode] = goJava(t, tg, "4", "consume", "-Drocketmq.client.rebalance.waitInterval=2000", "--topic", topic,
			"--group", g, "--from", "first", "--count", fmt.Sprint(msgs), "--timeout", "30000", "--linger", "75000",
			"--until-each", "2", "--deadline", "112000")
	}

	diff0 := regexp.MustCompile(`Diff Total:\s*0\b`)
	for _, g := range groups {
		waitFor(t, 60*time.Second, "consumerProgress of "+g+" Diff Total 0", func() bool {
			out, err := harness.TryMqadmin(t, tg, "consumerProgress", "-g", g)
			return err == nil && diff0.MatchString(out) && strings.Contains(out, topic)
		})
	}
	// The pushed way first: Java reads useServerSideResetOffset again when a pull takes a server-side reset
	// (and drops the reset if it is off by then), so it stays true from the server-side reset on.
	for _, mode := range []string{"false", "true"} {
		out := harness.Mqadmin(t, tg, "updateBrokerConfig", "-b", addr, "-k", "useServerSideResetOffset", "-v", mode)
		if !strings.Contains(out, "update broker config success") {
			t.Fatalf("updateBrokerConfig useServerSideResetOffset=%s:\n%s", mode, out)
		}
		out = harness.Mqadmin(t, tg, "resetOffsetByTime", "-g", groups[mode], "-t", topic, "-s", fmt.Sprint(before))
		if !strings.Contains(out, "start reset consumer offset by specified") {
			t.Fatalf("resetOffsetByTime (useServerSideResetOffset=%s):\n%s", mode, out)
		}
	}

	for _, mode := range []string{"true", "false"} {
		var r javaOutcome
		select {
		case r = <-results[mode]:
		case <-time.After(harness.JavaTimeout + 10*time.Second):
			t.Fatalf("consumer of %s still running", groups[mode])
		}
		if r.err != nil {
			t.Fatalf("consumer of %s: %v", groups[mode], r.err)
		}
		if !r.res.OK {
			t.Errorf("consumer of %s failed: %s (stderr %s)", groups[mode], r.res.Error, r.res.LogPath)
			continue
		}
		deliveries := map[string]int{}
		for _, m := range r.res.Received {
			deliveries[m.MsgID]++
		}
		for _, s := range sent.Sent {
			if deliveries[s.MsgID] < 2 {
				t.Errorf("useServerSideResetOffset=%s: message %s delivered %d time(s) to %s, want it again after the reset (stderr %s)",
					mode, s.MsgID, deliveries[s.MsgID], groups[mode], r.res.LogPath)
			}
		}
	}
}

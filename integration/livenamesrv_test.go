package integration

import (
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"rmqd/integration/harness"
	"rmqd/remoting"
)

// TestLiveNamesrvAddr moves a running `rmqd broker` from name server A to name server B with
// `mqadmin updateBrokerConfig -k namesrvAddr`: B serves the broker's routes at once (rmqd registers with the
// new list right after the update; Java within updateNameServerAddrPeriod), and a Go client routed through
// B sends to and consumes from it. A value that is not a host:port list is refused and changes nothing.
// rmqd only: Apache takes the new list up to two minutes later.
func TestLiveNamesrvAddr(t *testing.T) {
	harness.RequireJars(t, "mqadmin")
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	nsA := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{})
	nsB := harness.StartNamesrv(t, harness.KindRmqd, harness.Options{})
	tg := harness.StartBroker(t, harness.KindRmqd, nsA.Addr, harness.Options{})
	viaB := tg.Via(nsB.Addr)
	cl := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = cl.Close() })
	if r, err := route(t.Context(), cl, nsB.Addr, "TBW102"); err == nil && len(r.BrokerDatas) > 0 {
		t.Fatalf("name server B routes the broker before the update: %+v", r.BrokerDatas)
	}

	out := harness.Mqadmin(t, tg, "updateBrokerConfig", "-b", tg.BrokerAddr, "-k", "namesrvAddr", "-v", nsB.Addr)
	if !strings.Contains(out, "update broker config success, "+tg.BrokerAddr) {
		t.Fatalf("updateBrokerConfig:\n%s", out)
	}
	viaB.WaitRoute(t, "TBW102", 10*time.Second) // the registration period is 30 s: this is the update's own

	const topic = "IT_live_namesrv"
	harness.CreateTopic(t, viaB, topic, 2, "") // and waits for B to route it
	sent := harness.RunGoProduce(t, viaB, harness.GoProduce{Topic: topic, Count: 4, KeyPrefix: "ns-move"})
	onlyOK(t, sent)
	got := harness.RunGoConsume(t, viaB, harness.GoConsume{Topic: topic, Group: uniq("IT_live_namesrv_cg"), Count: len(sent)})
	sameMessages(t, sent, got)

	bad, err := harness.TryMqadmin(t, tg, "updateBrokerConfig", "-b", tg.BrokerAddr, "-k", "namesrvAddr", "-v", "no-port")
	if err == nil && strings.Contains(bad, "update broker config success") {
		t.Fatalf("namesrvAddr=no-port taken:\n%s", bad)
	}
	out = harness.Mqadmin(t, tg, "getBrokerConfig", "-b", tg.BrokerAddr)
	if !regexp.MustCompile(`namesrvAddr\s*=\s*` + regexp.QuoteMeta(nsB.Addr) + `\s*\n`).MatchString(out) {
		t.Fatalf("getBrokerConfig after the updates lacks namesrvAddr = %s:\n%s", nsB.Addr, out)
	}
}

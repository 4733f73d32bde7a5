package integration

import (
	"os"
	"slices"
	"strings"
	"testing"

	"rmqd/integration/harness"
)

// targetsFromEnv reads RMQD_TARGET: apache, rmqd or all (default).
func targetsFromEnv(t *testing.T) []string {
	switch v := strings.TrimSpace(os.Getenv("RMQD_TARGET")); v {
	case "", "all":
		return []string{harness.KindApache, harness.KindRmqd}
	case harness.KindApache, harness.KindRmqd:
		return []string{v}
	default:
		t.Fatalf("RMQD_TARGET=%q: want apache, rmqd or all", v)
		return nil
	}
}

// TestMatrix runs every scenario against every selected target. Each target is started once and shared by
// its scenarios. Select with RMQD_TARGET and -run, e.g.
//
//	RMQD_TARGET=apache go test -count=1 -run 'TestMatrix/apache/java5-push-clustering' ./integration/
func TestMatrix(t *testing.T) {
	harness.RequireJars(t, "apache", "client5", "client4", "mqadmin")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			var tg *harness.Target
			startErr := ""
			start := func(tb harness.TB) { tg = harness.Start(tb, kind, harness.Options{}) }
			if reason, ok := expectedFailures[caseKey{kind, "start"}]; ok {
				r := harness.Soft(t, start)
				report(t, kind, "start", reason, r)
				if r.Failed || r.Skipped {
					startErr, _, _ = strings.Cut(r.Summary(), "\n")
				}
			} else {
				start(t)
			}
			for _, sc := range scenarios {
				t.Run(sc.Name, func(t *testing.T) {
					runCase(t, harness.Reported(t), kind, sc, tg, startErr)
				})
			}
		})
	}
}

func runCase(t *testing.T, tb harness.TB, kind string, sc scenario, tg *harness.Target, startErr string) {
	harness.RequireJars(t, sc.Needs...)
	reason, expected := expectedFailures[caseKey{kind, sc.Name}]
	if tg == nil {
		if expected {
			t.Logf("EXPECTED FAILURE %s/%s: %s (target did not start: %s)", kind, sc.Name, reason, startErr)
			return
		}
		t.Fatalf("%s target did not start: %s", kind, startErr)
	}
	if !expected {
		sc.Run(tb, tg)
		return
	}
	report(t, kind, sc.Name, reason, harness.Soft(t, func(tb harness.TB) { sc.Run(tb, tg) }))
}

// report logs the outcome of an expected failure; an unexpected pass is loud, and fatal in strict mode.
func report(t *testing.T, kind, name, reason string, r harness.SoftResult) {
	switch {
	case r.Skipped:
		t.Skipf("%s/%s skipped: %s", kind, name, r.Summary())
	case r.Failed:
		t.Logf("EXPECTED FAILURE %s/%s: %s\n    what failed: %s", kind, name, reason, r.Summary())
	default:
		t.Errorf("UNEXPECTED PASS %s/%s: it is listed in integration/expected_test.go (%q) but passed; remove that entry so a regression fails the build",
			kind, name, reason)
	}
}

// TestRmqdSplit runs rmqd as two processes (`rmqd namesrv` and `rmqd broker -n`), the deployment Apache
// always uses, and checks that mqadmin and a Java client see one working cluster. Runs when RMQD_TARGET
// selects rmqd; its expected-failure key is ("rmqd-split", "cluster").
func TestRmqdSplit(t *testing.T) {
	if !slices.Contains(targetsFromEnv(t), harness.KindRmqd) {
		t.Logf("RMQD_TARGET=%s: rmqd not selected, nothing to do", os.Getenv("RMQD_TARGET"))
		return
	}
	harness.RequireJars(t, "client5", "mqadmin")
	body := func(tb harness.TB) {
		tg := harness.StartRmqd(tb, harness.Options{Split: true, BrokerName: "broker-split"})
		out := harness.Mqadmin(tb, tg, "clusterList")
		if !strings.Contains(out, "broker-split") || !strings.Contains(out, tg.BrokerAddr) {
			tb.Fatalf("clusterList does not show the split broker:\n%s", out)
		}
		p := harness.RunJava(tb, tg, "5", "produce", "--topic", "IT_split", "--count", "5", "--tags", "S", "--keys", "k")
		onlyOK(tb, p.Sent)
		c := harness.RunJava(tb, tg, "5", "consume", "--topic", "IT_split", "--group", "IT_split_cg", "--count", "5", "--timeout", "45000")
		expectDelivered(tb, p.Sent, c.Received, nil)
	}
	if reason, ok := expectedFailures[caseKey{"rmqd-split", "cluster"}]; ok {
		report(t, "rmqd-split", "cluster", reason, harness.Soft(t, body))
		return
	}
	body(t)
}

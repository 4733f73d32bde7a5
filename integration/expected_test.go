package integration

// expectedFailures lists every (target, scenario) pair that is known to fail, with the reason. Such a pair
// still runs; its failure is logged as EXPECTED FAILURE and does not fail the test. If it passes, the test
// logs UNEXPECTED PASS loudly (and fails with RMQD_STRICT_XFAIL=1): delete the entry then.
// The pseudo-scenario "start" is the target's start-up itself.
//
// Never list an "apache" pair: the Apache broker is the reference, a scenario failing against it is a bug in
// the scenario or the harness.
var expectedFailures = map[caseKey]string{
	// Every other rmqd pair passed in three full runs on 2026-11-30 (committed tree and working tree) and was
	// removed; this one failed once: the Go client's batch members (no UNIQ_KEY) came back with msgIds that
	// were not the offsetMsgIds of the send result (Apache: equal). Remove once it is understood.
	{"rmqd", "go-produce-consume"}: "intermittent: Go batch members' msgId != send result offsetMsgId (seen once)",
}

type caseKey struct {
	Target   string
	Scenario string
}

package integration

import (
	"testing"
)

// expectedFailures lists every (target, scenario) pair that is known to fail, with the reason. Such a pair
// still runs; its failure is logged as EXPECTED FAILURE and does not fail the test. If it passes, the test
// fails with UNEXPECTED PASS: delete the entry then. An entry whose scenario no longer exists fails
// TestExpectedFailuresNameScenarios. An intermittent failure is no expected failure: it is a bug to find.
// The pseudo-scenario "start" is the target's start-up itself.
//
// Never list an "apache" pair: the Apache broker is the reference, a scenario failing against it is a bug in
// the scenario or the harness.
var expectedFailures = map[caseKey]string{}

// pseudoScenarios are the expected-failure names that are not entries of scenarios: a target's start-up and
// the tests that consult expectedFailures under a name of their own.
var pseudoScenarios = map[caseKey]bool{
	{"rmqd", "start"}: true, {"rmqd", "mqadmin-session"}: true, {"rmqd-split", "cluster"}: true, {"rmqd", "proxy-start"}: true,
}

// TestExpectedFailuresNameScenarios keeps the list honest: an entry must name a scenario that runs, so
// removing a scenario cannot leave a stale excuse behind, and no entry may excuse the reference broker.
func TestExpectedFailuresNameScenarios(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range scenarios {
		names[sc.Name] = true
	}
	for _, sc := range proxyScenarios {
		names[sc.Name] = true
	}
	for k, reason := range expectedFailures {
		switch {
		case k.Target == "apache":
			t.Errorf("expected failure %v (%s): the Apache broker is the reference and is never excused", k, reason)
		case pseudoScenarios[k]:
		case k.Target != "rmqd" || !names[k.Scenario]:
			t.Errorf("expected failure %v (%s) names no scenario that runs: delete the entry", k, reason)
		}
	}
}

type caseKey struct {
	Target   string
	Scenario string
}

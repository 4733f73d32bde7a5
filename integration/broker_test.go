package integration

import (
	"testing"

	"rmqd/integration/harness"
)

// TestBroker is the "broker messaging core" check: sends in every mode, clustering and broadcasting
// consumption, filters, order, offsets across consumer restarts, durability across a broker crash, body
// limits and long polling, through the Go client v2.1.2, the Java clients 4.9.7 and 5.3.3 and a raw
// remoting client. One target per kind (flushDiskType=SYNC_FLUSH, so an acknowledged send is on disk) is
// shared by all cases; the broker-restart case kills it and runs last. Select with RMQD_TARGET and -run:
//
//	RMQD_TARGET=rmqd go test -count=1 -v -run 'TestBroker/rmqd/raw-long-polling' ./integration/
func TestBroker(t *testing.T) {
	harness.RequireJars(t, "apache", "client5", "client4")
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			// The targets share nothing (own ports, store, names), and Apache's slow start-up and restart
			// overlap rmqd's run: both kinds fit the time budget together.
			t.Parallel()
			tg := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{"flushDiskType": "SYNC_FLUSH"}})
			for _, c := range brokerCases() {
				t.Run(c.Name, func(t *testing.T) {
					tb := harness.Reported(t)
					harness.RequireJars(t, c.Needs...)
					c.Run(tb, tg)
				})
			}
		})
	}
}

// brokerCases lists every case in run order; the crash of the broker comes last.
func brokerCases() []scenario {
	var all []scenario
	all = append(all, rawCases...)
	all = append(all, goCases...)
	all = append(all, javaCases...)
	all = append(all, batchCQCases...)
	return append(all, restartCases...)
}

package integration

import (
	"strconv"
	"strings"
	"time"

	"rmqd/integration/harness"
)

// mqadmin statsAll reads VIEW_BROKER_STATS_DATA (TOPIC_PUT_NUMS): its minute TPS and, through
// compute24HourSum, the first non-zero of the day, hour and minute sums. Both brokers seed each window with
// a zero snapshot when the topic's counter is made and take the first real one then, so the 24-hour figure
// is what was counted by the first snapshot: between 1 and the messages sent.
func init() {
	scenarios = append(scenarios, scenario{
		Name:  "mqadmin-statsAll",
		Needs: []string{"mqadmin"},
		Run: func(tb harness.TB, tg *harness.Target) {
			const topic, sent = "IT_statsall", 5
			out := harness.Mqadmin(tb, tg, "updateTopic", "-b", tg.BrokerAddr, "-t", topic, "-r", "2", "-w", "2")
			if !strings.Contains(out, "success") {
				tb.Fatalf("updateTopic:\n%s", out)
			}
			harness.RunGoProduce(tb, tg, harness.GoProduce{Topic: topic, Count: sent})
			waitFor(tb, 60*time.Second, "statsAll to show the topic's puts", func() bool {
				out = harness.Mqadmin(tb, tg, "statsAll", "-t", topic)
				for _, r := range tableRows(out, topic) {
					// topic, accumulate 0, inTPS, in-24h, NO_CONSUMER (the empty columns vanish)
					if len(r) != 5 || r[4] != "NO_CONSUMER" {
						tb.Fatalf("statsAll row %q:\n%s", r, out)
					}
					tps, err1 := strconv.ParseFloat(r[2], 64)
					in, err2 := strconv.Atoi(r[3])
					if err1 != nil || err2 != nil {
						tb.Fatalf("statsAll row %q:\n%s", r, out)
					}
					if tps > 0 && in >= 1 && in <= sent {
						return true
					}
				}
				return false
			})
		},
	})
}

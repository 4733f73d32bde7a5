package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// deliveredBodies counts the messages of topic queue 0 by body.
func deliveredBodies(t *testing.T, b *testBroker, topic string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range pullAll(t, b, topic, 0) {
		out[string(m.Body)]++
	}
	return out
}

// TestTimerSurvivesRestart: timer messages accepted before a clean stop or a
// kill are each delivered once after it: one delivered before (not again),
// one due while the broker was down (promptly), one recalled (never), one two
// days out (kept pending across two restarts, then delivered once).
func TestTimerSurvivesRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			r := newRestartable(t, func(c *BrokerConfig) {
				c.RecallMessageEnable = true
				c.FlushConsumerOffsetInterval = 100
			})
			ctx := context.Background()
			c := newTestConn(1)
			send := func(body, props string) *codec.RemotingCommand {
				t.Helper()
				resp, err := r.b.handleSendMessage(ctx, c, sendReq("TimerR", 0, []byte(body), props+"UNIQ_KEY\x01"+body+"\x02"))
				require.NoError(t, err)
				require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
				return resp
			}
			// The far one first: it is the oldest pending record throughout.
			send("far", "TIMER_DELAY_SEC\x01172800\x02")
			send("early", "TIMER_DELAY_MS\x011000\x02")
			sent := time.Now()
			send("down", "TIMER_DELAY_MS\x013000\x02")
			rec := send("recalled", "TIMER_DELAY_MS\x013000\x02")
			hdr := rec.CustomHeader.(*codec.SendMessageResponseHeader)
			resp, err := r.b.handleRecallMessage(ctx, c, recallReq("TimerR", hdr.RecallHandle))
			require.NoError(t, err)
			require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

			require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue("TimerR", 0) == 1 }, 5*time.Second, 20*time.Millisecond)
			time.Sleep(1500 * time.Millisecond) // the progress flushes (100 ms, and the timer's own) have run
			if kill {
				r.kill()
			} else {
				r.stop()
			}
			time.Sleep(time.Until(sent.Add(3500 * time.Millisecond))) // "down" and "recalled" are due while down
			r.open()
			b := r.tb()
			require.Eventually(t, func() bool { return deliveredBodies(t, b, "TimerR")["down"] == 1 }, 5*time.Second, 20*time.Millisecond)
			time.Sleep(1200 * time.Millisecond) // a wheel step or more past "down"
			require.Equal(t, map[string]int{"early": 1, "down": 1}, deliveredBodies(t, b, "TimerR"))
			require.Equal(t, 1, b.timer.PendingCount(), "the far one waits")

			// A clean restart keeps the far one and delivers nothing again.
			r.stop()
			r.open()
			b = r.tb()
			require.Eventually(t, func() bool { return b.timer.PendingCount() == 1 }, 5*time.Second, 20*time.Millisecond)
			time.Sleep(1200 * time.Millisecond)
			require.Equal(t, map[string]int{"early": 1, "down": 1}, deliveredBodies(t, b, "TimerR"))

			// Two days on, it comes, once.
			b.timer.StepAt(ctx, time.Now().Add(48*time.Hour+3*time.Second).UnixMilli())
			require.Eventually(t, func() bool { return deliveredBodies(t, b, "TimerR")["far"] == 1 }, 5*time.Second, 20*time.Millisecond)
			require.Equal(t, map[string]int{"early": 1, "down": 1, "far": 1}, deliveredBodies(t, b, "TimerR"))
			require.Zero(t, b.timer.PendingCount())
		})
	}
}

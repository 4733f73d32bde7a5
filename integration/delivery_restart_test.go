package integration

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"rmqd/integration/harness"
)

// checkedCommit leaves every local transaction unknown and commits it when the broker checks.
type checkedCommit struct{ checks atomic.Int32 }

func (c *checkedCommit) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.UnknowState
}

func (c *checkedCommit) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	c.checks.Add(1)
	return primitive.CommitMessageState
}

// TestDeliveryRestart stops rmqd (SIGTERM, then in a second round SIGKILL) while delayed (level 2, 5 s),
// timer (5 s) and half (unknown, checked after 4 s) messages are pending, starts it again on the same store
// and ports, and expects all of them delivered, none early. rmqd only: the harness cannot restart Apache.
func TestDeliveryRestart(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	tg := harness.StartRmqd(t, harness.Options{BrokerConf: map[string]string{
		"transactionTimeOut": "4000", "transactionCheckInterval": "1000", "timerWheelEnable": "true",
	}})
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		// One test, not subtests: the restarted process belongs to the test that owns the target.
		func() {
			t.Logf("round %d: restart with %v", i, sig)
			delayTopic, timerTopic, txTopic := fmt.Sprintf("IT_rs_delay_%d", i), fmt.Sprintf("IT_rs_timer_%d", i), fmt.Sprintf("IT_rs_tx_%d", i)
			delayed := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: delayTopic, Count: 3, Props: map[string]string{"DELAY": "2"}})
			timers := harness.RunGoProduce(t, tg, harness.GoProduce{Topic: timerTopic, Count: 3, Props: map[string]string{"TIMER_DELAY_SEC": "5"}})
			onlyOK(t, delayed)
			onlyOK(t, timers)

			listener := &checkedCommit{}
			tp, err := producer.NewTransactionProducer(listener,
				producer.WithNameServer([]string{tg.NamesrvAddr}),
				producer.WithGroupName(fmt.Sprintf("IT_rs_tx_pg_%d", i)),
				producer.WithInstanceName(fmt.Sprintf("IT_rs_tx_%d_%d", i, time.Now().UnixNano())),
				producer.WithRetry(2))
			if err != nil {
				t.Fatalf("tx producer: %v", err)
			}
			if err := tp.Start(); err != nil {
				t.Fatalf("tx producer start: %v", err)
			}
			defer func() { _ = tp.Shutdown() }()
			var halves []harness.Msg
			for k := range 2 {
				body := harness.MakeBody("rs-tx", k, 64)
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				r, err := tp.SendMessageInTransaction(ctx, primitive.NewMessage(txTopic, body))
				cancel()
				if err != nil || r.Status != primitive.SendOK {
					t.Fatalf("half message %d: %v %+v", k, err, r)
				}
				halves = append(halves, harness.Msg{Index: k, Topic: txTopic, MsgID: r.MsgID, BodySha256: harness.Sha256Hex(body)})
			}
			if n := listener.checks.Load(); n != 0 {
				t.Logf("%d checks before the restart (transactionTimeOut 4 s)", n)
			}

			tg.RestartRmqd(t, sig)

			for _, c := range []struct {
				topic string
				sent  []harness.Msg
				min   time.Duration
			}{{delayTopic, delayed, 5 * time.Second}, {timerTopic, timers, 5 * time.Second}, {txTopic, halves, 0}} {
				waitRoute(t, tg, c.topic)
				got := harness.RunGoConsume(t, tg, harness.GoConsume{Topic: c.topic, Group: c.topic + "_cg", Count: len(c.sent), Timeout: 90 * time.Second})
				sameMessages(t, c.sent, got)
				for _, m := range got {
					if d := lateness(m); d < c.min {
						t.Errorf("%s: message %s stored %v after birth, want at least %v", c.topic, m.MsgID, d, c.min)
					}
				}
			}
			if listener.checks.Load() == 0 {
				t.Errorf("half messages delivered without a check")
			}
		}()
	}
}

func containsKind(kinds []string, k string) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

package processor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// Java's -Drocketmq.broker.rebalance.lockMaxLiveTime is taken as a broker.conf
// key (under that name or rebalanceLockMaxLiveTime): a queue lock its owner
// stopped renewing passes to another client after that long, not after 60 s.
func TestRebalanceLockMaxLiveTimeKey(t *testing.T) {
	for _, key := range []string{"rocketmq.broker.rebalance.lockMaxLiveTime", "rebalanceLockMaxLiveTime"} {
		t.Run(key, func(t *testing.T) {
			b := newTestBroker(t, func(c *BrokerConfig) {
				unknown, err := c.ApplyProperties(map[string]string{key: "150"})
				require.NoError(t, err)
				require.Empty(t, unknown)
			})
			require.EqualValues(t, 150, b.conf().RebalanceLockMaxLiveTime)
			require.Equal(t, "150", b.conf().Properties()["rebalanceLockMaxLiveTime"])
			lock := func(client string) string {
				body, err := json.Marshal(codec.LockBatchRequestBody{ClientID: client, ConsumerGroup: "LG",
					MQSet: []codec.MessageQueue{{BrokerName: "broker-a", QueueID: 0, Topic: "LT"}}})
				require.NoError(t, err)
				req := codec.NewRequest(codec.ReqLockBatchMq)
				req.Body = body
				resp, err := b.handleLockBatchMQ(context.Background(), newTestConn(1), req)
				require.NoError(t, err)
				return string(resp.Body)
			}
			require.Contains(t, lock("a"), `"queueId":0`)
			require.JSONEq(t, `{"lockOKMQSet":[]}`, lock("b"), "held by a")
			require.Eventually(t, func() bool { return lock("b") != `{"lockOKMQSet":[]}` },
				5*time.Second, 20*time.Millisecond, "a's lock never lapsed")
		})
	}
	require.EqualValues(t, 60000, DefaultBrokerConfig().RebalanceLockMaxLiveTime)
}

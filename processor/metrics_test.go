package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMetricsSnapshot sends through the real handlers and reads the snapshot
// an exporter scrapes: per-topic counts and sizes, the registered consumer,
// and the group's lag and its age.
func TestMetricsSnapshot(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	for i := 0; i < 4; i++ {
		resp, err := b.handleSendMessage(ctx, c, sendReq("MetT", 0, make([]byte, 2000), ""))
		require.NoError(t, err)
		require.NotNil(t, resp)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("MetT", 0) == 4 }, 5*time.Second, 10*time.Millisecond)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "c1", "MetG", "MetT"))
	require.NoError(t, err)
	b.offsets.Commit("MetG", "MetT", 0, 1)

	s := b.MetricsSnapshot(time.Now())
	var topic *TopicMetrics
	for i := range s.Topics {
		if s.Topics[i].Topic == "MetT" {
			topic = &s.Topics[i]
		}
	}
	require.NotNil(t, topic)
	require.EqualValues(t, 4, topic.Messages)
	require.Greater(t, topic.Bytes, int64(4*2000))
	require.Equal(t, "normal", topic.MessageType)
	// Each ~2.1 KB record falls in the (1 KB, 4 KB] bucket.
	require.EqualValues(t, 4, topic.Sizes.Counts[1])
	require.Equal(t, topic.Bytes, topic.Sizes.Sum)

	var lag *LagMetrics
	for i := range s.Lags {
		if s.Lags[i].Group == "MetG" && s.Lags[i].Topic == "MetT" {
			lag = &s.Lags[i]
		}
	}
	require.NotNil(t, lag, "%+v", s.Lags)
	require.EqualValues(t, 3, lag.Lag)
	require.GreaterOrEqual(t, lag.LagLatencyMs, int64(0))
	require.NotEmpty(t, s.Consumers)
	require.Equal(t, "MetG", s.Consumers[0].Group)
	require.Positive(t, s.TopicNum)
}

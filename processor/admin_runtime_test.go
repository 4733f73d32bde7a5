package processor

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The keys Java's StoreStatsService adds to GET_BROKER_RUNTIME_INFO are there
// from the first second, in Java's formats: the dashboard splits getTotalTps
// into three numbers.
func TestRuntimeInfoStoreStatsKeys(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(7)
	tb := runtimeTable(t, b)
	for _, k := range []string{"getTotalTps", "getFoundTps", "getMissTps", "putLatency99", "putLatency999",
		"putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes", "putMessageSizeTotal",
		"putMessageDistributeTime", "putMessageAverageSize", "dispatchMaxBuffer", "getMessageEntireTimeMax",
		"commitLogDirCapacity", "remainHowManyDataToFlush", "dispatchBehindBytes",
		"consumeQueueDiskRatio"} { // rocketmq-exporter parses it unconditionally
		_, ok := tb[k]
		require.True(t, ok, "missing %s", k)
	}
	total := strings.Split(tb["getTotalTps"], " ")
	require.Len(t, total, 3)
	for _, v := range total {
		_, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err, "getTotalTps %q", tb["getTotalTps"])
	}

	for range 3 {
		_, err := b.handleSendMessage(ctx, c, sendReq("RsT", 0, []byte("hello"), "TAGS\x01a\x02"))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("RsT", 0) == 3 }, 5*time.Second, 10*time.Millisecond)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-1", "RsG", "RsT"))
	require.NoError(t, err)
	_, err = b.handlePullMessage(ctx, c, pullReq("RsG", "RsT", 0, 0, 0, 0))
	require.NoError(t, err)
	require.Equal(t, int64(1), b.admin.storeStats.GetFound())

	tb = runtimeTable(t, b)
	require.Equal(t, "3", tb["putMessageTimesTotal"])
	require.Equal(t, "0", tb["putMessageFailedTimes"])
	size, err := strconv.ParseInt(tb["putMessageSizeTotal"], 10, 64)
	require.NoError(t, err)
	require.Greater(t, size, int64(3*5))
	require.Contains(t, tb["putMessageDistributeTime"], "[<=0ms]:")
	require.True(t, strings.HasPrefix(tb["commitLogDirCapacity"], "Total : "), tb["commitLogDirCapacity"])
	require.Regexp(t, `^[0-9]+\.[0-9]{2}$`, tb["putLatency99"])
}

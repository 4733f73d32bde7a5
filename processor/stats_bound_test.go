package processor

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

func TestDigitsBelow(t *testing.T) {
	want := 0
	for n := 0; n <= 100001; n++ {
		require.Equal(t, want, digitsBelow(n), n)
		want += len(strconv.Itoa(n))
	}
}

// TestOffsetTableSize: the size computed without building the table is the
// built table's, when the bounds leave it to the exact pass, and bounds it
// otherwise.
func TestOffsetTableSize(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	for i := range 30 {
		resp, _ := b.handleSendMessage(ctx, newTestConn(1), sendReq("SizeT", int32(i%3), []byte("x"), ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	tc := NewTopicConfig("SizeT")
	tc.ReadQueueNums, tc.WriteQueueNums = 12, 12
	b.topics.Update(tc)
	spans := []mqSpan{{topic: "SizeT", key: "SizeT", queues: 12}, {topic: "Other", key: "Other", queues: 0}}
	table := map[mqKey]topicStat{}
	for q := int32(0); q < 12; q++ {
		table[mqKey{"SizeT", q}] = b.topicStat("SizeT", q)
	}
	built := len(codec.AppendJSONObjectKeyMap(nil, table, cmpMQ, b.appendMQ, appendTopicStat))

	size, fits := offsetTableSize(b.Broker, spans, built, 3, appendTopicStat, b.topicStat)
	require.True(t, fits)
	require.Equal(t, built, size, "exact")
	size, fits = offsetTableSize(b.Broker, spans, built-1, 3, appendTopicStat, b.topicStat)
	require.False(t, fits)
	require.Greater(t, size, built-1)
	size, fits = offsetTableSize(b.Broker, spans, 1<<20, 3, appendTopicStat, b.topicStat)
	require.True(t, fits)
	require.GreaterOrEqual(t, size, built, "upper bound")
	size, fits = offsetTableSize(b.Broker, spans, 10, 3, appendTopicStat, b.topicStat)
	require.False(t, fits)
	require.LessOrEqual(t, size, built, "lower bound")
	size, fits = offsetTableSize(b.Broker, nil, 10, 3, appendTopicStat, b.topicStat)
	require.True(t, fits)
	require.Equal(t, 2, size, "{}")
}

// TestConsumeStatsOverFrameRefused: GET_CONSUME_STATS over topics whose queues
// would make an answer above the frame limit answers SYSTEM_ERROR, without
// building it (allocation measured, not time); one such topic still answers.
func TestConsumeStatsOverFrameRefused(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	var names []string
	for i := range 8 {
		tc := NewTopicConfig(fmt.Sprintf("WideT%d", i))
		tc.ReadQueueNums, tc.WriteQueueNums = compat.MaxQueueNums, compat.MaxQueueNums
		b.topics.Update(tc)
		names = append(names, tc.TopicName)
	}
	cs := codec.NewRequest(codec.ReqGetConsumeStats)
	cs.Ext.Set("consumerGroup", "WideG")
	cs.Ext.Set("topicList", strings.Join(names, ";"))
	// TotalAlloc counts every goroutine's allocations (the broker's services,
	// the race detector's): the least of a few calls is the call's own.
	least := uint64(math.MaxUint64)
	var resp *codec.RemotingCommand
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp, _ = b.handleGetConsumeStats(ctx, newTestConn(1), cs)
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, fmt.Sprintf("consume stats of %d queues exceed the frame limit", 8*compat.MaxQueueNums))
	require.Less(t, least, uint64(1<<20), "refused before building")

	// One topic of 65,535 queues fits: answered, under the limit.
	cs.Ext.Set("topicList", "WideT0")
	resp, _ = b.handleGetConsumeStats(ctx, newTestConn(1), cs)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Less(t, len(resp.Body), statsBodyMax)
	require.Equal(t, compat.MaxQueueNums, strings.Count(string(resp.Body), `"topic":"WideT0"`))
}

// TestTopicStatsOverFrameRefused: GET_TOPIC_STATS_INFO of 65,535 queues of a
// 127-character topic would pass 16 MiB; short names fit.
func TestTopicStatsOverFrameRefused(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerName = strings.Repeat("b", 100) })
	ctx := context.Background()
	long := strings.Repeat("L", 127)
	for _, name := range []string{long, "ShortT"} {
		tc := NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = compat.MaxQueueNums, compat.MaxQueueNums
		b.topics.Update(tc)
	}
	req := codec.NewRequest(codec.ReqGetTopicStatsInfo)
	req.Ext.Set("topic", long)
	resp, _ := b.handleGetTopicStatsInfo(ctx, newTestConn(1), req)
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	require.Contains(t, resp.Remark, "topic stats of 65535 queues exceed the frame limit")

	req.Ext.Set("topic", "ShortT")
	resp, _ = b.handleGetTopicStatsInfo(ctx, newTestConn(1), req)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Less(t, len(resp.Body), statsBodyMax)
}

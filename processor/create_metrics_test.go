package processor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// Topic and group creates through the admin handlers are timed into the
// snapshot's create histograms, by status and (topics) system flag, as
// AdminBrokerProcessor records them.
func TestCreateExecutionTimesInSnapshot(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(1)
	s := b.MetricsSnapshot(time.Now())
	require.Empty(t, s.TopicCreate, "no series before a create")
	require.Empty(t, s.GroupCreate)

	r, err := b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("CrT", 4))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	r, _ = b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("bad topic!", 4))
	require.EqualValues(t, codec.RespInvalidParameter, r.Code)
	// validateSystemTopicWhenUpdateTopic refuses it: a failure of a system topic.
	r, _ = b.handleUpdateAndCreateTopic(ctx, c, createTopicReq("rmq_sys_CrT", 4))
	require.NotEqualValues(t, codec.RespSuccess, r.Code)
	req := codec.NewRequest(codec.ReqUpdateAndCreateTopicList)
	req.Body = []byte(`{"topicConfigList":[{"topicName":"CrL1","readQueueNums":1,"writeQueueNums":1,"perm":6},` +
		`{"topicName":"CrL2","readQueueNums":1,"writeQueueNums":1,"perm":6}]}`)
	r, _ = b.handleUpdateAndCreateTopicList(ctx, c, req)
	require.EqualValues(t, codec.RespSuccess, r.Code)

	g := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	g.Body = []byte(`{"groupName":"CrG"}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroup(ctx, c, g)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	g = codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	g.Body = []byte(`{"groupName":"CrG2","retryQueueNums":65536}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroup(ctx, c, g)
	require.EqualValues(t, codec.RespInvalidParameter, r.Code, "refused before Java's timer: not recorded")
	g = codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroupList)
	g.Body = []byte(`{"groupConfigList":[{"groupName":"CrG3"}]}`)
	r, _ = b.handleUpdateAndCreateSubscriptionGroupList(ctx, c, g)
	require.EqualValues(t, codec.RespSuccess, r.Code)

	s = b.MetricsSnapshot(time.Now())
	got := map[[2]bool]uint64{}
	for _, m := range s.TopicCreate {
		got[[2]bool{m.Success, m.System}] = m.Hist.Total()
		require.Len(t, m.Hist.Counts, len(CreateTimeBoundsMs)+1)
	}
	require.Equal(t, map[[2]bool]uint64{{true, false}: 2, {false, false}: 1, {false, true}: 1}, got)
	require.Len(t, s.GroupCreate, 1)
	require.True(t, s.GroupCreate[0].Success)
	require.EqualValues(t, 2, s.GroupCreate[0].Hist.Total())
}

func TestMsHistBuckets(t *testing.T) {
	var h msHist
	for _, ms := range []int64{0, 10, 11, 100, 101, 5000, 5001} {
		h.observe(ms)
	}
	d := h.snapshot()
	// Upper bounds are inclusive, as OpenTelemetry's explicit buckets are.
	require.Equal(t, []uint64{2, 2, 1, 0, 1, 1}, d.Counts)
	require.EqualValues(t, 0+10+11+100+101+5000+5001, d.SumMs)
}

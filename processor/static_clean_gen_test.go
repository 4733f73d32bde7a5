package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TopicQueueMappingCleanService.cleanItemListMoreThanSecondGen: logical queue
// 0 moved from broker-a to broker-b, then on to broker-c. broker-a's mapping
// still names broker-b its leader; once the route and broker-c's own mapping
// (same epoch and total) say broker-c leads it, broker-a drops the queue.
// broker-b, which knows broker-c leads, and broker-c keep theirs.
func TestStaticTopicCleanOldGenerations(t *testing.T) {
	ctx := context.Background()
	brs, r := staticBrokers(t, "04", "broker-a", "broker-b", "broker-c")
	a, b, c := brs[0], brs[1], brs[2]
	conn := newTestConn(41201)
	update := func(br *testBroker, epoch int, hosted string) {
		t.Helper()
		resp, err := br.handleUpdateAndCreateStaticTopic(ctx, conn, staticTopicReq("GenT", 2,
			fmt.Sprintf(`{"bname":%q,"epoch":%d,"hostedQueues":{%s},"scope":"__global__","topic":"GenT","totalQueues":2}`,
				br.conf().BrokerName, epoch, hosted)))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	toB := item(0, 0, "broker-a", 0) + "," + item(1, 0, "broker-b", 10)
	toC := item(1, 0, "broker-b", 10) + "," + item(2, 0, "broker-c", 20)
	// broker-a also leads logical queue 1, which stays whatever happens.
	own := fmt.Sprintf(`1:[%s]`, item(0, 1, "broker-a", 0))
	update(a, 2, `0:[`+toB+`],`+own)
	update(b, 3, `0:[`+toC+`]`)
	update(c, 3, `0:[`+toC+`]`)

	at4 := time.Date(2026, 1, 2, 4, 0, 0, 0, time.Local)
	require.Zero(t, a.cleanStaticOldGens(ctx, at4.Add(time.Hour)), "not a deleteWhen hour")
	require.Zero(t, r.forwarded(codec.ReqGetTopicConfig))
	require.Zero(t, a.cleanStaticOldGens(ctx, at4), "broker-a's epoch is not broker-c's")
	require.Equal(t, 1, r.forwarded(codec.ReqGetTopicConfig), "broker-c's mapping asked")

	update(a, 3, `0:[`+toB+`],`+own) // the remapping bumps every broker's epoch
	require.Equal(t, 1, a.cleanStaticOldGens(ctx, at4))
	d := a.mappings.Get("GenT")
	require.NotContains(t, d.HostedQueues, int32(0))
	require.Len(t, d.HostedQueues[1], 1, "its own queue stays")
	require.EqualValues(t, 3, d.Epoch)
	require.Zero(t, a.cleanStaticOldGens(ctx, at4), "nothing left led elsewhere")

	before := r.forwarded(codec.ReqGetTopicConfig)
	require.Zero(t, b.cleanStaticOldGens(ctx, at4), "broker-b names broker-c, the leader")
	require.Len(t, b.mappings.Get("GenT").HostedQueues[0], 2)
	require.Zero(t, c.cleanStaticOldGens(ctx, at4), "broker-c leads")
	require.Equal(t, before+1, r.forwarded(codec.ReqGetTopicConfig), "only broker-b asked")
}

// The route's leader of each logical queue: the mapping of the highest epoch
// that lists it, within the largest totalQueues and the mapping's scope.
func TestStaticQueueLeaders(t *testing.T) {
	info := func(bname string, epoch int64, total int32, ids ...int32) *codec.TopicQueueMappingInfo {
		m := map[int32]int32{}
		for _, id := range ids {
			m[id] = 0
		}
		return &codec.TopicQueueMappingInfo{Topic: "T", Scope: codec.MetadataScopeGlobal, Bname: bname, Epoch: epoch, TotalQueues: total, CurrIDMap: m}
	}
	other := info("broker-x", 9, 4, 3)
	other.Scope = "elsewhere"
	route := &codec.TopicRouteData{TopicQueueMappingByBroker: map[string]*codec.TopicQueueMappingInfo{
		"broker-a": info("broker-a", 1, 3, 0, 1), "broker-b": info("broker-b", 2, 3, 1), "broker-c": info("broker-c", 2, 2, 2, 5),
		"broker-x": other,
	}}
	require.Equal(t, map[int32]string{0: "broker-a", 1: "broker-b", 2: "broker-c"}, staticQueueLeaders(route, ""))
	require.Empty(t, staticQueueLeaders(&codec.TopicRouteData{}, codec.MetadataScopeGlobal))
}

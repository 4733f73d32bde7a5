package processor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// routeInvoker answers GET_ROUTEINFO_BY_TOPIC with a fixed route: two brokers,
// 4 and 2 readable queues, and a third that is write-only.
type routeInvoker struct{}

func (routeInvoker) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if req.Code != codec.ReqGetRouteinfoByTopic {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	r := codec.TopicRouteData{QueueDatas: []codec.QueueData{
		{BrokerName: "broker-b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
		{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
		{BrokerName: "broker-c", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 2},
	}}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = r.AppendJSON(nil)
	return resp, nil
}

func queryAssignmentReq(t *testing.T, topic, group, cid, strategy string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqQueryAssignment)
	body, err := json.Marshal(queryAssignmentBody{Topic: topic, ConsumerGroup: group, ClientID: cid, StrategyName: strategy, MessageModel: "CLUSTERING"})
	require.NoError(t, err)
	req.Body = body
	return req
}

func assigned(t *testing.T, r *codec.RemotingCommand) []queueAssignment {
	t.Helper()
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	var out struct {
		MessageQueueAssignments []queueAssignment `json:"messageQueueAssignments"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out.MessageQueueAssignments
}

func TestQueryAssignmentAndRequestMode(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.NamesrvAddr = "127.0.0.1:1" })
	b.SetNameServerInvoker(routeInvoker{})
	ctx := context.Background()
	c1, c2 := newTestConn(10), newTestConn(11)
	for i, c := range []*testConn{c1, c2} {
		r, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, []string{"cid-1", "cid-2"}[i], "QG", "QT"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code)
	}
	// PULL (the default): AVG splits the 6 readable queues, sorted by broker then id, 3 and 3.
	r, _ := b.handleQueryAssignment(ctx, c1, queryAssignmentReq(t, "QT", "QG", "cid-1", "AVG"))
	got := assigned(t, r)
	require.Len(t, got, 3)
	require.Equal(t, queueAssignment{MessageQueue: assignedQueue{BrokerName: "broker-a", QueueID: 0, Topic: "QT"}, Mode: "PULL"}, got[0])
	require.Equal(t, assignedQueue{BrokerName: "broker-a", QueueID: 2, Topic: "QT"}, got[2].MessageQueue)
	r, _ = b.handleQueryAssignment(ctx, c2, queryAssignmentReq(t, "QT", "QG", "cid-2", "AVG_BY_CIRCLE"))
	got = assigned(t, r)
	require.Equal(t, []assignedQueue{{"broker-a", 1, "QT"}, {"broker-a", 3, "QT"}, {"broker-b", 1, "QT"}},
		[]assignedQueue{got[0].MessageQueue, got[1].MessageQueue, got[2].MessageQueue})
	// An unknown strategy is no answer (the client keeps what it has).
	r, _ = b.handleQueryAssignment(ctx, c2, queryAssignmentReq(t, "QT", "QG", "cid-2", "NOPE"))
	require.Nil(t, assigned(t, r))

	// SET_MESSAGE_REQUEST_MODE: Java's refusals, then POP with every queue shared (queue id -1).
	set := func(body string) *codec.RemotingCommand {
		req := codec.NewRequest(codec.ReqSetMessageRequestMode)
		req.Body = []byte(body)
		r, err := b.handleSetMessageRequestMode(ctx, c1, req)
		require.NoError(t, err)
		return r
	}
	require.EqualValues(t, codec.RespNoPermission, set(`{"topic":"%RETRY%QG","consumerGroup":"QG","mode":"POP"}`).Code)
	require.EqualValues(t, codec.RespTopicNotExist, set(`{"topic":"QT","consumerGroup":"QG","mode":"POP"}`).Code)
	b.topics.Update(NewTopicConfig("QT"))
	r = set(`{"topic":"QT","consumerGroup":"QG","mode":"POP","popShareQueueNum":0}`)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	r, _ = b.handleQueryAssignment(ctx, c1, queryAssignmentReq(t, "QT", "QG", "cid-1", "AVG"))
	got = assigned(t, r)
	require.Len(t, got, 6)
	for _, a := range got {
		require.Equal(t, "POP", a.Mode)
		require.EqualValues(t, -1, a.MessageQueue.QueueID)
	}

	// The file is Java's MessageRequestModeManager JSON, served by GET_ALL_MESSAGE_REQUEST_MODE and reloaded.
	want := `{"messageRequestModeMap":{"QT":{"QG":{"consumerGroup":"QG","mode":"POP","popShareQueueNum":0,"topic":"QT"}}}}`
	cfg := b.Config()
	file, err := os.ReadFile(filepath.Join(cfg.ConfigDir(), "messageRequestMode.json"))
	require.NoError(t, err)
	require.JSONEq(t, want, string(file))
	r, _ = b.handleGetAllMessageRequestMode(ctx, c1, codec.NewRequest(codec.ReqGetAllMessageRequestMode))
	require.JSONEq(t, want, string(r.Body))
	again := newRequestModes(cfg.ConfigDir())
	require.NoError(t, again.load())
	v, ok := again.get("QT", "QG")
	require.True(t, ok)
	require.Equal(t, requestModeBody{ConsumerGroup: "QG", Mode: "POP", Topic: "QT"}, v)
}

func TestAllocateStrategies(t *testing.T) {
	var all []assignedQueue
	for i := range int32(5) {
		all = append(all, assignedQueue{"b", i, "T"})
	}
	cids := []string{"a", "b"}
	// Java's AllocateMessageQueueAveragely: 5 queues, 2 clients = 3 + 2.
	require.Equal(t, all[:3], allocateAveragely("a", all, cids))
	require.Equal(t, all[3:], allocateAveragely("b", all, cids))
	require.Empty(t, allocateAveragely("z", all, cids))
	require.Equal(t, []assignedQueue{all[1], all[3]}, allocateByCircle("b", all, cids))
	// More clients than queues: one each, the rest nothing.
	require.Equal(t, all[4:], allocateAveragely("e", all, []string{"a", "b", "c", "d", "e", "f"}))
	require.Empty(t, allocateAveragely("f", all, []string{"a", "b", "c", "d", "e", "f"}))
}

// hugeRoute answers GET_ROUTEINFO_BY_TOPIC with counts a name server takes
// from anyone (Java's checks none).
type hugeRoute struct{}

func (hugeRoute) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	r := codec.TopicRouteData{QueueDatas: []codec.QueueData{
		{BrokerName: "broker-a", ReadQueueNums: 2147483647, WriteQueueNums: 8, Perm: 6},
		{BrokerName: "broker-b", ReadQueueNums: 65535, WriteQueueNums: 8, Perm: 6},
	}}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = r.AppendJSON(nil)
	return resp, nil
}

// TestSubscribeQueuesBoundsTheRoute: a route's queue counts become one entry
// per queue for QUERY_ASSIGNMENT, at most compat.MaxQueueNums in all.
func TestSubscribeQueuesBoundsTheRoute(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.NamesrvAddr = "127.0.0.1:1" })
	b.SetNameServerInvoker(hugeRoute{})
	qs, err := b.subscribeQueues(context.Background(), "T")
	require.NoError(t, err)
	require.Len(t, qs, compat.MaxQueueNums)
}

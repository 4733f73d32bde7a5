package processor

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// adminReq builds a request of code with the header fields kv (key, value, ...).
func adminReq(code int32, kv ...string) *codec.RemotingCommand {
	r := codec.NewRequest(code)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Ext.Set(kv[i], kv[i+1])
	}
	return r
}

func TestQueryTopicsByConsumer(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	b.offsets.Commit("TG", "T2", 0, 1)
	b.offsets.Commit("TG", "T1", 3, 1)
	b.offsets.Commit("Other", "T3", 0, 1)
	r, err := b.handleQueryTopicsByConsumer(ctx, c, adminReq(codec.ReqQueryTopicsByConsumer, "group", "TG"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, `{"brokerAddr":"`+b.conf().BrokerAddr()+`","topicList":["T1","T2"]}`, string(r.Body))

	r, _ = b.handleQueryTopicsByConsumer(ctx, c, adminReq(codec.ReqQueryTopicsByConsumer, "group", "None"))
	require.Equal(t, `{"brokerAddr":"`+b.conf().BrokerAddr()+`","topicList":[]}`, string(r.Body))
	r, _ = b.handleQueryTopicsByConsumer(ctx, c, adminReq(codec.ReqQueryTopicsByConsumer))
	require.EqualValues(t, codec.RespSystemError, r.Code, "group is @CFNotNull")
}

func TestQueryConsumeTimeSpan(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	sendN(t, b, "SpanT", 3, []byte("m"))
	b.offsets.Commit("SG", "SpanT", 0, 1)
	tc, ok := b.topics.Select("SpanT")
	require.True(t, ok)

	r, err := b.handleQueryConsumeTimeSpan(ctx, c, adminReq(codec.ReqQueryConsumeTimeSpan, "topic", "SpanT", "group", "SG"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	// fastjson's order: the bean's properties sorted, the *Str getters included.
	require.True(t, strings.HasPrefix(string(r.Body), `{"consumeTimeSpanSet":[{"consumeTimeStamp":`), string(r.Body))
	require.Regexp(t, regexp.MustCompile(`"consumeTimeStampStr":"\d{4}-\d\d-\d\d#\d\d:\d\d:\d\d:\d{3}","delayTime":`), string(r.Body))
	require.Contains(t, string(r.Body), `,"messageQueue":{"brokerName":"broker-a","queueId":0,"topic":"SpanT"},"minTimeStamp":`)
	var got struct {
		ConsumeTimeSpanSet []struct {
			MinTimeStamp, MaxTimeStamp, ConsumeTimeStamp, DelayTime int64
			MinTimeStampStr                                         string
			MessageQueue                                            struct{ QueueID int32 }
		}
	}
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Len(t, got.ConsumeTimeSpanSet, int(tc.WriteQueueNums))
	q0 := got.ConsumeTimeSpanSet[0]
	t0, t1, t2 := b.st.MessageStoreTimestamp("SpanT", 0, 0), b.st.MessageStoreTimestamp("SpanT", 0, 1), b.st.MessageStoreTimestamp("SpanT", 0, 2)
	require.Equal(t, t0, q0.MinTimeStamp)
	require.Equal(t, t2, q0.MaxTimeStamp)
	require.Equal(t, t0, q0.ConsumeTimeStamp, "offset 1 consumed: the last consumed is message 0")
	require.GreaterOrEqual(t, q0.DelayTime, time.Now().UnixMilli()-t1-5000)
	require.LessOrEqual(t, q0.DelayTime, time.Now().UnixMilli()-t1)
	require.Equal(t, string(javaSpanTime(nil, t0)), q0.MinTimeStampStr)
	// An empty queue: no times (-1, as Java's store answers), no delay.
	q1 := got.ConsumeTimeSpanSet[1]
	require.EqualValues(t, 1, q1.MessageQueue.QueueID)
	require.EqualValues(t, -1, q1.MinTimeStamp)
	require.EqualValues(t, -1, q1.MaxTimeStamp)
	require.Zero(t, q1.DelayTime)

	// No offset: the wait is measured from the first message, not from 1970.
	r, _ = b.handleQueryConsumeTimeSpan(ctx, c, adminReq(codec.ReqQueryConsumeTimeSpan, "topic", "SpanT", "group", "NoOffsets"))
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.LessOrEqual(t, got.ConsumeTimeSpanSet[0].DelayTime, time.Now().UnixMilli()-t0)
	require.Greater(t, got.ConsumeTimeSpanSet[0].DelayTime, int64(-1000))

	r, _ = b.handleQueryConsumeTimeSpan(ctx, c, adminReq(codec.ReqQueryConsumeTimeSpan, "topic", "Nope", "group", "SG"))
	require.EqualValues(t, codec.RespTopicNotExist, r.Code)
	require.Equal(t, "topic[Nope] not exist", r.Remark)
	r, _ = b.handleQueryConsumeTimeSpan(ctx, c, adminReq(codec.ReqQueryConsumeTimeSpan, "topic", "SpanT"))
	require.EqualValues(t, codec.RespSystemError, r.Code, "group is @CFNotNull")
}

func TestJavaSpanTime(t *testing.T) {
	ms := time.Date(2026, 3, 4, 5, 6, 7, 89*int(time.Millisecond), time.Local).UnixMilli()
	require.Equal(t, "2026-03-04#05:06:07:089", string(javaSpanTime(nil, ms)))
	before := time.UnixMilli(-1)
	require.Equal(t, before.Format("2006-01-02#15:04:05")+":999", string(javaSpanTime(nil, -1)))
}

func TestCloneGroupOffset(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	for _, topic := range []string{"CT1", "CT2"} {
		b.topics.Update(NewTopicConfig(topic))
	}
	b.offsets.Commit("Src", "CT1", 0, 5)
	b.offsets.Commit("Src", "CT1", 1, 7)
	b.offsets.Commit("Src", "CT2", 0, 3)
	b.offsets.Commit("Src", "Gone", 0, 3) // no topic config: skipped
	b.offsets.Commit("Dst", "CT1", 2, 9)  // replaced by Src's table

	r, err := b.handleCloneGroupOffset(ctx, c, adminReq(codec.ReqCloneGroupOffset, "srcGroup", "Src", "destGroup", "Dst", "topic", "CT1", "offline", "false"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, map[int32]int64{0: 5, 1: 7}, b.offsets.QueryAll("Dst", "CT1"))
	require.Empty(t, b.offsets.QueryAll("Dst", "CT2"))

	// No topic: every topic of Src (Java's handler copies nothing here).
	r, _ = b.handleCloneGroupOffset(ctx, c, adminReq(codec.ReqCloneGroupOffset, "srcGroup", "Src", "destGroup", "All", "offline", "true"))
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, map[int32]int64{0: 5, 1: 7}, b.offsets.QueryAll("All", "CT1"))
	require.Equal(t, map[int32]int64{0: 3}, b.offsets.QueryAll("All", "CT2"))
	require.Empty(t, b.offsets.QueryAll("All", "Gone"))

	// Online Src subscribing CT1 only: CT2 is skipped unless offline.
	_, err = b.handleHeartBeat(ctx, c, heartbeatReq(t, "1.1.1.1@1", "Src", "CT1"))
	require.NoError(t, err)
	b.handleCloneGroupOffset(ctx, c, adminReq(codec.ReqCloneGroupOffset, "srcGroup", "Src", "destGroup", "On", "offline", "false"))
	require.Equal(t, []string{"CT1"}, b.offsets.TopicsOfGroup("On"))
	b.handleCloneGroupOffset(ctx, c, adminReq(codec.ReqCloneGroupOffset, "srcGroup", "Src", "destGroup", "Off", "offline", "true"))
	require.Equal(t, []string{"CT1", "CT2"}, b.offsets.TopicsOfGroup("Off"))

	r, _ = b.handleCloneGroupOffset(ctx, c, adminReq(codec.ReqCloneGroupOffset, "srcGroup", "Src"))
	require.EqualValues(t, codec.RespSystemError, r.Code, "destGroup is @CFNotNull")
}

func TestGetBrokerConsumeStats(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	sendN(t, b, "BCS", 4, []byte("m"))
	ord := NewTopicConfig("BCSOrder")
	ord.Order, ord.WriteQueueNums, ord.ReadQueueNums = true, 1, 1
	b.topics.Update(ord)
	tc, _ := b.topics.Select("BCS")
	tc.WriteQueueNums, tc.ReadQueueNums = 2, 2
	b.topics.Update(tc)
	require.NoError(t, b.groups.Update(NewSubscriptionGroupConfig("G1"), NewSubscriptionGroupConfig("G2")))
	b.offsets.Commit("G1", "BCS", 0, 1)
	b.offsets.Commit("G1", "BCSOrder", 0, 0)
	b.offsets.Commit("NoConfig", "BCS", 0, 0) // not a subscription group: not listed

	r, err := b.handleGetBrokerConsumeStats(ctx, c, adminReq(codec.ReqGetBrokerConsumeStats, "isOrder", "false"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	body := string(r.Body)
	require.True(t, strings.HasPrefix(body, `{"brokerAddr":"`+b.conf().BrokerAddr()+`","consumeStatsList":[`), body)
	require.True(t, strings.HasSuffix(body, `],"totalDiff":3,"totalInflightDiff":0}`), body)
	require.Contains(t, body, `{"G1":[{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"BCS"}:{"brokerOffset":4,"consumerOffset":1,"lastTimestamp":`)
	require.Contains(t, body, `{"G2":[]}`)
	require.NotContains(t, body, "NoConfig")
	var got struct {
		ConsumeStatsList []map[string][]struct {
			OffsetTable map[string]json.RawMessage
		}
		TotalDiff int64
	}
	strict, err := codec.StrictJSON(r.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(strict, &got))
	byGroup := map[string]int{}
	for i, m := range got.ConsumeStatsList {
		for g := range m {
			byGroup[g] = i
		}
	}
	require.Len(t, byGroup, len(got.ConsumeStatsList), "one group per entry")
	g1 := got.ConsumeStatsList[byGroup["G1"]]["G1"]
	require.Len(t, g1, 2) // BCS and BCSOrder
	require.Len(t, g1[0].OffsetTable, 2)

	r, _ = b.handleGetBrokerConsumeStats(ctx, c, adminReq(codec.ReqGetBrokerConsumeStats, "isOrder", "true"))
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.NotContains(t, string(r.Body), `"topic":"BCS"}`)
	require.Contains(t, string(r.Body), `"topic":"BCSOrder"}`)
	require.True(t, strings.HasSuffix(string(r.Body), `"totalDiff":0,"totalInflightDiff":0}`))

	r, _ = b.handleGetBrokerConsumeStats(ctx, c, adminReq(codec.ReqGetBrokerConsumeStats))
	require.EqualValues(t, codec.RespSystemError, r.Code, "isOrder is @CFNotNull")
}

// Groups with offsets on a topic of 65,535 queues make a body past the frame
// limit: refused before it is built.
func TestGetBrokerConsumeStatsBounded(t *testing.T) {
	b := newTestBroker(t, nil)
	big := NewTopicConfig("Wide")
	big.WriteQueueNums, big.ReadQueueNums = 65535, 65535
	b.topics.Update(big)
	for _, g := range []string{"W1", "W2", "W3"} {
		require.NoError(t, b.groups.Update(NewSubscriptionGroupConfig(g)))
		b.offsets.Commit(g, "Wide", 0, 0)
	}
	r, err := b.handleGetBrokerConsumeStats(context.Background(), newTestConn(7), adminReq(codec.ReqGetBrokerConsumeStats, "isOrder", "false"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Contains(t, r.Remark, "exceed the frame limit")
	require.Nil(t, r.Body)
}

func TestInvokeBrokerToGetConsumerStatus(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	req := adminReq(codec.ReqInvokeBrokerToGetConsumerStatus, "topic", "ST", "group", "SCG")
	r, err := b.handleInvokeBrokerToGetConsumerStatus(ctx, newTestConn(7), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, "No Any Consumer online in the consumer group: [SCG]", r.Remark)

	var asked []*codec.RemotingCommand
	c1, c2, c3 := newTestConn(1), newTestConn(2), newTestConn(3)
	c1.answer = func(q *codec.RemotingCommand) *codec.RemotingCommand {
		asked = append(asked, q)
		resp := codec.NewResponse(q, codec.RespSuccess, "")
		// As the Java client's GetConsumerStatusBody.encode writes it.
		resp.Body = []byte(`{"consumerTable":{},"messageQueueTable":{{"brokerName":"b2","queueId":1,"topic":"ST"}:8,{"brokerName":"b1","queueId":0,"topic":"ST"}:5}}`)
		return resp
	}
	c2.answer = func(q *codec.RemotingCommand) *codec.RemotingCommand {
		return codec.NewResponse(q, codec.RespRequestCodeNotSupported, "") // a Go client
	}
	c3.answer = func(q *codec.RemotingCommand) *codec.RemotingCommand {
		resp := codec.NewResponse(q, codec.RespSuccess, "")
		resp.Body = []byte(`{"messageQueueTable":{"not a queue":1}}`)
		return resp
	}
	for i, cn := range []*testConn{c1, c2, c3} {
		_, err := b.handleHeartBeat(ctx, cn, heartbeatReq(t, "10.0.0.1@"+strconv.Itoa(i+1), "SCG", "ST"))
		require.NoError(t, err)
	}
	r, err = b.handleInvokeBrokerToGetConsumerStatus(ctx, newTestConn(7), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, `{"consumerTable":{"10.0.0.1@1":{{"brokerName":"b1","queueId":0,"topic":"ST"}:5,{"brokerName":"b2","queueId":1,"topic":"ST"}:8}},"messageQueueTable":{}}`, string(r.Body))
	require.Len(t, asked, 1)
	require.EqualValues(t, codec.ReqGetConsumerStatusFromClient, asked[0].Code)
	topic, _ := asked[0].Ext.Get("topic")
	group, _ := asked[0].Ext.Get("group")
	require.Equal(t, [2]string{"ST", "SCG"}, [2]string{topic, group})

	// clientAddr names one client id: only it is asked.
	req.Ext.Set("clientAddr", "10.0.0.1@2")
	r, _ = b.handleInvokeBrokerToGetConsumerStatus(ctx, newTestConn(7), req)
	require.Equal(t, `{"consumerTable":{},"messageQueueTable":{}}`, string(r.Body))
	require.Len(t, asked, 1)
}

// The new codes' header names pass the name gate before their handlers run.
func TestConsumerAdminCodesAreGated(t *testing.T) {
	b := newTestBroker(t, nil)
	h := b.Handlers()
	for _, req := range []*codec.RemotingCommand{
		adminReq(codec.ReqQueryTopicsByConsumer, "group", "bad/group"),
		adminReq(codec.ReqQueryConsumeTimeSpan, "topic", "bad topic", "group", "G"),
		adminReq(codec.ReqCloneGroupOffset, "srcGroup", "S", "destGroup", "bad\x00group"),
		adminReq(codec.ReqInvokeBrokerToGetConsumerStatus, "topic", "T", "group", "bad/group"),
	} {
		r, err := h[req.Code].ProcessRequest(context.Background(), newTestConn(7), req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespInvalidParameter, r.Code, "code %d: %s", req.Code, r.Remark)
	}
	for _, code := range []int32{codec.ReqGetBrokerConsumeStats, codec.ReqDeleteExpiredCommitlog} {
		r, err := h[code].ProcessRequest(context.Background(), newTestConn(7), adminReq(code, "isOrder", "false"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, "code %d: %s", code, r.Remark)
	}
}

// QUERY_CORRECTION_OFFSET: per queue the least offset of the groups not
// filtered out, Long.MAX_VALUE where compareGroup is behind it; the filtered
// groups keep their offsets (Java's deletes them) and a queue only
// compareGroup has is left out (Java's request fails).
func TestQueryCorrectionOffset(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	b.offsets.Commit("G1", "CT", 0, 5)
	b.offsets.Commit("G1", "CT", 1, 9)
	b.offsets.Commit("G2", "CT", 0, 3)
	b.offsets.Commit("G2", "CT", 1, 12)
	b.offsets.Commit("Slow", "CT", 0, 1)
	b.offsets.Commit("Cmp", "CT", 1, 4)
	b.offsets.Commit("Cmp", "CT", 2, 7)
	b.offsets.Commit("G1", "Other", 0, 0)
	r, err := b.handleQueryCorrectionOffset(ctx, c, adminReq(codec.ReqQueryCorrectionOffset,
		"topic", "CT", "compareGroup", "Cmp", "filterGroups", "Slow,Cmp"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, `{"correctionOffsets":{0:3,1:9223372036854775807}}`, string(r.Body))
	require.EqualValues(t, 1, b.offsets.Query("Slow", "CT", 0), "a filtered group keeps its offsets")

	r, _ = b.handleQueryCorrectionOffset(ctx, c, adminReq(codec.ReqQueryCorrectionOffset, "topic", "CT", "compareGroup", "None"))
	require.Equal(t, `{"correctionOffsets":{0:1,1:4,2:7}}`, string(r.Body))
	r, _ = b.handleQueryCorrectionOffset(ctx, c, adminReq(codec.ReqQueryCorrectionOffset, "topic", "CT"))
	require.EqualValues(t, codec.RespSystemError, r.Code, "compareGroup is @CFNotNull")
}

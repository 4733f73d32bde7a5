package processor

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// attackNames are the names the gate exists for.
var attackNames = []string{"../x", "../../victim", "../checkpoint", "/tmp/x", "x\x00y", strings.Repeat("a", 300),
	"x/../../y", "..", ".", `..\x`}

// Every header name field of every gated code refuses every attack name with
// INVALID_PARAMETER before the handler runs.
func TestNameGateHeaders(t *testing.T) {
	b := newTestBroker(t, nil)
	h := b.Handlers()
	for code, fields := range headerNames {
		require.Contains(t, h, code, "gated code %d is not served", code)
		for _, f := range fields {
			for _, bad := range attackNames {
				req := codec.NewRequest(code)
				// Valid values everywhere else, so only the bad field can refuse.
				for _, o := range fields {
					v := "T"
					if o.kind == kindGroup {
						v = "G"
					}
					req.Ext.Set(o.key, v)
				}
				req.Ext.Set(f.key, bad)
				req.Ext.Set("queueId", "0")
				resp, err := h[code].ProcessRequest(context.Background(), newTestConn(1), req)
				require.NoError(t, err)
				require.NotNil(t, resp, "code %d %s=%q", code, f.key, bad)
				require.Equal(t, codec.RespInvalidParameter, resp.Code, "code %d %s=%q: %s", code, f.key, bad, resp.Remark)
				require.Contains(t, resp.Remark, "The specified ")
			}
		}
	}
}

func TestNameGateBodiesAndSends(t *testing.T) {
	b := newTestBroker(t, nil)
	h := b.Handlers()
	do := func(req *codec.RemotingCommand) *codec.RemotingCommand {
		t.Helper()
		resp, err := h[req.Code].ProcessRequest(context.Background(), newTestConn(1), req)
		require.NoError(t, err)
		require.NotNil(t, resp)
		return resp
	}
	for _, bad := range attackNames {
		q := strings.ReplaceAll(bad, `\`, `\\`)
		q = strings.ReplaceAll(q, "\x00", `\u0000`)
		body := func(code int32, s string) *codec.RemotingCommand {
			r := codec.NewRequest(code)
			r.Body = []byte(s)
			return r
		}
		cases := []*codec.RemotingCommand{
			body(codec.ReqUpdateAndCreateSubscriptiongroup, `{"groupName":"`+q+`"}`),
			body(codec.ReqUpdateAndCreateSubscriptiongroupList, `{"groupConfigList":[{"groupName":"`+q+`"}]}`),
			body(codec.ReqUpdateAndCreateTopicList, `{"topicConfigList":[{"topicName":"`+q+`","perm":6}]}`),
			body(codec.ReqHeartBeat, `{"clientID":"c","consumerDataSet":[{"groupName":"`+q+`","subscriptionDataSet":[]}]}`),
			body(codec.ReqHeartBeat, `{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"`+q+`"}]}]}`),
			body(codec.ReqLockBatchMq, `{"clientId":"c","consumerGroup":"`+q+`","mqSet":[]}`),
			body(codec.ReqUnlockBatchMq, `{"clientId":"c","consumerGroup":"G","mqSet":[{"topic":"`+q+`","brokerName":"b","queueId":0}]}`),
			body(codec.ReqCheckClientConfig, `{"clientId":"c","group":"`+q+`"}`),
		}
		create := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
		for k, v := range map[string]string{"topic": bad, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"} {
			create.Ext.Set(k, v)
		}
		cases = append(cases, create, sendReq(bad, 0, []byte("b"), ""))
		for _, req := range cases {
			resp := do(req)
			require.Equal(t, codec.RespInvalidParameter, resp.Code, "code %d name %q: %s", req.Code, bad, resp.Remark)
		}
	}
	_, ok := b.groups.Get("x/../../../grp_escape")
	require.False(t, ok)
	require.False(t, b.topics.Exists("%RETRY%x/../../../grp_escape"))
}

// System topics cannot be created, updated or deleted by admin codes, and the
// broker-only ones cannot be sent to (Java's codes and remarks).
func TestSystemTopicRules(t *testing.T) {
	b := newTestBroker(t, nil)
	h := b.Handlers()
	for _, topic := range []string{TopicSchedule, TopicTransHalf, TopicAutoCreate, b.conf().BrokerClusterName,
		"rmq_sys_anything"} {
		del := codec.NewRequest(codec.ReqDeleteTopicInBroker)
		del.Ext.Set("topic", topic)
		resp, err := h[del.Code].ProcessRequest(context.Background(), newTestConn(1), del)
		require.NoError(t, err)
		require.Equal(t, codec.RespInvalidParameter, resp.Code, topic)
		require.Equal(t, "The topic["+topic+"] is conflict with system topic.", resp.Remark)
		create := codec.NewRequest(codec.ReqUpdateAndCreateTopic)
		for k, v := range map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"} {
			create.Ext.Set(k, v)
		}
		resp, err = h[create.Code].ProcessRequest(context.Background(), newTestConn(1), create)
		require.NoError(t, err)
		require.Equal(t, codec.RespInvalidParameter, resp.Code, topic)
	}
	require.True(t, b.topics.Exists(TopicSchedule))
	resp, err := h[codec.ReqSendMessage].ProcessRequest(context.Background(), newTestConn(1), sendReq(TopicTransHalf, 0, []byte("b"), ""))
	require.NoError(t, err)
	require.Equal(t, codec.RespNoPermission, resp.Code)
	require.Equal(t, "Sending message to topic["+TopicTransHalf+"] is forbidden.", resp.Remark)

	// Stricter than Java: the broker trusts the records of its revive and timer
	// topics (a forged POP checkpoint, a timer record due in a million years).
	for _, topic := range []string{"rmq_sys_REVIVE_LOG_" + b.conf().BrokerClusterName, "rmq_sys_wheel_timer"} {
		require.True(t, b.topics.Exists(topic), topic)
		batch := codec.NewRequest(codec.ReqSendBatchMessage)
		for _, kv := range [][2]string{{"a", "PG"}, {"b", topic}, {"c", TopicAutoCreate}, {"d", "4"}, {"e", "0"},
			{"f", "0"}, {"g", "1"}, {"h", "0"}, {"i", ""}, {"j", "0"}, {"k", "false"}, {"m", "true"}} {
			batch.Ext.Set(kv[0], kv[1])
		}
		batch.Body = codec.AppendBatchEntry(nil, 0, []byte("b"), "TAGS\x01ck\x02")
		for _, req := range []*codec.RemotingCommand{sendReq(topic, 0, []byte("b"), "TAGS\x01ck\x02"), batch} {
			resp, err := h[req.Code].ProcessRequest(context.Background(), newTestConn(1), req)
			require.NoError(t, err)
			require.Equal(t, codec.RespNoPermission, resp.Code, "%s %d: %s", topic, req.Code, resp.Remark)
			require.Equal(t, int64(0), b.st.MaxOffsetInQueue(topic, 0))
		}
	}
}

// POP's V2 retry topics (%RETRY%group+topic) pass the gate: '+' joins the two.
func TestGateTakesPopRetryTopicsV2(t *testing.T) {
	_, ok := checkTopicName("%RETRY%G+T")
	require.True(t, ok)
	_, ok = checkTopicName("T+x")
	require.False(t, ok, "only a retry topic")
	_, ok = checkTopicName("%RETRY%G+../x")
	require.False(t, ok)
}

// A group of 250 is valid, but its retry topic would not fit a directory name:
// the heartbeat makes no retry topic and a send-back answers Java's "not exist".
func TestLongGroupHasNoRetryTopic(t *testing.T) {
	b := newTestBroker(t, nil)
	h := b.Handlers()
	group := strings.Repeat("g", 250)
	hb := codec.NewRequest(codec.ReqHeartBeat)
	hb.Body = []byte(`{"clientID":"c","consumerDataSet":[{"groupName":"` + group + `","subscriptionDataSet":[]}]}`)
	resp, err := h[hb.Code].ProcessRequest(context.Background(), newTestConn(1), hb)
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.False(t, b.topics.Exists(RetryGroupTopicPrefix+group))

	back := codec.NewRequest(codec.ReqConsumerSendMsgBack)
	for k, v := range map[string]string{"group": group, "offset": "0", "delayLevel": "0"} {
		back.Ext.Set(k, v)
	}
	resp, err = h[back.Code].ProcessRequest(context.Background(), newTestConn(1), back)
	require.NoError(t, err)
	require.Equal(t, codec.RespSystemError, resp.Code)
	require.Equal(t, "topic["+RetryGroupTopicPrefix+group+"] not exist", resp.Remark)
	require.False(t, b.topics.Exists(RetryGroupTopicPrefix+group))
}

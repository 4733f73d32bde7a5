package processor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestFilterSupportRetry: a group with a SQL92 subscription of its retry
// topic gets the retries its expression takes while filterSupportRetry is off
// (Java's default); on, each retry is judged by the group's filter of the
// message's original topic (RETRY_TOPIC), as Java's
// ExpressionForRetryMessageFilter. The key is read at each pull.
func TestFilterSupportRetry(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.EnablePropertyFilter = true })
	b.topics.Update(NewTopicConfig("FRT"))
	retry := RetryGroupTopicPrefix + "FRG"
	hb := codec.HeartbeatData{ClientID: "10.0.0.1@1", ConsumerDataSet: []codec.ConsumerData{{GroupName: "FRG",
		ConsumeType: "CONSUME_PASSIVELY", MessageModel: "CLUSTERING", ConsumeFromWhere: "CONSUME_FROM_FIRST_OFFSET",
		SubscriptionDataSet: []codec.SubscriptionData{
			{Topic: "FRT", SubString: "a > 5", ExpressionType: "SQL92", SubVersion: 1, CodeSet: codec.CodeSet{}, TagsSet: []string{}},
			{Topic: retry, SubString: "a > 0", ExpressionType: "SQL92", SubVersion: 1, CodeSet: codec.CodeSet{}, TagsSet: []string{}},
		}}}}
	body, err := json.Marshal(hb)
	require.NoError(t, err)
	req := codec.NewRequest(codec.ReqHeartBeat)
	req.Body = body
	c := newTestConn(1)
	r, err := b.handleHeartBeat(ctx, c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)

	for _, a := range []string{"3", "7"} {
		r, err := b.handleSendMessage(ctx, newTestConn(2), sendReq(retry, 0, []byte("a="+a),
			"a\x01"+a+"\x02RETRY_TOPIC\x01FRT\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	}
	waitQueued(b, retry, 2)

	pulled := func() []string {
		t.Helper()
		w := newTestConn(3)
		r, err := b.handlePullMessage(ctx, w, pullReq("FRG", retry, 0, 0, 0, 0))
		require.NoError(t, err)
		if r == nil {
			r = waitResponse(t, w, 1)
		}
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
		var out []string
		for _, m := range decodeBody(t, r.Body) {
			out = append(out, string(m.Body))
		}
		return out
	}
	require.Equal(t, []string{"a=3", "a=7"}, pulled(), "off: the retry subscription's own filter")
	_, _, err = b.updateConfig(map[string]string{"filterSupportRetry": "true"})
	require.NoError(t, err)
	require.Equal(t, []string{"a=7"}, pulled(), "on: FRT's filter, a > 5")
	require.False(t, DefaultBrokerConfig().FilterSupportRetry, "Java's default")
}

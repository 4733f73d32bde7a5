package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestAdminHeadersRefuseMissingRequiredField sends each admin code whose
// handler used to read its header by hand without one @CFNotNull field: the
// answer is SYSTEM_ERROR with Java's decode message, where the handlers used
// to read the field as "" (GET_TOPIC_STATS_INFO answered TOPIC_NOT_EXIST,
// QUERY_SUBSCRIPTION_BY_CONSUMER and QUERY_TOPIC_CONSUME_BY_WHO SUCCESS,
// DELETE_SUBSCRIPTIONGROUP deleted the group named "").
func TestAdminHeadersRefuseMissingRequiredField(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	h := b.Handlers()
	cases := []struct {
		code    int32
		missing string
		kv      []string // the other fields, all present and valid
	}{
		{codec.ReqDeleteTopicInBroker, "topic", nil},
		{codec.ReqGetTopicConfig, "topic", nil},
		{codec.ReqGetTopicStatsInfo, "topic", nil},
		{codec.ReqQueryTopicConsumeByWho, "topic", nil},
		{codec.ReqDeleteSubscriptiongroup, "groupName", []string{"cleanOffset", "true"}},
		{codec.ReqGetSubscriptiongroupConfig, "group", nil},
		{codec.ReqGetConsumeStats, "consumerGroup", []string{"topic", "TopicTest"}},
		{codec.ReqGetConsumerConnectionList, "consumerGroup", nil},
		{codec.ReqGetConsumerListByGroup, "consumerGroup", nil},
		{codec.ReqGetProducerConnectionList, "producerGroup", nil},
		{codec.ReqGetConsumerRunningInfo, "consumerGroup", []string{"clientId", "10.0.0.1@1", "jstackEnable", "false"}},
		{codec.ReqGetConsumerRunningInfo, "clientId", []string{"consumerGroup", "CG", "jstackEnable", "false"}},
		{codec.ReqConsumeMessageDirectly, "consumerGroup", []string{"clientId", "10.0.0.1@1", "msgId", "0A00000100002A9F0000000000000000"}},
		{codec.ReqQuerySubscriptionByConsumer, "group", []string{"topic", "TopicTest"}},
		{codec.ReqViewBrokerStatsData, "statsName", []string{"statsKey", "TopicTest"}},
		{codec.ReqViewBrokerStatsData, "statsKey", []string{"statsName", "TOPIC_PUT_NUMS"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d-no-%s", tc.code, tc.missing), func(t *testing.T) {
			p := h[tc.code]
			require.NotNil(t, p, "code %d not served", tc.code)
			r, err := p.ProcessRequest(ctx, c, adminReq(tc.code, tc.kv...))
			require.NoError(t, err)
			require.EqualValues(t, codec.RespSystemError, r.Code, r.Remark)
			require.Equal(t, "the custom field <"+tc.missing+"> is null", r.Remark)
		})
	}
}

// TestAdminHeadersStillServePresentFields checks the converted handlers read
// the same fields as before: a group "" is no longer deleted for a missing
// groupName, the named one is, and cleanOffset still drops its offsets.
func TestAdminHeadersStillServePresentFields(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	h := b.Handlers()
	require.NoError(t, b.groups.Update(SubscriptionGroupConfig{GroupName: "DelG"}))
	b.offsets.Commit("DelG", "T1", 0, 5)
	r, err := h[codec.ReqDeleteSubscriptiongroup].ProcessRequest(ctx, c,
		adminReq(codec.ReqDeleteSubscriptiongroup, "groupName", "DelG", "cleanOffset", "true"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	_, ok := b.groups.Get("DelG")
	require.False(t, ok)
	require.Less(t, b.offsets.Query("DelG", "T1", 0), int64(0), "cleanOffset=true drops the offsets")

	// UNREGISTER_CLIENT without clientID still succeeds: the broker
	// unregisters by connection and Java copes with the missing field too.
	r, err = h[codec.ReqUnregisterClient].ProcessRequest(ctx, c,
		adminReq(codec.ReqUnregisterClient, "producerGroup", "PG", "consumerGroup", "CG"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)

	r, err = h[codec.ReqQuerySubscriptionByConsumer].ProcessRequest(ctx, c,
		adminReq(codec.ReqQuerySubscriptionByConsumer, "group", "CG", "topic", "T1"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.JSONEq(t, `{"group":"CG","topic":"T1"}`, string(r.Body))
}

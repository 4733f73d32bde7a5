package processor

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func updateGroupBody(t *testing.T, b *testBroker, body string) *codec.RemotingCommand {
	t.Helper()
	req := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroup)
	req.Body = []byte(body)
	resp, err := b.handleUpdateAndCreateSubscriptionGroup(context.Background(), newTestConn(5), req)
	require.NoError(t, err)
	return resp
}

func getGroupBody(t *testing.T, b *testBroker, group string) map[string]any {
	t.Helper()
	req := codec.NewRequest(codec.ReqGetSubscriptiongroupConfig)
	req.Ext.Set("group", group)
	resp, err := b.handleGetSubscriptionGroupConfig(context.Background(), newTestConn(5), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	var m map[string]any
	require.NoError(t, json.Unmarshal(resp.Body, &m))
	return m
}

// TestGroupRetryPolicyKept: the group's retry policy is kept whole. Java's
// broker does not read it, but its proxy does (GET_SUBSCRIPTIONGROUP_CONFIG,
// then the backoff of gRPC consumers), so an exponential or customized policy
// set with updateSubGroup must come back as it was given; so must
// subscriptionDataSet, which Java stores and its lag metrics read.
func TestGroupRetryPolicyKept(t *testing.T) {
	b := newTestBroker(t, nil)
	resp := updateGroupBody(t, b, `{"groupName":"RetryG","groupRetryPolicy":{"type":"EXPONENTIAL",`+
		`"exponentialRetryPolicy":{"initial":1000,"max":60000,"multiplier":3}},`+
		`"subscriptionDataSet":[{"topic":"T1","expressionType":"TAG","expression":"a||b","version":7}]}`)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	g := getGroupBody(t, b, "RetryG")
	require.Equal(t, map[string]any{"type": "EXPONENTIAL",
		"exponentialRetryPolicy": map[string]any{"initial": 1000.0, "max": 60000.0, "multiplier": 3.0}}, g["groupRetryPolicy"])
	require.Equal(t, []any{map[string]any{"topic": "T1", "expressionType": "TAG", "expression": "a||b", "version": 7.0}},
		g["subscriptionDataSet"])

	resp = updateGroupBody(t, b, `{"groupName":"CustomG","groupRetryPolicy":{"type":"CUSTOMIZED",`+
		`"customizedRetryPolicy":{"next":[1000,2000,3000]}}}`)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	g = getGroupBody(t, b, "CustomG")
	require.Equal(t, map[string]any{"type": "CUSTOMIZED",
		"customizedRetryPolicy": map[string]any{"next": []any{1000.0, 2000.0, 3000.0}}}, g["groupRetryPolicy"])
	// Left out, as fastjson leaves out a null field.
	require.NotContains(t, g, "subscriptionDataSet")

	// The stored file keeps them too (a restart, or a Java broker reading it).
	data, err := codec.MarshalBody(b.groups.Snapshot())
	require.NoError(t, err)
	require.Contains(t, string(data), `"multiplier":3`)
	require.Contains(t, string(data), `"expression":"a||b"`)
}

// TestGroupAttributesRefused: Java's SubscriptionGroupAttributes.ALL is empty,
// so alterCurrentAttributes refuses any attribute in a group update.
func TestGroupAttributesRefused(t *testing.T) {
	b := newTestBroker(t, nil)
	resp := updateGroupBody(t, b, `{"groupName":"AttrG","attributes":{"+x":"1"}}`)
	require.NotEqualValues(t, codec.RespSuccess, resp.Code)
	require.Contains(t, resp.Remark, "unsupported key: x")
	_, ok := b.groups.Get("AttrG")
	require.False(t, ok)

	list := codec.NewRequest(codec.ReqUpdateAndCreateSubscriptiongroupList)
	list.Body = []byte(`{"groupConfigList":[{"groupName":"AttrL"},{"groupName":"AttrM","attributes":{"+x":"1"}}]}`)
	resp, err := b.handleUpdateAndCreateSubscriptionGroupList(context.Background(), newTestConn(5), list)
	require.NoError(t, err)
	require.NotEqualValues(t, codec.RespSuccess, resp.Code)
	require.Contains(t, resp.Remark, "unsupported key: x")
	_, ok = b.groups.Get("AttrL")
	require.False(t, ok)

	resp = updateGroupBody(t, b, `{"groupName":"AttrG","attributes":{}}`)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
}

// GET_SUBSCRIPTIONGROUP_CONFIG creates an unknown group when auto-creation is
// on, as Java's findSubscriptionGroupConfig does (Apache's 5.5 proxy refuses a
// gRPC consumer whose group it cannot read), and answers Java's remark when off
// or for a name no group may have.
func TestGetSubscriptionGroupConfigCreates(t *testing.T) {
	b := newTestBroker(t, nil)
	m := getGroupBody(t, b, "NewG")
	require.Equal(t, "NewG", m["groupName"])
	_, ok := b.groups.Get("NewG")
	require.True(t, ok, "created and kept")

	get := func(group string) *codec.RemotingCommand {
		req := codec.NewRequest(codec.ReqGetSubscriptiongroupConfig)
		req.Ext.Set("group", group)
		resp, err := b.handleGetSubscriptionGroupConfig(context.Background(), newTestConn(5), req)
		require.NoError(t, err)
		return resp
	}
	resp := get("bad/name")
	require.EqualValues(t, codec.RespSubscriptionGroupNotExist, resp.Code)
	require.Equal(t, "No group in this broker", resp.Remark)

	b = newTestBroker(t, func(c *BrokerConfig) { c.AutoCreateSubscriptionGroup = false })
	require.EqualValues(t, codec.RespSubscriptionGroupNotExist, get("OtherG").Code)
	_, ok = b.groups.Get("OtherG")
	require.False(t, ok)
}

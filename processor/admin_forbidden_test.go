package processor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func forbiddenReq(group, topic, readable string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqUpdateAndGetGroupForbidden)
	req.Ext.Set("group", group)
	req.Ext.Set("topic", topic)
	if readable != "" {
		req.Ext.Set("readable", readable)
	}
	return req
}

// TestGroupForbidden: UPDATE_AND_GET_GROUP_FORBIDDEN bans a group from
// reading a topic; pulls, whether the subscription comes from a heartbeat or
// the request, are then NO_PERMISSION with forbiddenType 5 and Java's remark;
// the ban is in subscriptionGroup.json's forbiddenTable (PermName read bit 4),
// survives a restart, rides GET_ALL_SUBSCRIPTIONGROUP_CONFIG to a slave, and
// readable=true lifts it.
func TestGroupForbidden(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, nil)
	b.topics.Update(NewTopicConfig("FT"))
	c := newTestConn(1)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@1", "FG", "FT"))
	require.NoError(t, err)

	call := func(req *codec.RemotingCommand) *codec.RemotingCommand {
		t.Helper()
		r, err := b.handleUpdateAndGetGroupForbidden(ctx, c, req)
		require.NoError(t, err)
		return r
	}
	r := call(forbiddenReq("FG", "FT", ""))
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.JSONEq(t, `{"group":"FG","readable":true,"topic":"FT"}`, string(r.Body))

	r = call(forbiddenReq("FG", "FT", "false"))
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.JSONEq(t, `{"group":"FG","readable":false,"topic":"FT"}`, string(r.Body))

	requireForbidden := func(b *Broker, req *codec.RemotingCommand) {
		t.Helper()
		r, err := b.handlePullMessage(ctx, c, req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespNoPermission, r.Code, r.Remark)
		require.Equal(t, "the consumer group[FG] is forbidden for topic[FT]", r.Remark)
		require.Equal(t, "5", ext(t, r, "forbiddenType"))
	}
	requireForbidden(b.Broker, pullReq("FG", "FT", 0, 0, 0, 0))
	requireForbidden(b.Broker, pullReq("FG", "FT", 0, 0, codec.PullFlagSubscription, 0))
	// Another topic of the group, and another group, still read.
	r, err = b.handlePullMessage(ctx, c, pullReq("OtherG", "FT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)

	cfg := b.Config()
	data, err := os.ReadFile(filepath.Join(cfg.ConfigDir(), "subscriptionGroup.json"))
	require.NoError(t, err)
	var file struct {
		ForbiddenTable map[string]map[string]int32 `json:"forbiddenTable"`
	}
	require.NoError(t, json.Unmarshal(data, &file))
	require.Equal(t, map[string]map[string]int32{"FG": {"FT": 4}}, file.ForbiddenTable)

	requireForbidden(reopenBroker(t, b), pullReq("FG", "FT", 0, 0, codec.PullFlagSubscription, 0))

	all, err := b.handleGetAllSubscriptionGroupConfig(ctx, c, codec.NewRequest(codec.ReqGetAllSubscriptiongroupConfig))
	require.NoError(t, err)
	require.Contains(t, string(all.Body), `"forbiddenTable":{"FG":{"FT":4}}`)
	slave := newTestBroker(t, nil)
	slave.topics.Update(NewTopicConfig("FT"))
	require.NoError(t, slave.groups.ReplaceFromMaster(all.Body))
	requireForbidden(slave.Broker, pullReq("FG", "FT", 0, 0, codec.PullFlagSubscription, 0))

	r = call(forbiddenReq("FG", "FT", "true"))
	require.JSONEq(t, `{"group":"FG","readable":true,"topic":"FT"}`, string(r.Body))
	r, err = b.handlePullMessage(ctx, c, pullReq("FG", "FT", 0, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespPullNotFound, r.Code, r.Remark)
	require.Empty(t, b.groups.Snapshot().ForbiddenTable)

	noTopic := codec.NewRequest(codec.ReqUpdateAndGetGroupForbidden)
	noTopic.Ext.Set("group", "FG")
	r = call(noTopic)
	require.EqualValues(t, codec.RespSystemError, r.Code, "topic is @CFNotNull")
}

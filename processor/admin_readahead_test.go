package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

func readModeReq(kv ...string) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqSetCommitlogReadMode)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Ext.Set(kv[i], kv[i+1])
	}
	return req
}

// SET_COMMITLOG_READ_MODE answers as AdminBrokerProcessor
// .setCommitLogReadaheadMode: codes and remarks verbatim.
func TestSetCommitLogReadModeAnswers(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(5)
	for _, tc := range []struct {
		name   string
		req    *codec.RemotingCommand
		code   int32
		remark string
	}{
		{"no ext fields", readModeReq(), codec.RespSystemError, "set commitlog readahead mode param error"},
		{"no mode", readModeReq("other", "1"), codec.RespSystemError, "set commitlog readahead mode failed"},
		{"not a number", readModeReq("READ_AHEAD_MODE", "random"), codec.RespSystemError, "set commitlog readahead mode failed"},
		{"empty", readModeReq("READ_AHEAD_MODE", ""), codec.RespSystemError, "set commitlog readahead mode failed"},
		{"past an int", readModeReq("READ_AHEAD_MODE", "4294967297"), codec.RespSystemError, "set commitlog readahead mode failed"},
		{"spaces", readModeReq("READ_AHEAD_MODE", " 1"), codec.RespSystemError, "set commitlog readahead mode failed"},
		{"mode 2", readModeReq("READ_AHEAD_MODE", "2"), codec.RespInvalidParameter, "set commitlog readahead mode param value error"},
		{"mode -1", readModeReq("READ_AHEAD_MODE", "-1"), codec.RespInvalidParameter, "set commitlog readahead mode param value error"},
		{"MADV_WILLNEED", readModeReq("READ_AHEAD_MODE", "3"), codec.RespInvalidParameter, "set commitlog readahead mode param value error"},
	} {
		resp, err := b.handleSetCommitLogReadMode(ctx, c, tc.req)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.code, resp.Code, tc.name)
		require.Equal(t, tc.remark, resp.Remark, tc.name)
		require.True(t, b.st.LiveConfig().DataReadAheadEnable, "%s changed the mode", tc.name)
	}
	require.EqualValues(t, 29, codec.RespInvalidParameter) // ResponseCode.INVALID_PARAMETER
}

// Mode 1 turns dataReadAheadEnable off in the store and in what
// GET_BROKER_CONFIG shows; mode 0 (as Integer.parseInt reads "+0") turns it
// back on. Neither is written into the config file (Java persists nothing).
func TestSetCommitLogReadModeSwitches(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte("brokerName=broker-a\n"), 0o644))
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerConfigPath = conf })
	ctx, c := context.Background(), newTestConn(5)
	resp, _ := b.handleSendMessage(ctx, c, sendReq("RM", 0, []byte("x"), "")) // a commitlog file to advise
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	shown := func() string {
		resp, _ := b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
		return string(resp.Body)
	}
	require.Contains(t, shown(), "dataReadAheadEnable=true\n")

	resp, err := b.handleSetCommitLogReadMode(ctx, c, readModeReq("READ_AHEAD_MODE", "1"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "set commitlog readahead mode success, mode: 1", resp.Remark)
	require.False(t, b.st.LiveConfig().DataReadAheadEnable)
	require.False(t, b.conf().Store.DataReadAheadEnable)
	require.Contains(t, shown(), "dataReadAheadEnable=false\n")

	resp, _ = b.handleSetCommitLogReadMode(ctx, c, readModeReq("READ_AHEAD_MODE", "+0"))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "set commitlog readahead mode success, mode: 0", resp.Remark)
	require.True(t, b.st.LiveConfig().DataReadAheadEnable)
	require.Contains(t, shown(), "dataReadAheadEnable=true\n")

	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, "brokerName=broker-a\n", string(got))
}

// UPDATE_BROKER_CONFIG of dataReadAheadEnable reaches the running store (a
// live key: the files taken afterwards follow it) and is persisted.
func TestUpdateBrokerConfigDataReadAhead(t *testing.T) {
	b := newTestBroker(t, nil)
	resp, _ := b.handleUpdateBrokerConfig(context.Background(), newTestConn(5), updateConfigReq("dataReadAheadEnable=false\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.False(t, b.st.LiveConfig().DataReadAheadEnable)
	b.admin.cfgMu.Lock()
	require.Empty(t, b.admin.overrides)
	b.admin.cfgMu.Unlock()
}

// A store without a changeable read mode: SUCCESS and nothing else, as Java
// answers for a store that is no DefaultMessageStore.
func TestSetCommitLogReadModeOtherStore(t *testing.T) {
	b := newTestBrokerWith(t, nil, nil, func(st *store.DefaultStore) MessageStore {
		return struct{ MessageStore }{st}
	})
	resp, _ := b.handleSetCommitLogReadMode(context.Background(), newTestConn(5), readModeReq("READ_AHEAD_MODE", "1"))
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "set commitlog readahead mode success, mode: 1", resp.Remark)
	require.True(t, b.st.LiveConfig().DataReadAheadEnable)
	require.True(t, b.conf().Store.DataReadAheadEnable)
}

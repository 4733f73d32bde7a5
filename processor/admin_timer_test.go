package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// SWITCH_TIMER_ENGINE answers as a Java 5.5 broker started without timerRocksDBEnable: R is refused,
// F sets the wheel taking timers again and writes timerStopEnqueue=false to the config file.
func TestSwitchTimerEngine(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(conf, []byte("brokerName=b\ntimerStopEnqueue=true\n"), 0o644))
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.BrokerConfigPath = conf
		c.TimerStopEnqueue = true
	})
	ctx, c := context.Background(), newTestConn(7)
	switchTo := func(kv ...string) *codec.RemotingCommand {
		t.Helper()
		r, err := b.handleSwitchTimerEngine(ctx, c, adminReq(codec.ReqSwitchTimerEngine, kv...))
		require.NoError(t, err)
		return r
	}
	for _, tc := range []struct {
		kv     []string
		remark string
	}{
		{nil, "param error, extFields is null"},
		{[]string{"E_T", ""}, "param error"},
		{[]string{"E_T", "X"}, "param error"},
		{[]string{"E_T", "R"}, "timerRocksDBEnable must be configured true when broker start"},
	} {
		r := switchTo(tc.kv...)
		require.EqualValues(t, codec.RespInvalidParameter, r.Code, "%v", tc.kv)
		require.Equal(t, tc.remark, r.Remark)
	}
	require.True(t, b.conf().TimerStopEnqueue, "a refused switch changes nothing")

	r := switchTo("E_T", "F")
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, "switch timer engine success", r.Remark)
	require.False(t, b.conf().TimerStopEnqueue)
	data, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, "brokerName=b\ntimerStopEnqueue=false\n", string(data))

	off := newTestBroker(t, func(c *BrokerConfig) { c.TimerWheelEnable = false })
	r, err = off.handleSwitchTimerEngine(ctx, c, adminReq(codec.ReqSwitchTimerEngine, "E_T", "F"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespInvalidParameter, r.Code)
	require.Equal(t, "broker timerWheelEnable is false", r.Remark)
}

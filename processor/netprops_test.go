package processor

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// GET_BROKER_CONFIG lists the NettyServerConfig and NettyClientConfig keys the
// broker was given apart (NetProperties), as Java's Configuration lists those
// objects beside BrokerConfig, in the same key=value lines; a BrokerConfig
// field of the same name wins, and an update keeps them.
func TestBrokerConfigListsNetProperties(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.NetProperties = map[string]string{"writeBufferHighWaterMark": "65536", "serverSelectorThreads": "0",
			"bindAddress": "0.0.0.0", "useTLS": "false", "listenPort": "1"}
	})
	c := newTestConn(1)
	get := func() (string, map[string]string) {
		resp, err := b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
		require.NoError(t, err)
		props, err := compat.ParseProperties(strings.NewReader(string(resp.Body)))
		require.NoError(t, err)
		return string(resp.Body), props
	}
	body, props := get()
	require.Contains(t, body, "\nwriteBufferHighWaterMark=65536\n")
	require.Equal(t, "0", props["serverSelectorThreads"])
	require.Equal(t, "0.0.0.0", props["bindAddress"])
	require.Equal(t, "false", props["useTLS"])
	require.Equal(t, "10911", props["listenPort"], "the BrokerConfig field wins")
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		require.Regexp(t, `^[A-Za-z0-9.]+=`, line)
	}

	resp, err := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("writeBufferHighWaterMark=131072\nautoCreateTopicEnable=false\n"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	_, props = get()
	require.Equal(t, "131072", props["writeBufferHighWaterMark"], "taken, for the next start, as Java's")
	require.Equal(t, "0", props["serverSelectorThreads"])
}

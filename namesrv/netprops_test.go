package namesrv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
)

// GET_NAMESRV_CONFIG lists the NettyServerConfig keys the server was given
// apart (NetProperties), and keeps them across an update, as Java's
// Configuration does for its NettyServerConfig.
func TestNamesrvConfigListsNetProperties(t *testing.T) {
	ns := newTestNameServer(t, newFakeClock(), func(c *Config) {
		c.NetProperties = map[string]string{"writeBufferHighWaterMark": "65536", "serverSelectorThreads": "0",
			"serverChannelMaxIdleTimeSeconds": "999"}
	})
	get := func() map[string]string {
		got := call(t, ns, newReq(codec.ReqGetNamesrvConfig, nil))
		props, err := compat.ParseProperties(strings.NewReader(string(got.Body)))
		require.NoError(t, err)
		return props
	}
	props := get()
	require.Equal(t, "65536", props["writeBufferHighWaterMark"])
	require.Equal(t, "0", props["serverSelectorThreads"])
	require.Equal(t, "120", props["serverChannelMaxIdleTimeSeconds"], "the name server's own field wins")
	up := call(t, ns, newReq(codec.ReqUpdateNamesrvConfig, []byte("enableTopicList=false\n")))
	require.Equal(t, codec.RespSuccess, up.Code)
	require.Equal(t, "65536", get()["writeBufferHighWaterMark"])
}

package processor

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

type captureInvoker struct {
	mu   sync.Mutex
	reqs []*codec.RemotingCommand
	addr []string
}

func (c *captureInvoker) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.addr = append(c.addr, addr)
	c.mu.Unlock()
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// TestRegisterBrokerBody checks what the broker sends name servers against
// codec's REGISTER_BROKER decoder (the one the name server uses).
func TestRegisterBrokerBody(t *testing.T) {
	cfg := testConfig(t)
	cfg.NamesrvAddr = "127.0.0.1:1;127.0.0.1:2"
	tb := newTestBroker(t, nil) // for its store
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	inv := &captureInvoker{}
	b.SetNameServerInvoker(inv)
	require.NoError(t, b.Start(context.Background()))
	require.ElementsMatch(t, []string{"127.0.0.1:1", "127.0.0.1:2"}, inv.addr, "registered on start")
	b.topics.Update(NewTopicConfig("RegT"))
	require.NoError(t, b.RegisterAll(context.Background()))
	inv.mu.Lock()
	req := inv.reqs[len(inv.reqs)-1]
	inv.mu.Unlock()
	require.Equal(t, codec.ReqRegisterBroker, req.Code)
	for k, want := range map[string]string{"brokerName": "broker-a", "clusterName": "DefaultCluster",
		"brokerAddr": "127.0.0.1:10911", "brokerId": "0", "haServerAddr": "127.0.0.1:10912", "compressed": "false"} {
		v, _ := req.Ext.Get(k)
		require.Equal(t, want, v, k)
	}
	body, err := codec.DecodeRegisterBrokerBody(req.Body, false, codec.BrokerVersion)
	require.NoError(t, err)
	w := body.TopicConfigSerializeWrapper
	require.Contains(t, w.TopicConfigTable, "RegT")
	require.Contains(t, w.TopicConfigTable, TopicAutoCreate)
	require.EqualValues(t, 7, w.TopicConfigTable[TopicAutoCreate].Perm)
	require.EqualValues(t, 16, w.TopicConfigTable["RegT"].WriteQueueNums)
	require.Equal(t, b.topics.DataVersion().Counter, w.DataVersion.Counter)
	require.NotNil(t, body.FilterServerList)

	// Shutdown unregisters from each name server.
	require.NoError(t, b.Shutdown())
	inv.mu.Lock()
	defer inv.mu.Unlock()
	last := inv.reqs[len(inv.reqs)-2:]
	require.Equal(t, codec.ReqUnregisterBroker, last[0].Code)
	require.Equal(t, codec.ReqUnregisterBroker, last[1].Code)
}

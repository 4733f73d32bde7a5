package processor

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

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

// TestSendCreatedTopicRegisteredBeforeAnswer: a send that creates its topic
// answers only after the name servers have it, as Java's
// createTopicInSendMessageMethod registers before the send goes on: a Go
// consumer started right after its producer's first SEND_OK found no route
// (TestBroker/rmqd/go-broadcast-filters, once under load).
func TestSendCreatedTopicRegisteredBeforeAnswer(t *testing.T) {
	cfg := testConfig(t)
	cfg.NamesrvAddr = "127.0.0.1:1"
	cfg.RegisterNameServerPeriod = 60000 // nothing registers again by itself during the test
	tb := newTestBroker(t, nil)          // for its store
	b, err := NewBroker(cfg, tb.st, quietLog())
	require.NoError(t, err)
	inv := &captureInvoker{}
	b.SetNameServerInvoker(slowInvoker{inv, 200 * time.Millisecond})
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() { _ = b.Shutdown() })
	registered := func(topic string) bool {
		inv.mu.Lock()
		defer inv.mu.Unlock()
		for _, r := range inv.reqs {
			if r.Code == codec.ReqRegisterBroker && bytes.Contains(r.Body, []byte(`"`+topic+`"`)) {
				return true
			}
		}
		return false
	}
	resp, err := b.handleSendMessage(context.Background(), newTestConn(2), sendReq("CreatedBySend", 0, []byte("x"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.True(t, registered("CreatedBySend"), "answered before the name servers had the topic")
}

// slowInvoker is a name server that takes d to take a registration in.
type slowInvoker struct {
	*captureInvoker
	d time.Duration
}

func (s slowInvoker) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	time.Sleep(s.d)
	return s.captureInvoker.InvokeSync(ctx, addr, req)
}

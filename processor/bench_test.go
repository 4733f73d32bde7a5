package processor

import (
	"context"
	"testing"

	"rmqd/codec"
	"rmqd/remoting"
)

// BenchmarkSendMessage is one SEND_MESSAGE through the handler into the real
// store (128-byte body, tags, keys and a UNIQ_KEY as clients send).
func BenchmarkSendMessage(b *testing.B) {
	tb := newTestBroker(b, nil)
	c := newTestConn(1)
	req := sendReq("BenchT", 0, make([]byte, 128), clientSendProps)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(128)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, _ := tb.handleSendMessage(ctx, c, req)
		if resp.Code != codec.RespSuccess {
			b.Fatalf("code %d %s", resp.Code, resp.Remark)
		}
	}
}

// BenchmarkPullMessage is one PULL_MESSAGE returning 32 messages of 128 bytes.
func BenchmarkPullMessage(b *testing.B) {
	tb := newTestBroker(b, nil)
	c := newTestConn(1)
	ctx := context.Background()
	req := sendReq("BenchP", 0, make([]byte, 128), "TAGS\x01tagA\x02")
	for i := 0; i < 32; i++ {
		tb.handleSendMessage(ctx, c, req)
	}
	waitQueued(tb, "BenchP", 32)
	preq := pullReq("G", "BenchP", 0, 0, codec.PullFlagSubscription, 0)
	sink := &discardConn{testConn: newTestConn(2)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb.handlePullMessage(ctx, sink, preq)
	}
	if sink.n == 0 {
		b.Fatal("nothing pulled")
	}
}

// discardConn implements remoting.BodiesWriter without copying, as the real
// connection does, and releases the bodies at once.
type discardConn struct {
	*testConn
	n int
}

func (d *discardConn) WriteResponseBodies(cmd *codec.RemotingCommand, bodies [][]byte, done remoting.Releaser) error {
	d.n += len(bodies)
	if done != nil {
		done.Release()
	}
	return nil
}

// BenchmarkFixStoredProps is the per-send work on a Java client's properties:
// the view, the rewrite, and a look-up in the result.
func BenchmarkFixStoredProps(b *testing.B) {
	cfg := DefaultBrokerConfig()
	ids := newUniqIDGen("10.0.0.1")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pv := codec.ViewProperties(clientSendProps)
		_ = fixStoredProps(&pv, &cfg, ids, false, "", nil)
		_, _ = pv.Get(codec.PropUniqKey)
	}
}

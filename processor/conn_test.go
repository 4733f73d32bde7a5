package processor

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"rmqd/codec"
)

var connIDs atomic.Uint64

// testConn is a remoting.Conn that records what the broker writes to it.
type testConn struct {
	id     uint64
	remote net.Addr
	mu     sync.Mutex
	resps  []*codec.RemotingCommand
	oneway []*codec.RemotingCommand
	closed atomic.Bool
	wrote  chan struct{}
	answer func(req *codec.RemotingCommand) *codec.RemotingCommand // served Invoke calls
}

func newTestConn(port int) *testConn {
	return &testConn{id: connIDs.Add(1), remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port},
		wrote: make(chan struct{}, 64)}
}

func (c *testConn) ID() uint64           { return c.id }
func (c *testConn) RemoteAddr() net.Addr { return c.remote }
func (c *testConn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 10911} }
func (c *testConn) WriteResponse(cmd *codec.RemotingCommand) error {
	if c.closed.Load() {
		return errors.New("closed")
	}
	c.mu.Lock()
	c.resps = append(c.resps, written(cmd))
	c.mu.Unlock()
	select {
	case c.wrote <- struct{}{}:
	default:
	}
	return nil
}
func (c *testConn) Invoke(ctx context.Context, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if c.answer != nil {
		return c.answer(req), nil
	}
	return nil, errors.New("not supported")
}
func (c *testConn) InvokeOneway(req *codec.RemotingCommand) error {
	c.mu.Lock()
	c.oneway = append(c.oneway, req)
	c.mu.Unlock()
	return nil
}
func (c *testConn) Close() error { c.closed.Store(true); return nil }
func (c *testConn) Closed() bool { return c.closed.Load() }

func (c *testConn) responses() []*codec.RemotingCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*codec.RemotingCommand(nil), c.resps...)
}

func (c *testConn) onewayCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.oneway)
}

// written is what a real connection leaves of cmd once WriteResponse returned:
// it encoded the frame, so a pooled answer (Recycler) may be reused at once.
// The fake keeps a copy of such an answer instead, strings and header included.
func written(cmd *codec.RemotingCommand) *codec.RemotingCommand {
	if cmd.Recycler == nil {
		return cmd
	}
	cp := *cmd
	cp.Recycler = nil
	cp.Remark = strings.Clone(cmd.Remark)
	cp.Ext = append(codec.ExtFields(nil), cmd.Ext...)
	if h, ok := cmd.CustomHeader.(*codec.SendMessageResponseHeader); ok {
		hc := *h
		for _, s := range []*string{&hc.MsgID, &hc.TransactionID, &hc.BatchUniqID, &hc.RecallHandle, &hc.MsgRegion} {
			*s = strings.Clone(*s)
		}
		cp.CustomHeader = &hc
	}
	if h, ok := cmd.CustomHeader.(*codec.PullMessageResponseHeader); ok {
		hc := *h
		cp.CustomHeader = &hc
	}
	return &cp
}

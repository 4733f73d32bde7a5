// Package remotingtest holds test doubles for code that takes a remoting.Conn,
// shared by the test files of several packages.
package remotingtest

import (
	"context"
	"net"

	"rmqd/codec"
	"rmqd/remoting"
)

// Peer is a remoting.Conn from Addr that takes and discards whatever is
// written to it: enough for code that only asks who the peer is (access
// control hooks).
type Peer struct{ Addr net.Addr }

// From returns a Peer at ip, port 40000.
func From(ip string) remoting.Conn {
	return Peer{Addr: &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}
}

func (c Peer) ID() uint64                                 { return 1 }
func (c Peer) RemoteAddr() net.Addr                       { return c.Addr }
func (c Peer) LocalAddr() net.Addr                        { return c.Addr }
func (c Peer) WriteResponse(*codec.RemotingCommand) error { return nil }
func (c Peer) InvokeOneway(*codec.RemotingCommand) error  { return nil }
func (c Peer) Close() error                               { return nil }
func (c Peer) Closed() bool                               { return false }
func (c Peer) Invoke(context.Context, *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return nil, nil
}

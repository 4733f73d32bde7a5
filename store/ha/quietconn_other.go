//go:build !linux

package ha

import "net"

// quiet is the identity outside Linux (see quietconn_linux.go).
func quiet(nc net.Conn) net.Conn { return nc }

package remoting

import "errors"

var (
	// ErrConnClosed is returned for writes on, and calls pending on, a closed
	// connection.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrServerClosed is returned by Start after Shutdown and by writes racing it.
	ErrServerClosed = errors.New("remoting: server closed")
	// ErrOutputOverflow is returned for a write that would take a connection's
	// unsent output past its hard cap; the connection is being closed.
	ErrOutputOverflow = errors.New("remoting: connection output over its limit, closing it")
)

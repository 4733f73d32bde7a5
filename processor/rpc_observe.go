package processor

import (
	"time"

	"rmqd/codec"
	"rmqd/remoting"
)

// DeferredRPCObserver is told of the requests the broker answers after its
// handler returned (nil, nil): a pull written with its store bytes, a held
// (long-polling) pull, a pull that waited for dispatch, a SYNC_FLUSH put
// answered from the group commit. The remoting hooks see those with a nil
// response; Java's writeResponse records them with their real code, and
// is_long_polling for a pull that was held.
type DeferredRPCObserver interface {
	// ObserveDeferred records one answered request: its codes, the time from
	// the handler's start to the answer's write, whether the pull had been held,
	// and whether the write was accepted (the connection was still open).
	ObserveDeferred(reqCode, respCode int32, elapsed time.Duration, longPolling, written bool)
}

// SetDeferredRPCObserver sets who is told of requests answered later (the
// metrics exporter). Call before Start.
func (b *Broker) SetDeferredRPCObserver(o DeferredRPCObserver) { b.rpcObs = o }

// observeDeferred reports a request answered later, if anyone listens.
func (b *Broker) observeDeferred(reqCode, respCode int32, start time.Time, longPolling bool, writeErr error) {
	if b.rpcObs != nil {
		b.rpcObs.ObserveDeferred(reqCode, respCode, time.Since(start), longPolling, writeErr == nil)
	}
}

// answerPull writes a pull's response from outside its handler and reports it.
func (b *Broker) answerPull(c remoting.Conn, reply pullReply, resp *codec.RemotingCommand) error {
	err := c.WriteResponse(resp)
	b.observeDeferred(reply.code, resp.Code, reply.start, reply.suspended, err)
	resp.Release()
	return err
}

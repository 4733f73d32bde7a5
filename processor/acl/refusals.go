package acl

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// Refusal is one refused request, for the log.
type Refusal struct {
	User, Addr, Reason string
	Code               int32
}

// RefusalQueue bounds the log lines waiting to be written.
const RefusalQueue = 4096

// RefusalLog writes one log line per refused request off the network event
// loops: Add never waits, a full queue counts the line as dropped and the
// count is logged later. ACL 1.0 and ACL 2.0 (processor/auth) share it.
type RefusalLog struct {
	log     *slog.Logger
	msg     string // the log message
	userKey string // the attribute naming the user ("accessKey", "user")
	q       chan Refusal
	dropped atomic.Int64
}

// NewRefusalLog logs refusals on log as msg, the user under userKey.
func NewRefusalLog(log *slog.Logger, msg, userKey string) *RefusalLog {
	return &RefusalLog{log: log, msg: msg, userKey: userKey, q: make(chan Refusal, RefusalQueue)}
}

// Add queues r without waiting. The strings must not alias a request frame.
func (l *RefusalLog) Add(r Refusal) {
	select {
	case l.q <- r:
	default:
		l.dropped.Add(1)
	}
}

// Queued is the queue, for a writer loop that also does other work.
func (l *RefusalLog) Queued() <-chan Refusal { return l.q }

// Len is how many lines wait (tests).
func (l *RefusalLog) Len() int { return len(l.q) }

// Write logs r now.
func (l *RefusalLog) Write(r Refusal) {
	l.log.Warn(l.msg, l.userKey, r.User, "addr", r.Addr, "code", r.Code, "reason", r.Reason)
}

// Flush writes what is queued and reports lines dropped since the last call.
func (l *RefusalLog) Flush() {
	for {
		select {
		case r := <-l.q:
			l.Write(r)
		default:
			if n := l.dropped.Swap(0); n > 0 {
				l.log.Warn(l.msg+": lines not logged, the log queue was full", "count", n)
			}
			return
		}
	}
}

// Run writes lines as they come until ctx ends, then flushes.
func (l *RefusalLog) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			l.Flush()
			return
		case r := <-l.q:
			l.Write(r)
			if len(l.q) == 0 {
				l.Flush()
			}
		}
	}
}

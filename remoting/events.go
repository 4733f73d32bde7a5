package remoting

import (
	"log/slog"
	"sync"
)

// connEvents delivers OnConnect/OnClose to the listeners on one goroutine, in
// the order the connections opened and closed, so that event loops never wait
// for a listener. The queue is unbounded: dropping an OnClose would leak the
// broker's registrations of that connection.
type connEvents struct {
	log *slog.Logger

	mu        sync.Mutex
	listeners []ConnListener
	queue     []connEvent
	stopped   bool
	wake      chan struct{}
	done      chan struct{}
}

type connEvent struct {
	c    Conn
	open bool
}

func newConnEvents(log *slog.Logger) *connEvents {
	return &connEvents{log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (e *connEvents) add(l ConnListener) {
	e.mu.Lock()
	e.listeners = append(e.listeners, l)
	e.mu.Unlock()
}

func (e *connEvents) start() { go e.loop() }

func (e *connEvents) post(c Conn, open bool) {
	e.mu.Lock()
	if len(e.listeners) == 0 {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, connEvent{c: c, open: open})
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// stop delivers what is queued, then ends the goroutine.
func (e *connEvents) stop() {
	e.mu.Lock()
	already := e.stopped
	e.stopped = true
	e.mu.Unlock()
	if !already {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	<-e.done
}

func (e *connEvents) loop() {
	defer close(e.done)
	var batch []connEvent
	for range e.wake {
		for {
			e.mu.Lock()
			batch, e.queue = e.queue, batch[:0]
			ls := e.listeners
			stopped := e.stopped
			e.mu.Unlock()
			if len(batch) == 0 {
				if stopped {
					return
				}
				break
			}
			for _, ev := range batch {
				for _, l := range ls {
					e.deliver(l, ev)
				}
			}
			clear(batch)
		}
	}
}

func (e *connEvents) deliver(l ConnListener, ev connEvent) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("remoting: connection listener panic", "conn", ev.c, "panic", r)
		}
	}()
	if ev.open {
		l.OnConnect(ev.c)
	} else {
		l.OnClose(ev.c)
	}
}

package remoting

import (
	"sync"
	"sync/atomic"
)

// Defaults of a registration's worker pool.
const (
	DefaultWorkers   = 16
	DefaultQueueSize = 10000
)

// task is one decoded request waiting for a worker.
type task struct {
	d   *dispatcher
	ep  *endpoint
	reg *registration
	in  *inbound
	// charged is what the request counts against the dispatcher's queued
	// bytes until it is processed.
	charged int64
}

// WorkerPool runs requests on a bounded set of goroutines fed by a bounded
// queue; a full queue rejects the request (SYSTEM_BUSY), as Java's executors do.
// Workers start on demand, so a pool that never sees traffic costs nothing.
// Several registrations may share one pool (WithPool).
type WorkerPool struct {
	name    string
	max     int32
	started atomic.Int32
	tasks   chan task
	quit    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// NewWorkerPool makes a pool of at most workers goroutines and a queue of
// queueSize waiting requests (defaults when <= 0).
func NewWorkerPool(name string, workers, queueSize int) *WorkerPool {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if queueSize <= 0 {
		queueSize = DefaultQueueSize
	}
	return &WorkerPool{name: name, max: int32(workers), tasks: make(chan task, queueSize), quit: make(chan struct{})}
}

// Name is the pool's name, for logs.
func (p *WorkerPool) Name() string { return p.name }

// Queued is the number of requests waiting for a worker.
func (p *WorkerPool) Queued() int { return len(p.tasks) }

// submit queues t without blocking; false means the pool is full or stopped.
func (p *WorkerPool) submit(t task) bool {
	select {
	case <-p.quit:
		return false
	default:
	}
	select {
	case p.tasks <- t:
	default:
		return false
	}
	if p.started.Load() < p.max {
		if p.started.Add(1) <= p.max {
			p.wg.Add(1)
			go p.work()
		} else {
			p.started.Add(-1)
		}
	}
	return true
}

func (p *WorkerPool) work() {
	defer p.wg.Done()
	for {
		select {
		case t := <-p.tasks:
			t.d.run(t.ep, t.reg, t.in, false)
			t.d.queued.Add(-t.charged)
			t.ep.requestDone()
		case <-p.quit:
			return
		}
	}
}

// stop makes the workers exit after their current request; queued requests are
// dropped (their connections are closing anyway).
func (p *WorkerPool) stop() {
	p.once.Do(func() { close(p.quit) })
}

// wait blocks until every worker exited.
func (p *WorkerPool) wait() { p.wg.Wait() }

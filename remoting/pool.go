package remoting

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"rmqd/codec"
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
	at      int64 // when it was queued (monoNow)
}

// clockBase makes monoNow monotonic: durations between time.Now readings of
// one process use the monotonic clock.
var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

// FastFailure is a pool's overload policy, as Java's BrokerFastFailure and
// NettyRequestProcessor.rejectRequest apply it to the broker's executors.
// Either func may be nil.
type FastFailure struct {
	// MaxWait is how long a request may wait for a worker: one queued longer
	// is answered SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]..." instead of run
	// (waitTimeMillsInSendQueue and friends). <= 0: no limit.
	MaxWait func() time.Duration
	// Busy reports the store too busy to take more (isOSPageCacheBusy): new
	// requests are answered SYSTEM_BUSY "[REJECTREQUEST]..." and queued ones
	// "[PCBUSY_CLEAN_QUEUE]...".
	Busy func() bool
}

// sweepEvery is how often a pool with a FastFailure looks at its queue while
// it holds requests (BrokerFastFailure runs every 10 ms).
const sweepEvery = 10 * time.Millisecond

// WorkerPool runs requests on a bounded set of goroutines fed by a bounded
// FIFO queue; a full queue rejects the request (SYSTEM_BUSY), as Java's
// executors do. Workers start on demand, so a pool that never sees traffic
// costs nothing. Several registrations may share one pool (WithPool).
type WorkerPool struct {
	name    string
	max     int32
	started atomic.Int32

	mu      sync.Mutex
	cond    sync.Cond // signalled when a task is queued or the pool stops
	ring    []task    // grows by doubling up to capacity
	head, n int
	cap     int
	stopped bool

	ff       FastFailure
	sweeping atomic.Bool
	kick     chan struct{} // wakes the sweeper when the queue stops being empty
	quit     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
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
	p := &WorkerPool{name: name, max: int32(workers), ring: make([]task, min(queueSize, 64)), cap: queueSize,
		kick: make(chan struct{}, 1), quit: make(chan struct{})}
	p.cond.L = &p.mu
	return p
}

// SetFastFailure installs the pool's overload policy. Call before the pool
// takes requests.
func (p *WorkerPool) SetFastFailure(ff FastFailure) { p.ff = ff }

// Name is the pool's name, for logs.
func (p *WorkerPool) Name() string { return p.name }

// Capacity is how many requests the queue holds at most.
func (p *WorkerPool) Capacity() int { return p.cap }

// Queued is the number of requests waiting for a worker.
func (p *WorkerPool) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// HeadWait is how long the oldest queued request has waited, 0 when none
// waits (Java's headSlowTimeMills).
func (p *WorkerPool) HeadWait() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return 0
	}
	return time.Duration(monoNow() - p.ring[p.head].at)
}

// rejects reports that new requests are to be refused at once.
func (p *WorkerPool) rejects() bool { return p.ff.Busy != nil && p.ff.Busy() }

// submit queues t without blocking; false means the pool is full or stopped.
func (p *WorkerPool) submit(t task) bool {
	t.at = monoNow()
	p.mu.Lock()
	if p.stopped || p.n == p.cap {
		p.mu.Unlock()
		return false
	}
	if p.n == len(p.ring) {
		p.growLocked()
	}
	p.ring[(p.head+p.n)%len(p.ring)] = t
	p.n++
	first := p.n == 1
	p.cond.Signal()
	p.mu.Unlock()
	if p.started.Load() < p.max {
		if p.started.Add(1) <= p.max {
			p.wg.Add(1)
			go p.work()
		} else {
			p.started.Add(-1)
		}
	}
	if p.ff.MaxWait != nil || p.ff.Busy != nil {
		if p.sweeping.CompareAndSwap(false, true) {
			p.wg.Add(1)
			go p.sweep()
		}
		if first {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
	}
	return true
}

// growLocked doubles the ring, keeping the order. Called with mu held.
func (p *WorkerPool) growLocked() {
	ring := make([]task, min(2*len(p.ring), p.cap))
	for i := 0; i < p.n; i++ {
		ring[i] = p.ring[(p.head+i)%len(p.ring)]
	}
	p.ring, p.head = ring, 0
}

// popLocked takes the head task. Called with mu held and n > 0.
func (p *WorkerPool) popLocked() task {
	t := p.ring[p.head]
	p.ring[p.head] = task{}
	p.head = (p.head + 1) % len(p.ring)
	p.n--
	return t
}

func (p *WorkerPool) work() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for p.n == 0 && !p.stopped {
			p.cond.Wait()
		}
		if p.stopped {
			p.mu.Unlock()
			return
		}
		t := p.popLocked()
		size := p.n
		p.mu.Unlock()
		// A request that waited past its limit is answered busy rather than
		// run late (its client has likely given up on it).
		if limit := p.maxWait(); limit > 0 {
			if waited := time.Duration(monoNow() - t.at); waited >= limit {
				p.fail(t, "[TIMEOUT_CLEAN_QUEUE]", waited, size)
				continue
			}
		}
		t.d.run(t.ep, t.reg, t.in, false)
		t.done()
	}
}

// done gives back what t counted against its dispatcher's and connection's
// budgets, once it was run or answered busy.
func (t task) done() {
	t.d.queued.Add(-t.charged)
	t.ep.requestDone()
}

func (p *WorkerPool) maxWait() time.Duration {
	if p.ff.MaxWait == nil {
		return 0
	}
	return p.ff.MaxWait()
}

// sweep is BrokerFastFailure.cleanExpiredRequest for this pool: while the
// store is busy it answers every queued request, and it answers those that
// waited past MaxWait, oldest first, even while every worker is stuck. It
// sleeps on kick while the queue is empty.
func (p *WorkerPool) sweep() {
	defer p.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		if p.sweepOnce() {
			continue
		}
		select { // empty: wait for the next request
		case <-p.quit:
			return
		case <-p.kick:
		}
	}
}

// sweepOnce answers the expired or (store busy) all queued requests and
// reports whether requests remain queued.
func (p *WorkerPool) sweepOnce() bool {
	for p.ff.Busy != nil && p.ff.Busy() {
		p.mu.Lock()
		if p.n == 0 {
			p.mu.Unlock()
			break
		}
		t := p.popLocked()
		size := p.n
		p.mu.Unlock()
		p.fail(t, "[PCBUSY_CLEAN_QUEUE]", time.Duration(monoNow()-t.at), size)
	}
	limit := p.maxWait()
	for {
		p.mu.Lock()
		if p.n == 0 {
			p.mu.Unlock()
			return false
		}
		waited := time.Duration(monoNow() - p.ring[p.head].at)
		if limit <= 0 || waited < limit {
			p.mu.Unlock()
			return true
		}
		t := p.popLocked()
		size := p.n
		p.mu.Unlock()
		p.fail(t, "[TIMEOUT_CLEAN_QUEUE]", waited, size)
	}
}

// fail answers a queued request SYSTEM_BUSY with Java's fast-failure remark
// and recycles it.
func (p *WorkerPool) fail(t task, tag string, waited time.Duration, size int) {
	req := &t.in.cmd
	if !req.IsOneway() {
		resp := codec.NewResponse(req, codec.RespSystemBusy, fmt.Sprintf(
			"%sbroker busy, start flow control for a while, period in queue: %dms, size of queue: %d",
			tag, waited.Milliseconds(), size))
		t.d.reply(t.ep, req, resp, false)
	}
	t.d.release(t.in)
	t.done()
}

// stop makes the workers exit after their current request; queued requests are
// dropped (their connections are closing anyway).
func (p *WorkerPool) stop() {
	p.once.Do(func() {
		p.mu.Lock()
		p.stopped = true
		p.cond.Broadcast()
		p.mu.Unlock()
		close(p.quit)
	})
}

// wait blocks until every worker exited.
func (p *WorkerPool) wait() { p.wg.Wait() }

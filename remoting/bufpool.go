package remoting

import (
	"math/bits"
	"sync"
)

// Frame and encode buffers come from size-classed pools so that a steady stream
// of requests allocates nothing. Classes are powers of two from 512 B to 4 MiB;
// larger buffers are plain allocations left to the GC (rare: only big batches).
const (
	minClassShift = 9  // 512 B
	maxClassShift = 22 // 4 MiB
	numClasses    = maxClassShift - minClassShift + 1
)

// buffer wraps a slice so that the pools hold pointers (a slice header in an
// interface would allocate on every Put).
type buffer struct {
	b []byte
}

func (p *bufPool) newBuffer(size int) *buffer {
	return &buffer{b: make([]byte, 0, size)}
}

// A sync.Pool is emptied by every other GC, and under steady traffic a GC
// comes every few hundred milliseconds: the e2e allocation profile showed a
// third of the frame buffers made anew. Each class therefore also keeps a small
// reserve the GC leaves alone, filled first on put and drawn on when the pool
// is empty; reserveBytes bounds what an idle broker holds per class.
const reserveBytes = 64 << 10

type bufPool struct {
	classes [numClasses]sync.Pool
	reserve [numClasses]chan *buffer
}

func newBufPool() *bufPool {
	p := &bufPool{}
	for i := range p.classes {
		p.reserve[i] = make(chan *buffer, min(max(reserveBytes>>(i+minClassShift), 2), 64))
	}
	return p
}

// classFor returns the smallest class holding n bytes, or -1 when n is larger
// than the largest class.
func classFor(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	shift := bits.Len(uint(n - 1))
	if shift > maxClassShift {
		return -1
	}
	return shift - minClassShift
}

// get returns a buffer of length 0 and capacity at least n.
func (p *bufPool) get(n int) *buffer {
	c := classFor(n)
	if c < 0 {
		return p.newBuffer(n)
	}
	buf, _ := p.classes[c].Get().(*buffer)
	if buf == nil {
		select {
		case buf = <-p.reserve[c]:
		default:
			return p.newBuffer(1 << (c + minClassShift))
		}
	}
	buf.b = buf.b[:0]
	return buf
}

// put recycles buf by its capacity; the caller must not touch it afterwards.
func (p *bufPool) put(buf *buffer) {
	if buf == nil {
		return
	}
	cp := cap(buf.b)
	if cp < 1<<minClassShift {
		return
	}
	// Largest class whose size the capacity covers, so get's promise holds.
	c := bits.Len(uint(cp)) - 1 - minClassShift
	if c >= numClasses {
		return
	}
	buf.b = buf.b[:0]
	select {
	case p.reserve[c] <- buf:
	default:
		p.classes[c].Put(buf)
	}
}

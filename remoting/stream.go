package remoting

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"rmqd/codec"
)

// The client connections and the TLS server connections are blocking streams
// with a reader and a writer goroutine each; what they share is here: framing
// what is read, and the queue of frames to write.

// streamFrames cuts a blocking stream into frames and decodes each into an
// inbound of d.
type streamFrames struct {
	r      *bufio.Reader
	maxLen int
	bufs   *bufPool
	d      *dispatcher
	lenBuf [lengthFieldSize]byte
}

func newStreamFrames(r io.Reader, maxLen int, bufs *bufPool, d *dispatcher) *streamFrames {
	return &streamFrames{r: bufio.NewReaderSize(r, 64<<10), maxLen: maxLen, bufs: bufs, d: d}
}

// next reads and decodes one command. On an error the connection is done;
// bad tells a malformed frame from a failed read.
func (f *streamFrames) next() (in *inbound, bad bool, err error) {
	if _, err := io.ReadFull(f.r, f.lenBuf[:]); err != nil {
		return nil, false, err
	}
	length := int32(binary.BigEndian.Uint32(f.lenBuf[:]))
	if err := checkLength(length, f.maxLen); err != nil {
		return nil, true, err
	}
	buf := f.bufs.get(min(int(length), initialFrameCap))
	buf.b, err = readFrame(f.r, buf.b, int(length))
	if err != nil {
		f.bufs.put(buf)
		return nil, false, err
	}
	if err := checkHeaderWord(buf.b[:headerWordSize], int(length)); err != nil {
		f.bufs.put(buf)
		return nil, true, err
	}
	in = f.d.getInbound()
	in.buf = buf
	if err := codec.DecodeCommand(buf.b, &in.cmd); err != nil {
		f.d.release(in)
		return nil, true, fmt.Errorf("decode: %w", err)
	}
	return in, false, nil
}

// readFrame reads length bytes into dst, growing it as bytes arrive so that an
// announced length alone does not allocate it.
func readFrame(r io.Reader, dst []byte, length int) ([]byte, error) {
	for len(dst) < length {
		if len(dst) == cap(dst) {
			grown := make([]byte, len(dst), min(length, 2*cap(dst)+initialFrameCap))
			copy(grown, dst)
			dst = grown
		}
		end := min(length, cap(dst))
		n, err := io.ReadFull(r, dst[len(dst):end])
		dst = dst[:len(dst)+n]
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// outQueue is a connection's outgoing frames: a slice the writer swaps out
// whole, so callers never block on a slow network and the writer flushes
// everything queued with one write.
type outQueue struct {
	bufs     *bufPool
	mu       sync.Mutex
	out      []outFrame
	shutDown bool
	bytes    atomic.Int64 // queued, not yet written or dropped
	limit    int64        // hard cap on bytes; 0: none
	wake     chan struct{}
}

// newOutQueue makes a queue refusing frames past limit bytes (0: no limit).
func newOutQueue(bufs *bufPool, limit int64) outQueue {
	return outQueue{bufs: bufs, limit: limit, wake: make(chan struct{}, 1)}
}

// outputHardCap is the unsent output past which a connection is closed at
// once: outputHardCapFactor high-water marks, or two maximal frames; 0 (no
// cap) when the high-water mark is disabled.
func outputHardCap(highWaterMark, maxFrameLength int) int64 {
	if highWaterMark <= 0 {
		return 0
	}
	return max(int64(highWaterMark)*outputHardCapFactor, 2*int64(maxFrameLength))
}

// push queues f and wakes the writer; after shutdown it drops f. A frame
// that would take the queue past its limit is dropped with ErrOutputOverflow
// and the queue refuses all further frames: the caller then closes the
// connection (it sees ErrOutputOverflow once, so it logs once).
func (q *outQueue) push(f outFrame) error {
	q.mu.Lock()
	if q.shutDown {
		q.mu.Unlock()
		q.drop(f)
		return ErrConnClosed
	}
	if q.limit > 0 && q.bytes.Load()+f.size() > q.limit {
		q.shutDown = true
		q.mu.Unlock()
		q.drop(f)
		return ErrOutputOverflow
	}
	q.bytes.Add(f.size())
	q.out = append(q.out, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return nil
}

// take swaps the queued frames for batch's (emptied) array.
func (q *outQueue) take(batch []outFrame) []outFrame {
	q.mu.Lock()
	batch, q.out = q.out, batch[:0]
	q.mu.Unlock()
	return batch
}

// shutdown refuses further frames and drops the queued ones.
func (q *outQueue) shutdown() {
	q.mu.Lock()
	q.shutDown = true
	batch := q.out
	q.out = nil
	q.mu.Unlock()
	for _, f := range batch {
		q.bytes.Add(-f.size())
		q.drop(f)
	}
}

// drop releases a frame that will not be written.
func (q *outQueue) drop(f outFrame) {
	q.bufs.put(f.buf)
	release(f.done)
}

// writeBatch writes batch to w and flushes, or drops it once err (a write
// that failed before) is set; it returns the first error. batch keeps its
// length, cleared, for the writer's next round.
func (q *outQueue) writeBatch(w *bufio.Writer, batch []outFrame, err error) error {
	for _, f := range batch {
		n := f.size()
		if err == nil {
			err = q.writeFrame(w, f)
		} else {
			q.drop(f)
		}
		q.bytes.Add(-n)
	}
	clear(batch)
	if err == nil {
		err = w.Flush()
	}
	return err
}

func (q *outQueue) writeFrame(w *bufio.Writer, f outFrame) error {
	_, err := w.Write(f.buf.b)
	q.bufs.put(f.buf)
	for _, b := range f.bodies {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	release(f.done)
	return err
}

package remoting

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/panjf2000/gnet/v2"

	"rmqd/codec"
)

// memReader stands in for gnet's inbound buffer.
type memReader struct{ data []byte }

func (m *memReader) InboundBuffered() int { return len(m.data) }
func (m *memReader) Read(p []byte) (int, error) {
	n := copy(p, m.data)
	m.data = m.data[n:]
	return n, nil
}

// recordWire collects what the server writes.
type recordWire struct {
	out    bytes.Buffer
	closed bool
}

func (w *recordWire) send(buf *buffer, _ bool) error {
	w.out.Write(buf.b)
	return nil
}
func (w *recordWire) sendv(hdr *buffer, bodies [][]byte, done Releaser) error {
	w.out.Write(hdr.b)
	for _, b := range bodies {
		w.out.Write(b)
	}
	release(done)
	return nil
}
func (w *recordWire) shut() error { w.closed = true; return nil }

// feed runs the framing state machine over data delivered in chunks and returns
// what was written back and whether the connection was closed.
func feed(s *Server, data []byte, chunks []int) ([]byte, bool) {
	w := &recordWire{}
	sc := &serverConn{s: s}
	var opaque atomic.Int32
	sc.ep = endpoint{opaque: &opaque, bufs: s.bufs, w: w}
	for len(data) > 0 {
		n := len(data)
		if len(chunks) > 0 {
			n = min(n, max(1, chunks[0]))
			chunks = chunks[1:]
		}
		r := &memReader{data: data[:n]}
		data = data[n:]
		if sc.onTraffic(r) == gnet.Close {
			return w.out.Bytes(), true
		}
		// gnet keeps unread bytes for the next traffic event.
		data = append(r.data, data...)
		if len(r.data) == n && len(data) == n {
			break // a short length field waits for more bytes; none will come
		}
	}
	sc.resetRead()
	return w.out.Bytes(), false
}

func fuzzServer() *Server {
	s := NewServer(ServerConfig{MaxFrameLength: 64 << 10, Logger: testLogger()})
	s.RegisterDefault(echo(), Inline())
	return s
}

// FuzzFraming checks that the framing state machine never panics and that how
// the bytes are split across reads changes nothing: same responses, same close.
func FuzzFraming(f *testing.F) {
	for _, k := range malformedKinds(f, 64<<10) {
		f.Add(k.frame(rand.New(rand.NewPCG(1, 2))), uint64(3))
	}
	two := rawJSONFrame(f, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1, ExtFields: map[string]string{"a": "b"}}, []byte("x"))
	two = append(two, rawBinaryFrame(rawBinaryHeader{Code: 11, Opaque: 2, Remark: "r", Ext: [][2]string{{"k", "v"}}}, []byte("yz"))...)
	f.Add(two, uint64(1))
	f.Add(two, uint64(7))
	big := rawJSONFrame(f, rawJSONHeader{Code: 12, Language: "GO", Opaque: 3}, bytes.Repeat([]byte{'b'}, 70000))
	f.Add(big, uint64(5))
	f.Add(binary.BigEndian.AppendUint32(nil, 0x10), uint64(2))

	s := fuzzServer()
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		whole, wholeClosed := feed(s, bytes.Clone(data), nil)
		r := rand.New(rand.NewPCG(seed, seed>>7))
		var chunks []int
		for n := 0; n < len(data); {
			c := 1 + r.IntN(1+len(data)/3)
			chunks = append(chunks, c)
			n += c
		}
		split, splitClosed := feed(s, bytes.Clone(data), chunks)
		if wholeClosed != splitClosed {
			t.Fatalf("closed: whole %v, split %v", wholeClosed, splitClosed)
		}
		if !bytes.Equal(whole, split) {
			t.Fatalf("responses differ: whole %d bytes, split %d bytes", len(whole), len(split))
		}
		// Every response is a well-formed frame our codec reads back.
		for out := whole; len(out) > 0; {
			if len(out) < 4 {
				t.Fatalf("truncated response")
			}
			n := int(binary.BigEndian.Uint32(out))
			var cmd codec.RemotingCommand
			if err := codec.DecodeCommand(out[4:4+n], &cmd); err != nil {
				t.Fatalf("response does not decode: %v", err)
			}
			if !cmd.IsResponse() {
				t.Fatalf("written frame is not a response")
			}
			out = out[4+n:]
		}
	})
}

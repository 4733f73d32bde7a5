package remoting

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// malformed is one kind of bad input and whether the server must close the
// connection on its own (otherwise the client closes it after writing).
type malformed struct {
	name        string
	serverClose bool
	frame       func(r *rand.Rand) []byte
}

func malformedKinds(t testing.TB, maxFrame int) []malformed {
	lenPrefixed := func(length uint32, rest []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, length), rest...)
	}
	return []malformed{
		{"http garbage", true, func(*rand.Rand) []byte { return []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n") }},
		{"random garbage", false, func(r *rand.Rand) []byte {
			b := make([]byte, 1+r.IntN(300))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return b
		}},
		{"negative length", true, func(*rand.Rand) []byte { return lenPrefixed(0xFFFFFFF0, []byte("xxxxxxxx")) }},
		{"huge length", true, func(*rand.Rand) []byte { return lenPrefixed(uint32(maxFrame), []byte("xxxx")) }},
		{"length below header word", true, func(*rand.Rand) []byte { return lenPrefixed(2, []byte("xx")) }},
		{"zero length", true, func(*rand.Rand) []byte { return lenPrefixed(0, nil) }},
		{"header length beyond frame", true, func(*rand.Rand) []byte {
			return lenPrefixed(8, binary.BigEndian.AppendUint32(nil, 100)) // 4 of 8 bytes sent: checked early
		}},
		{"unknown serialize type", true, func(*rand.Rand) []byte {
			return rawFrame(codec.SerializeType(7), []byte(`{"code":1}`), nil)
		}},
		{"bad json", true, func(*rand.Rand) []byte { return rawFrame(codec.SerializeJSON, []byte(`{"code":1,"opaque":`), nil) }},
		{"json not an object", true, func(*rand.Rand) []byte { return rawFrame(codec.SerializeJSON, []byte(`[1,2,3]`), nil) }},
		{"binary header cut short", true, func(*rand.Rand) []byte {
			return rawFrame(codec.SerializeRocketMQ, []byte{0, 1, 0, 0, 1}, nil)
		}},
		{"binary ext length beyond header", true, func(*rand.Rand) []byte {
			f := rawBinaryFrame(rawBinaryHeader{Code: 1, Opaque: 1}, nil)
			binary.BigEndian.PutUint32(f[len(f)-4:], 1000)
			return f
		}},
		{"truncated then close", false, func(r *rand.Rand) []byte {
			f := rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1}, []byte("body"))
			return f[:1+r.IntN(len(f)-1)]
		}},
		{"valid then garbage", true, func(*rand.Rand) []byte {
			f := rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1}, nil)
			return append(f, lenPrefixed(0x7FFFFFFF, nil)...)
		}},
	}
}

// TestMalformedFramesDoNotDisturbOthers throws 1,000 malformed inputs at the
// server from parallel connections while a well-formed client keeps calling.
func TestMalformedFramesDoNotDisturbOthers(t *testing.T) {
	const maxFrame = 1 << 20
	s := startServer(t, ServerConfig{MaxFrameLength: maxFrame, Multicore: true}, func(s *Server) {
		s.Register(10, echo())
	})
	addr := s.Addr().String()
	kinds := malformedKinds(t, maxFrame)

	stop := make(chan struct{})
	var good, bad atomic.Int64
	var goodWG sync.WaitGroup
	goodWG.Add(1)
	go func() {
		defer goodWG.Done()
		c := NewClient(ClientConfig{Logger: testLogger()})
		defer c.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			req := codec.NewRequest(10)
			req.Body = []byte(fmt.Sprint(i))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := c.InvokeSync(ctx, addr, req)
			cancel()
			if err == nil && string(resp.Body) == fmt.Sprint(i) {
				good.Add(1)
			} else {
				bad.Add(1)
			}
		}
	}()

	const total, workers = 1000, 8
	var next atomic.Int64
	var wg sync.WaitGroup
	var notClosed atomic.Int64
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 42))
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				k := kinds[int(i)%len(kinds)]
				if !sendMalformed(addr, k.frame(r), k.serverClose) {
					notClosed.Add(1)
					t.Logf("server did not close after %q", k.name)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	goodWG.Wait()

	assert.Zero(t, notClosed.Load(), "connections the server should have closed")
	assert.Zero(t, bad.Load(), "well-formed calls that failed")
	assert.Positive(t, good.Load())

	// Still serving, and no connection left behind.
	c := newClient(t)
	resp, err := c.InvokeSync(tctx(t, 5*time.Second), addr, codec.NewRequest(10))
	require.NoError(t, err)
	assert.Equal(t, int32(0), resp.Code)
	assert.Eventually(t, func() bool { return s.ConnCount() == 1 }, 5*time.Second, 10*time.Millisecond,
		"connections open: %d", s.ConnCount())
}

// sendMalformed writes frame on a fresh connection. When the server must close
// the connection it reports whether it did (within 5 s); otherwise the client
// closes it.
func sendMalformed(addr string, frame []byte, serverClose bool) bool {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_, _ = c.Write(frame)
	if !serverClose {
		return true
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err != nil {
			var ne net.Error
			if asNetError(err, &ne) && ne.Timeout() {
				return false
			}
			return true // EOF or reset: closed by the server
		}
	}
}

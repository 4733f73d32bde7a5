package remoting

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func testLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("RMQD_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// startServer starts a server on a random 127.0.0.1 port, with setup run before
// Start, and shuts it down when the test ends.
func startServer(t testing.TB, cfg ServerConfig, setup func(*Server)) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	s := NewServer(cfg)
	if setup != nil {
		setup(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Start(ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

func newClient(t testing.TB) *Client {
	t.Helper()
	c := NewClient(ClientConfig{Logger: testLogger()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func tctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// echo answers SUCCESS with the request's ext fields and body.
func echo() Processor {
	return ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
		resp := codec.NewResponse(req, 0, "")
		for _, f := range req.Ext {
			resp.Ext.Set(f.Key, f.Value)
		}
		resp.Body = append([]byte(nil), req.Body...)
		return resp, nil
	})
}

// Raw frames, built and parsed by hand so that the server is tested against the
// wire layout of the spec rather than against our own codec.

type rawJSONHeader struct {
	Code      int32             `json:"code"`
	Language  string            `json:"language"`
	Version   int32             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    *string           `json:"remark,omitempty"`
	ExtFields map[string]string `json:"extFields,omitempty"`
}

func rawJSONFrame(t testing.TB, h rawJSONHeader, body []byte) []byte {
	t.Helper()
	hdr, err := json.Marshal(h)
	require.NoError(t, err)
	return rawFrame(codec.SerializeJSON, hdr, body)
}

func rawFrame(st codec.SerializeType, hdr, body []byte) []byte {
	f := make([]byte, 8, 8+len(hdr)+len(body))
	binary.BigEndian.PutUint32(f, uint32(4+len(hdr)+len(body)))
	binary.BigEndian.PutUint32(f[4:], uint32(st)<<24|uint32(len(hdr)))
	f = append(f, hdr...)
	return append(f, body...)
}

type rawBinaryHeader struct {
	Code     int16
	Language byte
	Version  int16
	Opaque   int32
	Flag     int32
	Remark   string
	Ext      [][2]string
}

func rawBinaryFrame(h rawBinaryHeader, body []byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint16(b, uint16(h.Code))
	b = append(b, h.Language)
	b = binary.BigEndian.AppendUint16(b, uint16(h.Version))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Opaque))
	b = binary.BigEndian.AppendUint32(b, uint32(h.Flag))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.Remark)))
	b = append(b, h.Remark...)
	var ext []byte
	for _, kv := range h.Ext {
		ext = binary.BigEndian.AppendUint16(ext, uint16(len(kv[0])))
		ext = append(ext, kv[0]...)
		ext = binary.BigEndian.AppendUint32(ext, uint32(len(kv[1])))
		ext = append(ext, kv[1]...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ext)))
	b = append(b, ext...)
	return rawFrame(codec.SerializeRocketMQ, b, body)
}

func parseRawBinaryHeader(t testing.TB, b []byte) rawBinaryHeader {
	t.Helper()
	require.GreaterOrEqual(t, len(b), 21)
	h := rawBinaryHeader{
		Code:     int16(binary.BigEndian.Uint16(b)),
		Language: b[2],
		Version:  int16(binary.BigEndian.Uint16(b[3:])),
		Opaque:   int32(binary.BigEndian.Uint32(b[5:])),
		Flag:     int32(binary.BigEndian.Uint32(b[9:])),
	}
	rl := int(binary.BigEndian.Uint32(b[13:]))
	require.LessOrEqual(t, 17+rl+4, len(b))
	h.Remark = string(b[17 : 17+rl])
	el := int(binary.BigEndian.Uint32(b[17+rl:]))
	ext := b[21+rl:]
	require.Equal(t, el, len(ext))
	for len(ext) > 0 {
		kl := int(binary.BigEndian.Uint16(ext))
		k := string(ext[2 : 2+kl])
		ext = ext[2+kl:]
		vl := int(binary.BigEndian.Uint32(ext))
		h.Ext = append(h.Ext, [2]string{k, string(ext[4 : 4+vl])})
		ext = ext[4+vl:]
	}
	return h
}

// readRawFrame reads one frame and splits it.
func readRawFrame(t testing.TB, c net.Conn) (codec.SerializeType, []byte, []byte) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	var lb [4]byte
	_, err := io.ReadFull(c, lb[:])
	require.NoError(t, err)
	n := binary.BigEndian.Uint32(lb[:])
	require.Less(t, n, uint32(1<<24))
	f := make([]byte, n)
	_, err = io.ReadFull(c, f)
	require.NoError(t, err)
	w := binary.BigEndian.Uint32(f)
	hl := int(w & 0xFFFFFF)
	return codec.SerializeType(w >> 24), f[4 : 4+hl], f[4+hl:]
}

func dialRaw(t testing.TB, s *Server) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// expectClosedByPeer reads until the server closes the connection.
func expectClosedByPeer(t testing.TB, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := io.Copy(io.Discard, c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("expected the server to close the connection, got %v", err)
	}
}

func asNetError(err error, ne *net.Error) bool { return errors.As(err, ne) }

package remoting

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// A processor answering later keeps the request's frame unless it returns
// ErrAnsweredLater, which hands the frame back to the pool at once.
func TestAnsweredLaterRecyclesTheFrame(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		recycled bool
	}{{"owned", nil, false}, {"released", ErrAnsweredLater, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(ServerConfig{Logger: testLogger()})
			var frame *byte
			var after []*codec.RemotingCommand
			s.RegisterDefault(ProcessorFunc(func(_ context.Context, c Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
				frame = unsafe.SliceData(req.Body)
				resp := codec.NewResponse(req, codec.RespSuccess, "later")
				resp.Opaque, resp.Flag = req.Opaque, codec.FlagResponse
				require.NoError(t, c.WriteResponse(resp))
				return nil, tc.err
			}), Inline())
			s.AddRPCHook(afterHook(func(resp *codec.RemotingCommand) { after = append(after, resp) }))
			data := rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1}, make([]byte, 300))
			out, closed := feed(s, data, nil)
			require.False(t, closed)
			require.Greater(t, len(out), 4)
			var resp codec.RemotingCommand
			require.NoError(t, codec.DecodeCommand(out[4:], &resp))
			require.Equal(t, "later", resp.Remark, "the processor's own answer, not SYSTEM_ERROR")
			require.Equal(t, []*codec.RemotingCommand{nil}, after, "hooks see an answer given elsewhere")
			// The test's wire keeps the answer's buffer: a buffer back in the
			// pool's reserve can only be the frame, and it holds the body.
			var back []*buffer
			for c := range s.bufs.reserve {
				for len(s.bufs.reserve[c]) > 0 {
					back = append(back, <-s.bufs.reserve[c])
				}
			}
			if !tc.recycled {
				require.Empty(t, back)
				return
			}
			require.Len(t, back, 1)
			b := back[0].b[:cap(back[0].b)]
			start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
			require.True(t, uintptr(unsafe.Pointer(frame)) > start && uintptr(unsafe.Pointer(frame)) < start+uintptr(len(b)))
		})
	}
}

type afterHook func(resp *codec.RemotingCommand)

func (afterHook) Before(Conn, *codec.RemotingCommand) *codec.RemotingCommand { return nil }
func (h afterHook) After(_ Conn, _, resp *codec.RemotingCommand)             { h(resp) }

type countingRecycler struct {
	n          int
	afterHooks *int // the hooks' count when Release ran
	hooks      *int
	resp       *codec.RemotingCommand
}

// Release counts and clobbers the response, as a pool's next taker would.
func (r *countingRecycler) Release() {
	r.n++
	*r.afterHooks = *r.hooks
	r.resp.Remark = "clobbered"
}

// A returned response with a Recycler is released once, after it was written
// and the hooks saw it, and so is one to a oneway request (never written).
func TestReturnedResponseIsReleasedAfterTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag int32
		want bool // an answer on the wire
	}{{"answered", 0, true}, {"oneway", codec.FlagOneway, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(ServerConfig{Logger: testLogger()})
			hooks, atRelease := 0, -1
			r := &countingRecycler{afterHooks: &atRelease, hooks: &hooks}
			s.RegisterDefault(ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
				resp := codec.NewResponse(req, codec.RespSuccess, "pooled")
				resp.Recycler, r.resp = r, resp
				return resp, nil
			}), Inline())
			s.AddRPCHook(afterHook(func(*codec.RemotingCommand) { hooks++ }))
			data := rawJSONFrame(t, rawJSONHeader{Code: 10, Language: "JAVA", Opaque: 1, Flag: tc.flag}, nil)
			out, closed := feed(s, data, nil)
			require.False(t, closed)
			require.Equal(t, 1, r.n, "released once")
			require.Equal(t, 1, atRelease, "after the hooks")
			if !tc.want {
				require.Empty(t, out)
				return
			}
			var resp codec.RemotingCommand
			require.NoError(t, codec.DecodeCommand(out[4:], &resp))
			require.Equal(t, "pooled", resp.Remark, "written before the release")
		})
	}
}

package remoting

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// floodBound bounds the flood: about 2 s on a quiet machine with -race, but
// the default cap takes ~130,000 answers to pass, and make test's parallel
// packages once slowed that past 30 s on 2 cores.
const floodBound = 2 * time.Minute

// A peer the client dialed (name server, controller) that sends requests and
// never reads the REQUEST_CODE_NOT_SUPPORTED answers is disconnected once the
// unsent answers pass the hard cap, instead of growing the client's heap.
func TestClientClosesPeerThatFloodsWithoutReading(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ClientConfig
	}{
		{"small cap", ClientConfig{WriteBufferHighWaterMark: 4 << 10, MaxFrameLength: 4 << 10}},
		{"default cap", ClientConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			release := make(chan struct{})
			peerDone := make(chan struct{})
			defer func() { close(release); <-peerDone }()
			go func() {
				defer close(peerDone)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				// The peer's receive buffer stays the default: shrunk to 4 KiB
				// on loopback (64 KiB segments) it drops the client's answers,
				// and both ends back off to minutes-long retransmission and
				// window probes while neither has anything queued in user space.
				var batch []byte
				for i := 0; i < 1000; i++ {
					batch = append(batch, requestFrame(t, 9999, int32(i), nil)...)
				}
				_ = c.SetWriteDeadline(time.Now().Add(floodBound))
				// A million requests (~30 MB) whose answers hold ~500 MB
				// unbounded; the client must close long before.
				for i := 0; i < 1000; i++ {
					if _, err := c.Write(batch); err != nil {
						return
					}
				}
				<-release // the peer never closes first
			}()
			tc.cfg.Logger = testLogger()
			cl := NewClient(tc.cfg)
			defer cl.Close()
			conn, err := cl.Conn(context.Background(), ln.Addr().String())
			require.NoError(t, err)
			waitFor(t, floodBound, "the client connection to be closed", conn.Closed)
		})
	}
}

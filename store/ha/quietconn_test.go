package ha

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The raw-syscall conn must behave as the net.Conn it wraps: whole writes,
// reads until EOF, deadlines reported as timeouts, closed conns as errors.
func TestQuietConn(t *testing.T) {
	client, server := quietPair(t)

	// Larger than the socket buffers: the writer must wait for writability.
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<18)
	werr := make(chan error, 1)
	go func() {
		_, err := client.Write(payload)
		werr <- err
	}()
	got := make([]byte, len(payload))
	_, err := io.ReadFull(server, got)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, payload, got)

	require.NoError(t, server.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = server.Read(got[:1])
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "read past its deadline: %v", err)
	require.NoError(t, server.SetReadDeadline(time.Time{}))

	require.NoError(t, client.Close())
	_, err = server.Read(got[:1])
	require.ErrorIs(t, err, io.EOF)
	_, err = client.Write([]byte("x"))
	require.Error(t, err)
	_, err = client.Read(got[:1])
	require.Error(t, err)
}

// A frame each way costs no allocation: one per call here was four per
// SYNC_MASTER put on each side.
func TestQuietConnAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	client, server := quietPair(t)
	frame := make([]byte, 64)
	got := make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := client.Write(frame); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(server, got); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "allocations per frame written and read")
}

// quietPair is both ends of a loopback TCP connection, each made quiet and
// closed at the test's end (a second Close only returns an error).
func quietPair(t *testing.T) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- quiet(c)
		}
		close(accepted)
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	client = quiet(cc)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

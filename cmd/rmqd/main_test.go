package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// freePort is a loopback port below the ephemeral range, so that no outgoing
// connection of a concurrently running test takes it before the server binds.
func freePort(t *testing.T) int {
	t.Helper()
	return harness.FreePort(t)
}

// freeBrokerPort is a listen port p with p-2 (VIP channel) and p+1 (HA) free too.
func freeBrokerPort(t *testing.T) int {
	t.Helper()
	return harness.FreePortBlock(t, 4) + 2
}

func TestParseArgs(t *testing.T) {
	var errBuf bytes.Buffer
	o, err := parseArgs(nil, &errBuf)
	require.NoError(t, err)
	require.Equal(t, "standalone", o.mode)

	o, err = parseArgs([]string{"broker", "-c", "b.conf", "-n", "h:9876"}, &errBuf)
	require.NoError(t, err)
	require.Equal(t, options{mode: "broker", configFile: "b.conf", namesrv: "h:9876", log: defaultLogOptions()}, o)

	_, err = parseArgs([]string{"broker"}, &errBuf)
	require.Error(t, err, "broker mode without config or name server")
	_, err = parseArgs([]string{"namesrv", "extra"}, &errBuf)
	require.Error(t, err)
}

func TestPrintConfig(t *testing.T) {
	var out, errBuf bytes.Buffer
	require.Equal(t, 0, run([]string{"-p"}, &out, &errBuf), errBuf.String())
	require.Contains(t, out.String(), "brokerIP1=127.0.0.1\n")
	require.Contains(t, out.String(), "autoCreateTopicEnable=true\n")
	require.Contains(t, out.String(), "listenPort=9876\n", "standalone name server port")
	require.Contains(t, out.String(), "listenPort=10911\n", "standalone broker port")
}

// startStandalone runs rmqd standalone in-process on free loopback ports and
// stops it when the test ends.
func startStandalone(t *testing.T) (namesrvAddr, brokerAddr string) {
	t.Helper()
	dir := t.TempDir()
	nsPort, brokerPort := freePort(t), freeBrokerPort(t)
	conf := fmt.Sprintf("bindAddress=127.0.0.1\nlistenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\n",
		brokerPort, nsPort, filepath.Join(dir, "store"))
	confPath := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { done <- serve(ctx, options{mode: "standalone", configFile: confPath}, io.Discard, logger) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("rmqd did not stop within 15 s")
		}
		_, err := os.Stat(filepath.Join(dir, "store", "abort"))
		require.True(t, os.IsNotExist(err), "a clean stop removes the abort file")
	})
	brokerAddr = fmt.Sprintf("127.0.0.1:%d", brokerPort)
	namesrvAddr = fmt.Sprintf("127.0.0.1:%d", nsPort)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", brokerAddr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "broker not listening: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	return namesrvAddr, brokerAddr
}

func readFrame(t *testing.T, c net.Conn) *codec.RemotingCommand {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	var lenBuf [4]byte
	_, err := io.ReadFull(c, lenBuf[:])
	require.NoError(t, err)
	frame := make([]byte, binary.BigEndian.Uint32(lenBuf[:]))
	_, err = io.ReadFull(c, frame)
	require.NoError(t, err)
	var cmd codec.RemotingCommand
	require.NoError(t, codec.DecodeCommand(frame, &cmd))
	return &cmd
}

// An unknown request code on a raw connection gets REQUEST_CODE_NOT_SUPPORTED in
// the serialize type it was asked in, from both the broker and the name server.
func TestStandaloneAnswersUnknownCode(t *testing.T) {
	nsAddr, brokerAddr := startStandalone(t)
	host, port, err := net.SplitHostPort(brokerAddr)
	require.NoError(t, err)
	p, _ := strconv.Atoi(port)
	vipAddr := net.JoinHostPort(host, strconv.Itoa(p-2))
	for _, addr := range []string{brokerAddr, vipAddr, nsAddr} {
		for _, st := range []codec.SerializeType{codec.SerializeJSON, codec.SerializeRocketMQ} {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			req := codec.NewRequest(9999)
			req.Opaque = 77
			req.SerializeType = st
			_, err = c.Write(req.Encode(nil))
			require.NoError(t, err)
			resp := readFrame(t, c)
			c.Close()
			require.Equal(t, codec.RespRequestCodeNotSupported, resp.Code, "addr %s type %d", addr, st)
			require.Equal(t, int32(77), resp.Opaque)
			require.True(t, resp.IsResponse())
			require.Equal(t, st, resp.SerializeType)
			require.Contains(t, resp.Remark, "9999")
		}
	}
}

// malformedFrames are inputs a broken or hostile peer might send; each must close
// that connection only.
func malformedFrames(i int) []byte {
	switch i % 6 {
	case 0: // garbage
		return []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	case 1: // negative length
		return []byte{0xFF, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0}
	case 2: // longer than the 16 MiB frame limit
		return []byte{0x7F, 0, 0, 0, 0, 0, 0, 0}
	case 3: // header length beyond the frame
		return []byte{0, 0, 0, 8, 0, 0, 0x10, 0, '{', '}', 0, 0}
	case 4: // bad JSON header
		h := []byte(`{"code":10,"extFields":{"a":`)
		f := binary.BigEndian.AppendUint32(nil, uint32(4+len(h)))
		f = binary.BigEndian.AppendUint32(f, uint32(len(h)))
		return append(f, h...)
	default: // unknown serialize type
		return []byte{0, 0, 0, 6, 9, 0, 0, 2, '{', '}'}
	}
}

// A running rmqd survives 1,000 malformed frames from parallel connections while
// a well-formed client on its own connection keeps getting answers.
func TestStandaloneSurvivesMalformedFrames(t *testing.T) {
	_, brokerAddr := startStandalone(t)
	good, err := net.Dial("tcp", brokerAddr)
	require.NoError(t, err)
	defer good.Close()

	const total, workers = 1000, 8
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := w; i < total; i += workers {
				c, err := net.DialTimeout("tcp", brokerAddr, 5*time.Second)
				if err != nil {
					errs <- err
					return
				}
				_, _ = c.Write(malformedFrames(i))
				// The server closes the connection; reading hits EOF (or a reset).
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}
			errs <- nil
		}(w)
	}
	for i := 0; i < 20; i++ {
		req := codec.NewRequest(codec.ReqGetMaxOffset)
		req.Opaque = int32(i)
		req.Ext.Set("topic", "TBW102")
		req.Ext.Set("queueId", "0")
		_, err := good.Write(req.Encode(nil))
		require.NoError(t, err)
		resp := readFrame(t, good)
		require.Equal(t, int32(i), resp.Opaque)
		require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	for w := 0; w < workers; w++ {
		require.NoError(t, <-errs)
	}
	// Still serving after the storm.
	req := codec.NewRequest(9999)
	_, err = good.Write(req.Encode(nil))
	require.NoError(t, err)
	require.Equal(t, codec.RespRequestCodeNotSupported, readFrame(t, good).Code)
}

// Java's name server list is -n, else namesrvAddr, else the
// rocketmq.namesrv.addr system property (a -c key here), else NAMESRV_ADDR.
func TestNamesrvAddrPrecedence(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "10.0.0.4:9876")
	for _, tc := range []struct {
		name, conf string
		args       []string
		want       string
	}{
		{"env", "", nil, "10.0.0.4:9876"},
		{"property", "rocketmq.namesrv.addr=10.0.0.3:9876\n", nil, "10.0.0.3:9876"},
		{"key", "rocketmq.namesrv.addr=10.0.0.3:9876\nnamesrvAddr=10.0.0.2:9876\n", nil, "10.0.0.2:9876"},
		{"flag", "rocketmq.namesrv.addr=10.0.0.3:9876\nnamesrvAddr=10.0.0.2:9876\n", []string{"-n", "10.0.0.1:9876"}, "10.0.0.1:9876"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "broker.conf")
			require.NoError(t, os.WriteFile(conf, []byte("brokerIP1=127.0.0.1\n"+tc.conf), 0o600))
			var out, errBuf bytes.Buffer
			args := append([]string{"broker", "-c", conf, "-p"}, tc.args...)
			require.Equal(t, 0, run(args, &out, &errBuf), errBuf.String())
			require.Contains(t, out.String(), "namesrvAddr="+tc.want+"\n")
			require.NotContains(t, errBuf.String(), "does not know")
		})
	}
}

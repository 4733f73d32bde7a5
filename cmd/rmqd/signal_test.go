package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// rmqdProc is the rmqd binary running standalone on a store of a test.
type rmqdProc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func startBinary(t *testing.T, bin, confPath, failpoints string) *rmqdProc {
	t.Helper()
	p := &rmqdProc{out: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "-c", confPath)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), "RMQD_FAILPOINTS="+failpoints)
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
	})
	return p
}

// wait returns the exit code, or fails the test after limit.
func (p *rmqdProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(limit):
		t.Fatalf("rmqd still running after %v:\n%s", limit, p.out.String())
		return -1
	}
}

func (p *rmqdProc) waitLog(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(p.out.String(), s); {
		require.True(t, time.Now().Before(deadline), "log lacks %q:\n%s", s, p.out.String())
		time.Sleep(20 * time.Millisecond)
	}
}

func sendOne(t *testing.T, broker, topic string) {
	t.Helper()
	c := newTestClient(t)
	createTopic(t, c, broker, topic)
	req := rawReq(codec.ReqSendMessage, map[string]string{"producerGroup": "SignalPG", "topic": topic, "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "1", "queueId": "0", "sysFlag": "0", "bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10),
		"flag": "0", "properties": "", "reconsumeTimes": "0", "unitMode": "false", "batch": "false"})
	req.Body = []byte("hello")
	resp := invoke(t, c, broker, req)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
}

func maxOffset(t *testing.T, broker, topic string) int64 {
	t.Helper()
	resp := invoke(t, newTestClient(t), broker, rawReq(30, map[string]string{"topic": topic, "queueId": "0"}))
	v, _ := resp.Ext.Get("offset")
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err)
	return n
}

// The binary under signals: SIGTERM stops it with 0 and a clean store, and the
// same ports serve again at once (clients' connections were open: TIME_WAIT);
// kill -9 is recovered as abnormal; a second SIGTERM during a stop slowed by
// the disk ends the process at once with 1, and what was acknowledged is there
// after the abnormal recovery; a second process on the same store is refused
// by the store lock with a non-zero exit.
func TestBinarySignalsAndRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := harness.RmqdFailpointBinary(t)
	dir := t.TempDir()
	nsPort, brokerPort := freePort(t), freeBrokerPort(t)
	broker := fmt.Sprintf("127.0.0.1:%d", brokerPort)
	conf := fmt.Sprintf("listenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\n",
		brokerPort, nsPort, filepath.Join(dir, "store"))
	confPath := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	fp := filepath.Join(dir, "failpoints")
	require.NoError(t, os.WriteFile(fp, nil, 0o644))
	const topic = "SignalTopic"

	p := startBinary(t, bin, confPath, fp)
	p.waitLog(t, "broker listening")
	require.Contains(t, p.out.String(), "lastShutdownClean=true")
	sendOne(t, broker, topic)

	// A second process on the same store: refused, non-zero, nothing left running.
	other := filepath.Join(dir, "other.conf")
	require.NoError(t, os.WriteFile(other, []byte(fmt.Sprintf("listenPort=%d\nnamesrvListenPort=%d\nstorePathRootDir=%s\n",
		freeBrokerPort(t), freePort(t), filepath.Join(dir, "store"))), 0o644))
	q := startBinary(t, bin, other, fp)
	require.NotEqual(t, 0, q.wait(t, 30*time.Second))
	require.Contains(t, q.out.String(), "lock failed")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 0, p.wait(t, 30*time.Second), p.out.String())
	_, err := os.Stat(filepath.Join(dir, "store", "abort"))
	require.True(t, os.IsNotExist(err), "a clean stop removes the abort file")

	p = startBinary(t, bin, confPath, fp)
	p.waitLog(t, "broker listening")
	require.Contains(t, p.out.String(), "lastShutdownClean=true", "SIGTERM then restart on the same ports")
	require.Equal(t, int64(1), maxOffset(t, broker, topic))
	require.NoError(t, p.cmd.Process.Kill())
	p.wait(t, 30*time.Second)

	p = startBinary(t, bin, confPath, fp)
	p.waitLog(t, "broker listening")
	require.Contains(t, p.out.String(), "lastShutdownClean=false", "after kill -9")
	require.Equal(t, int64(1), maxOffset(t, broker, topic))
	sendOne(t, broker, topic)
	// Every flush now takes a minute: the stop hangs until a second signal.
	require.NoError(t, os.WriteFile(fp, []byte("flush-delay=60s\n"), 0o644))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	p.waitLog(t, "stopping")
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 1, p.wait(t, 30*time.Second), p.out.String())
	require.Contains(t, p.out.String(), "second signal")

	require.NoError(t, os.WriteFile(fp, nil, 0o644))
	p = startBinary(t, bin, confPath, fp)
	p.waitLog(t, "broker listening")
	require.Contains(t, p.out.String(), "lastShutdownClean=false", "after a forced exit")
	require.Equal(t, int64(2), maxOffset(t, broker, topic), "the acknowledged send survives the forced exit")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	require.Equal(t, 0, p.wait(t, 30*time.Second), p.out.String())
}

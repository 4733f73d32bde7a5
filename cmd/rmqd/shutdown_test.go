package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/remoting"
)

// served is one in-process serve call: cancel stops it, done has its result.
type served struct {
	cancel context.CancelFunc
	done   chan error
	log    *syncBuffer
}

// serveConf runs serve in mode with conf written to dir/rmqd.conf (extra -n
// when namesrv is set) and waits until addr accepts.
func serveConf(t *testing.T, dir, mode, conf, namesrv, addr string) *served {
	t.Helper()
	confPath := filepath.Join(dir, mode+".conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	s := &served{done: make(chan error, 1), log: &syncBuffer{}}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(s.log, nil))
	go func() {
		s.done <- serve(ctx, options{mode: mode, configFile: confPath, namesrv: namesrv}, io.Discard, logger)
	}()
	t.Cleanup(func() { s.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("%s stopped before listening: %v\n%s", mode, err, s.log.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "not listening on %s: %v", addr, err)
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Error("rmqd did not stop within 20 s")
	}
}

func rawReq(code int32, ext map[string]string) *codec.RemotingCommand {
	req := codec.NewRequest(code)
	keys := make([]string, 0, len(ext))
	for k := range ext {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		req.Ext.Set(k, ext[k])
	}
	return req
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, req)
	require.NoError(t, err)
	return resp
}

func createTopic(t *testing.T, c *remoting.Client, broker, topic string) {
	t.Helper()
	resp := invoke(t, c, broker, rawReq(codec.ReqUpdateAndCreateTopic, map[string]string{"topic": topic, "defaultTopic": "TBW102",
		"readQueueNums": "1", "writeQueueNums": "1", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"}))
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
}

func routeCode(t *testing.T, c *remoting.Client, ns, topic string) int32 {
	t.Helper()
	return invoke(t, c, ns, rawReq(codec.ReqGetRouteinfoByTopic, map[string]string{"topic": topic})).Code
}

func newTestClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.ClientConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A stopping broker first leaves the name server's routes and answers the
// pulls it holds for long polling, while their connections are still open
// (Java's shutdownBasicService begins with unregisterBrokerAll): the consumer
// gets an answer and pulls again, and a client asking for routes at that
// moment no longer finds the broker. Before, the connections were closed
// first and the held pulls' answers went nowhere.
func TestStopAnswersHeldPullsAfterUnregistering(t *testing.T) {
	dir := t.TempDir()
	nsPort, brokerPort := freePort(t), freeBrokerPort(t)
	nsAddr, brokerAddr := fmt.Sprintf("127.0.0.1:%d", nsPort), fmt.Sprintf("127.0.0.1:%d", brokerPort)
	serveConf(t, dir, "namesrv", fmt.Sprintf("listenPort=%d\nkvConfigPath=%s\n", nsPort, filepath.Join(dir, "kv.json")), "", nsAddr)
	broker := serveConf(t, dir, "broker", fmt.Sprintf("brokerIP1=127.0.0.1\nlistenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\n",
		brokerPort, filepath.Join(dir, "store")), nsAddr, brokerAddr)

	c := newTestClient(t)
	const topic = "ShutdownHeld"
	createTopic(t, c, brokerAddr, topic)
	for deadline := time.Now().Add(10 * time.Second); routeCode(t, c, nsAddr, topic) != codec.RespSuccess; {
		require.True(t, time.Now().Before(deadline), "topic never routed")
		time.Sleep(20 * time.Millisecond)
	}

	conn, err := net.Dial("tcp", brokerAddr)
	require.NoError(t, err)
	defer conn.Close()
	pull := rawReq(codec.ReqPullMessage, map[string]string{"consumerGroup": "ShutdownHeldGroup", "topic": topic, "queueId": "0",
		"queueOffset": "0", "maxMsgNums": "32", "sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "30000",
		"subscription": "*", "subVersion": strconv.FormatInt(time.Now().UnixMilli(), 10), "expressionType": "TAG"})
	pull.Opaque = 4242
	_, err = conn.Write(pull.Encode(nil))
	require.NoError(t, err)
	// The pull is parked: no answer for a while.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	var one [1]byte
	_, err = conn.Read(one[:])
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the pull was answered before the stop")

	broker.cancel()
	resp := readFrame(t, conn)
	require.Equal(t, int32(4242), resp.Opaque)
	require.Equal(t, codec.RespPullNotFound, resp.Code, resp.Remark)
	// Answered after the unregistration: the route is already gone.
	require.Equal(t, codec.RespTopicNotExist, routeCode(t, c, nsAddr, topic))
	broker.stop(t)
}

// A broker that cannot listen (its port taken) exits with the reason and
// leaves its store closed cleanly: no abort file, so the next start is not
// taken for a crash, and the store lock released.
func TestListenFailureClosesTheStore(t *testing.T) {
	dir := t.TempDir()
	brokerPort := freeBrokerPort(t)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", brokerPort))
	require.NoError(t, err)
	defer ln.Close()
	conf := fmt.Sprintf("brokerIP1=127.0.0.1\nbindAddress=127.0.0.1\nlistenPort=%d\nstorePathRootDir=%s\nmappedFileSizeCommitLog=4194304\n",
		brokerPort, filepath.Join(dir, "store"))
	confPath := filepath.Join(dir, "broker.conf")
	require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
	log := &syncBuffer{}
	err = serve(context.Background(), options{mode: "broker", configFile: confPath}, io.Discard, slog.New(slog.NewTextHandler(log, nil)))
	require.ErrorContains(t, err, "listen")
	_, statErr := os.Stat(filepath.Join(dir, "store", "abort"))
	require.True(t, os.IsNotExist(statErr), "abort file left behind by a start that failed:\n%s", log.String())
	// The same store and port once free: recovered as after a clean stop.
	require.NoError(t, ln.Close())
	again := serveConf(t, dir, "broker", conf, "", fmt.Sprintf("127.0.0.1:%d", brokerPort))
	require.Contains(t, again.log.String(), "lastShutdownClean=true", "start after a failed listen:\n%s", again.log.String())
}

// watchSignals: the first signal cancels, a second one forces the exit.
func TestSecondSignalForcesExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	served := make(chan struct{})
	defer close(served)
	ctx, cancel := context.WithCancelCause(context.Background())
	exited := make(chan int, 1)
	go watchSignals(sigs, served, cancel, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)), func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	require.ErrorContains(t, context.Cause(ctx), "terminated")
	select {
	case <-exited:
		t.Fatal("one signal must only start the graceful stop")
	case <-time.After(100 * time.Millisecond):
	}
	sigs <- syscall.SIGINT
	select {
	case code := <-exited:
		require.Equal(t, 1, code)
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal did not force the exit")
	}
}

// watchSignals: a graceful stop that outlives its limit is ended.
func TestShutdownLimitForcesExit(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	served := make(chan struct{})
	defer close(served)
	ctx, cancel := context.WithCancelCause(context.Background())
	exited := make(chan int, 1)
	log := &syncBuffer{}
	go watchSignals(sigs, served, cancel, 50*time.Millisecond, slog.New(slog.NewTextHandler(log, nil)), func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	<-ctx.Done()
	select {
	case code := <-exited:
		require.Equal(t, 1, code)
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown limit did not force the exit")
	}
	require.True(t, strings.Contains(log.String(), "took too long"), log.String())
}

package integration

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// Overload: what a broker does with 2,000 idle connections, 200 producers that pipeline sends and read
// their answers, and one client that pipelines pulls and 1 MiB sends and never reads. The broker's
// resident set must stay under overloadRSSBound, every well-behaved client must get an answer to every
// request (SUCCESS, or SYSTEM_BUSY when overloaded: never a timeout or a dropped connection), idle
// connections must stay open and the process must not exit. RMQD_OVERLOAD_FULL=1 runs the load for
// 30 s instead of 8 s (RMQD_OVERLOAD_SECONDS=n for n s), RMQD_OVERLOAD_SYNC=1 with SYNC_FLUSH;
// RMQD_OVERLOAD_APACHE=1 runs it against Apache too (its RSS is reported, not bounded).
const (
	overloadIdleConns = 2000
	overloadProducers = 200
	overloadWindow    = 4       // sends in flight per producer
	overloadBody      = 1 << 10 // well-behaved message body
	overloadBigBody   = 1 << 20 // the hostile client's sends
	// overloadRSSBound is the rmqd resident-set bound checked here (README "Limits"): the Go heap bounded
	// by serverMaxQueuedRequestBytes (128 MiB), per-connection output (16 x 4 MiB high-water mark for the
	// hostile client), the held pulls and the store's mapped window (mappedResidentBytes, 32 MiB, plus
	// the commitlog's prefault window), with room for the GC's target of twice the live heap.
	overloadRSSBound = 512 << 20
)

func TestOverload(t *testing.T) {
	idleConns := raiseNoFile(t, overloadIdleConns+overloadProducers+512) - overloadProducers - 512
	if idleConns < overloadIdleConns {
		t.Logf("open-files hard limit allows %d idle connections, not %d", idleConns, overloadIdleConns)
	}
	idleConns = min(idleConns, overloadIdleConns)
	load := 8 * time.Second
	if os.Getenv("RMQD_OVERLOAD_FULL") != "" {
		load = 30 * time.Second
	}
	if v, err := strconv.Atoi(os.Getenv("RMQD_OVERLOAD_SECONDS")); err == nil && v > 0 {
		load = time.Duration(v) * time.Second
	}
	for _, kind := range targetsFromEnv(t) {
		// Apache (256 MiB heap in the harness) only on request: its start-up and this load on two shared
		// cores cost a minute and more.
		if kind == harness.KindApache && os.Getenv("RMQD_OVERLOAD_APACHE") == "" {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			var opts harness.Options
			if os.Getenv("RMQD_OVERLOAD_SYNC") != "" { // every send waits for the disk, on the workers
				opts.BrokerConf = map[string]string{"flushDiskType": "SYNC_FLUSH"}
			}
			runOverload(t, harness.Start(t, kind, opts), load, idleConns)
		})
	}
}

func runOverload(t *testing.T, tg *harness.Target, load time.Duration, idleConns int) {
	pid := tg.Procs[len(tg.Procs)-1].Pid()
	raw := newRawClient(t, tg)
	const topic, pullTopic = "IT_overload", "IT_overload_pull"
	raw.createTopic(topic, 8)
	raw.createTopic(pullTopic, 1)
	// Something for the hostile pulls to fetch: 64 x 64 KiB.
	for i := 0; i < 64; i++ {
		resp := raw.invoke(10, sendHeader(pullTopic, 0, ""), bytes.Repeat([]byte{'p'}, 64<<10), 10*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("prefill send %d: code %d %s", i, resp.Code, resp.Remark)
		}
	}
	base := readRSS(t, pid)
	t.Logf("%s broker pid %d before load: %s", tg.Kind, pid, base)

	idle := make([]net.Conn, 0, idleConns)
	t.Cleanup(func() {
		for _, c := range idle {
			_ = c.Close()
		}
	})
	for i := 0; i < idleConns; i++ {
		c, err := net.DialTimeout("tcp", tg.BrokerAddr, 10*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var maxRSS atomic.Int64
	var maxAnon atomic.Int64
	wg.Add(1)
	go func() { // RSS sampler
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if r, err := rss(pid); err == nil {
				maxRSS.Store(max(maxRSS.Load(), r.total))
				maxAnon.Store(max(maxAnon.Load(), r.anon))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	hostile := &hostileClient{addr: tg.BrokerAddr, topic: topic, pullTopic: pullTopic}
	wg.Add(1)
	go func() { defer wg.Done(); hostile.run(stop) }()

	results := make([]producerResult, overloadProducers)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = runProducer(tg.BrokerAddr, topic, i, stop) }()
	}
	probe := make(chan error, 1)
	var probes atomic.Int64
	wg.Add(1)
	go func() { // a light client asking GET_MAX_OFFSET all along
		defer wg.Done()
		probe <- runProbe(tg.BrokerAddr, topic, stop, &probes)
	}()

	time.Sleep(load)
	close(stop)
	wg.Wait()

	if exited, err := tg.Procs[len(tg.Procs)-1].Exited(); exited {
		t.Fatalf("%s broker exited under load: %v", tg.Kind, err)
	}
	var ok, busy, failed int64
	for i, r := range results {
		ok += r.ok
		busy += r.busy
		if r.err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("producer %d: %v (after %d ok, %d busy)", i, r.err, r.ok, r.busy)
			}
		}
	}
	if err := <-probe; err != nil {
		t.Errorf("probe: %v", err)
	}
	// Idle connections are still open and served.
	for i := 0; i < len(idle); i += max(1, len(idle)/20) {
		if err := pingConn(idle[i], int32(i)); err != nil {
			t.Errorf("idle connection %d after the load: %v", i, err)
		}
	}
	after := readRSS(t, pid)
	t.Logf("load %v: %d producers sent %d ok + %d SYSTEM_BUSY (%d failed), probe %d answers; hostile client: "+
		"%d connections, %d requests written, %d closed by the broker",
		load, overloadProducers, ok, busy, failed, probes.Load(), hostile.conns.Load(), hostile.written.Load(), hostile.closed.Load())
	t.Logf("%s broker RSS: before %s, peak %d MiB (anon peak %d MiB), after %s; rmqd's bound %d MiB",
		tg.Kind, base, maxRSS.Load()>>20, maxAnon.Load()>>20, after, overloadRSSBound>>20)
	if ok == 0 {
		t.Errorf("no send succeeded")
	}
	if tg.Kind == harness.KindRmqd && maxRSS.Load() > overloadRSSBound {
		t.Errorf("rmqd RSS peaked at %d MiB, over the %d MiB bound", maxRSS.Load()>>20, overloadRSSBound>>20)
	}
}

// raiseNoFile lifts this process's open-files soft limit towards n (up to the hard limit) and returns the
// limit in force. rmqd raises its own at start.
func raiseNoFile(t *testing.T, n int) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur < uint64(n) && lim.Cur < lim.Max {
		lim.Cur = min(lim.Max, uint64(n))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatalf("setrlimit: %v", err)
		}
	}
	if lim.Cur < 1024 {
		t.Fatalf("open-files limit %d is too low for this test", lim.Cur)
	}
	return int(min(lim.Cur, uint64(n)))
}

type rssSample struct{ total, anon int64 }

func (r rssSample) String() string {
	return fmt.Sprintf("%d MiB (anon %d MiB)", r.total>>20, r.anon>>20)
}

// rss reads VmRSS and RssAnon of pid from /proc.
func rss(pid int) (rssSample, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return rssSample{}, err
	}
	defer f.Close()
	var r rssSample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return rssSample{}, fmt.Errorf("%s %q: %w", k, v, err)
		}
		if k == "VmRSS" {
			r.total = kb << 10
		} else {
			r.anon = kb << 10
		}
	}
	return r, sc.Err()
}

func readRSS(t *testing.T, pid int) rssSample {
	t.Helper()
	r, err := rss(pid)
	if err != nil {
		t.Fatalf("read RSS of %d: %v", pid, err)
	}
	return r
}

func encodeRequest(code int32, opaque int32, ext map[string]string, body []byte) []byte {
	req := rawRequest(code, ext)
	req.Opaque = opaque
	req.Body = body
	return req.Encode(nil)
}

func readResponse(r io.Reader) (*codec.RemotingCommand, error) {
	var lb [4]byte
	if _, err := io.ReadFull(r, lb[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(lb[:])
	if n > 32<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	f := make([]byte, n)
	if _, err := io.ReadFull(r, f); err != nil {
		return nil, err
	}
	var cmd codec.RemotingCommand
	if err := codec.DecodeCommand(f, &cmd); err != nil {
		return nil, err
	}
	return &cmd, nil
}

// answerTimeout is how long a well-behaved client waits for any answer before calling it a timeout.
const answerTimeout = 20 * time.Second

type producerResult struct {
	ok, busy int64
	err      error
}

// runProducer pipelines overloadWindow sends on its own connection and reads every answer until stop,
// then waits for the answers still due.
func runProducer(addr, topic string, id int, stop <-chan struct{}) producerResult {
	var res producerResult
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		res.err = err
		return res
	}
	defer c.Close()
	body := bytes.Repeat([]byte{'m'}, overloadBody)
	window := make(chan struct{}, overloadWindow)
	readErr := make(chan error, 1)
	var outstanding atomic.Int64
	done := make(chan struct{})
	go func() {
		br := bufio.NewReader(c)
		for {
			_ = c.SetReadDeadline(time.Now().Add(answerTimeout))
			resp, err := readResponse(br)
			if err != nil {
				select {
				case <-done:
					readErr <- nil
				default:
					readErr <- fmt.Errorf("read answer: %w", err)
				}
				return
			}
			switch resp.Code {
			case codec.RespSuccess:
				atomic.AddInt64(&res.ok, 1)
			case codec.RespSystemBusy:
				atomic.AddInt64(&res.busy, 1)
			default:
				readErr <- fmt.Errorf("send answered %d %s", resp.Code, resp.Remark)
				return
			}
			outstanding.Add(-1)
			<-window
		}
	}()
	var opaque int32
	fail := func(err error) producerResult {
		res.err = err
		return res
	}
loop:
	for {
		select {
		case <-stop:
			break loop
		case err := <-readErr:
			return fail(err)
		case window <- struct{}{}:
		}
		opaque++
		outstanding.Add(1)
		_ = c.SetWriteDeadline(time.Now().Add(answerTimeout))
		if _, err := c.Write(encodeRequest(10, opaque, sendHeader(topic, (id+int(opaque))%8, ""), body)); err != nil {
			return fail(fmt.Errorf("write send: %w", err))
		}
	}
	// Every answer still due arrives.
	deadline := time.Now().Add(answerTimeout)
	for outstanding.Load() > 0 {
		select {
		case err := <-readErr:
			return fail(err)
		default:
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("%d answers missing", outstanding.Load()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(done)
	_ = c.SetReadDeadline(time.Now())
	<-readErr
	return producerResult{ok: atomic.LoadInt64(&res.ok), busy: atomic.LoadInt64(&res.busy)}
}

// runProbe asks GET_MAX_OFFSET every 50 ms on its own connection until stop.
func runProbe(addr, topic string, stop <-chan struct{}, n *atomic.Int64) error {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := int32(1); ; i++ {
		select {
		case <-stop:
			return nil
		case <-time.After(50 * time.Millisecond):
		}
		if err := pingConn(c, i); err != nil {
			return err
		}
		n.Add(1)
	}
}

// pingConn sends GET_MAX_OFFSET on c and reads its answer.
func pingConn(c net.Conn, opaque int32) error {
	_ = c.SetDeadline(time.Now().Add(answerTimeout))
	if _, err := c.Write(encodeRequest(30, opaque, map[string]string{"topic": "TBW102", "queueId": "0"}, nil)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	resp, err := readResponse(c)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if resp.Opaque != opaque || resp.Code != codec.RespSuccess {
		return fmt.Errorf("answer opaque %d code %d %s", resp.Opaque, resp.Code, resp.Remark)
	}
	return nil
}

// hostileClient pipelines pulls and 1 MiB sends and never reads; when the broker closes it, it connects
// again.
type hostileClient struct {
	addr, topic, pullTopic string
	conns, written, closed atomic.Int64
}

func (h *hostileClient) run(stop <-chan struct{}) {
	big := bytes.Repeat([]byte{'h'}, overloadBigBody)
	for {
		select {
		case <-stop:
			return
		default:
		}
		d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			return errors.Join(err, serr)
		}}
		c, err := d.Dial("tcp", h.addr)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		h.conns.Add(1)
		h.flood(c, big, stop)
		_ = c.Close()
	}
}

func (h *hostileClient) flood(c net.Conn, big []byte, stop <-chan struct{}) {
	pull := map[string]string{"consumerGroup": "IT_overload_hostile", "topic": h.pullTopic, "queueId": "0",
		"queueOffset": "0", "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0", "expressionType": "TAG"}
	for i := int32(1); ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		var frame []byte
		if i%16 == 0 {
			frame = encodeRequest(10, i, sendHeader(h.topic, int(i)%8, ""), big)
		} else {
			frame = encodeRequest(11, i, pull, nil)
		}
		for len(frame) > 0 {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			n, err := c.Write(frame)
			frame = frame[n:]
			var ne net.Error
			if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
				h.closed.Add(1)
				return
			}
		}
		h.written.Add(1)
	}
}

// TestConnectionLimit: rmqd with serverMaxConnections=50 serves 50 connections on its broker port, closes
// the ones beyond at accept, and takes new ones once places are freed. rmqd only (Apache has no such limit).
func TestConnectionLimit(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	const limit = 50
	tg := harness.StartRmqd(t, harness.Options{BrokerConf: map[string]string{"serverMaxConnections": strconv.Itoa(limit)}})
	// The harness's own readiness probes may still hold a place: wait until all 50 are served.
	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			_ = c.Close()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for len(open) < limit {
		c, err := net.DialTimeout("tcp", tg.BrokerAddr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if err := pingConn(c, 1); err != nil {
			_ = c.Close()
			if time.Now().After(deadline) {
				t.Fatalf("only %d connections served: %v", len(open), err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		open = append(open, c)
	}
	for i := 0; i < 5; i++ {
		c, err := net.DialTimeout("tcp", tg.BrokerAddr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if err := pingConn(c, 2); err == nil {
			t.Errorf("connection %d past the limit was served", limit+i+1)
		}
		_ = c.Close()
	}
	for i, c := range open {
		if err := pingConn(c, 3); err != nil {
			t.Fatalf("connection %d within the limit: %v", i, err)
		}
	}
	_ = open[0].Close()
	open = open[1:]
	deadline = time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", tg.BrokerAddr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if pingConn(c, 4) == nil {
			open = append(open, c)
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a freed place was not taken again")
		}
		time.Sleep(50 * time.Millisecond)
	}
	log, err := os.ReadFile(filepath.Join(tg.LogDir, "rmqd.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "connection limit reached") {
		t.Errorf("rmqd.log does not mention the refused connections")
	}
}

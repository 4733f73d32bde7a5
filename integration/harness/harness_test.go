package harness

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSoftRecordsInsteadOfFailing(t *testing.T) {
	r := Soft(t, func(tb TB) {
		tb.Errorf("first %d", 1)
		tb.Fatalf("second")
		t.Error("unreachable: Fatalf must end the body")
	})
	if !r.Failed || r.Skipped || len(r.Messages) != 2 || r.Messages[0] != "first 1" {
		t.Fatalf("got %+v", r)
	}
	if r := Soft(t, func(tb TB) {}); r.Failed || r.Skipped || len(r.Messages) != 0 {
		t.Fatalf("passing body: got %+v", r)
	}
	if r := Soft(t, func(tb TB) { tb.Skipf("no jars") }); !r.Skipped || r.Failed {
		t.Fatalf("skipping body: got %+v", r)
	}
	if r := Soft(t, func(tb TB) { panic("boom") }); !r.Failed || !strings.Contains(r.Summary(), "boom") {
		t.Fatalf("panicking body: got %+v", r)
	}
}

func TestFreePortBlockIsFreeAndNotReused(t *testing.T) {
	seen := map[int]bool{}
	for range 20 {
		base := FreePortBlock(t, 4)
		for p := base; p < base+4; p++ {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
			if p < portLow || p >= portHigh {
				t.Fatalf("port %d outside [%d,%d)", p, portLow, portHigh)
			}
			l, err := net.Listen("tcp4", Addr(p))
			if err != nil {
				t.Fatalf("port %d not bindable: %v", p, err)
			}
			_ = l.Close()
		}
	}
}

// fakeNamesrv answers every request with the given code and body, like a name server would.
func fakeNamesrv(t *testing.T, code int, body string) (string, chan probeHeader) {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	reqs := make(chan probeHeader, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var lb [8]byte
				if _, err := io.ReadFull(c, lb[:]); err != nil {
					return
				}
				n, h := binary.BigEndian.Uint32(lb[0:]), binary.BigEndian.Uint32(lb[4:])&0xFFFFFF
				rest := make([]byte, n-4)
				if _, err := io.ReadFull(c, rest); err != nil {
					return
				}
				var req probeHeader
				_ = json.Unmarshal(rest[:h], &req)
				reqs <- req
				hdr, _ := json.Marshal(probeHeader{Code: code, Language: "JAVA", Version: 479, Opaque: req.Opaque, Flag: 1})
				out := make([]byte, 8+len(hdr)+len(body))
				binary.BigEndian.PutUint32(out[0:], uint32(4+len(hdr)+len(body)))
				binary.BigEndian.PutUint32(out[4:], uint32(len(hdr)))
				copy(out[8:], hdr)
				copy(out[8+len(hdr):], body)
				_, _ = c.Write(out)
			}()
		}
	}()
	return l.Addr().String(), reqs
}

func TestRouteProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body := `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"c"}],"queueDatas":[]}`
	addr, reqs := fakeNamesrv(t, 0, body)
	ok, why, err := routeHasBroker(ctx, addr, "TBW102", "127.0.0.1:10911")
	if err != nil || !ok {
		t.Fatalf("ok=%v why=%q err=%v", ok, why, err)
	}
	req := <-reqs
	if req.Code != codeGetRouteInfoByTopic || req.ExtFields["topic"] != "TBW102" || req.Flag != 0 {
		t.Fatalf("request %+v", req)
	}
	if ok, _, _ := routeHasBroker(ctx, addr, "TBW102", "127.0.0.1:1"); ok {
		t.Fatal("matched a broker that is not in the route")
	}
	addr17, _ := fakeNamesrv(t, 17, "")
	if ok, why, err := routeHasBroker(ctx, addr17, "TBW102", "127.0.0.1:10911"); ok || err != nil || !strings.Contains(why, "code 17") {
		t.Fatalf("TOPIC_NOT_EXIST: ok=%v why=%q err=%v", ok, why, err)
	}
}

func TestLastJSONLine(t *testing.T) {
	out := []byte("noise\n{\"a\":1}\nmore noise\n  {\"ok\":true}  \n\n")
	if got := string(lastJSONLine(out)); got != `{"ok":true}` {
		t.Fatalf("got %q", got)
	}
	if lastJSONLine([]byte("no json here\n")) != nil {
		t.Fatal("found JSON in none")
	}
}

// The Java runner's Bodies.make for ("rmqd-it", 0, 5000) digests to this (taken from a runner result).
func TestMakeBodyMatchesJavaRunner(t *testing.T) {
	const want = "cfc0e7859ade3a0599d87090485865debaa8cd24b73ca27417c906db67cd020b"
	if got := Sha256Hex(MakeBody("rmqd-it", 0, 5000)); got != want {
		t.Fatalf("sha256 %s, want %s (Java Bodies.make drifted from MakeBody)", got, want)
	}
	if got := string(MakeBody("p", 3, 8)); got != "p-3-hijk" {
		t.Fatalf("got %q", got)
	}
}

func TestTailSkipsLogbackNoiseAndKeepsLastLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	var b strings.Builder
	for i := range 100 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%3))
		b.WriteString("\n")
		b.WriteString("03:22:09,654 |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext - noise\n")
	}
	b.WriteString("last\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(Tail(path, 5), "\n")
	if len(got) != 5 || got[4] != "last" || strings.Contains(strings.Join(got, "\n"), "logback") {
		t.Fatalf("got %q", got)
	}
}

func TestProcStopKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	// The shell ignores SIGTERM and starts a child that does too: only the group SIGKILL ends both.
	script := `trap '' TERM; (trap '' TERM; sleep 60) & echo started; wait`
	var p *Proc
	r := Soft(t, func(tb TB) {
		p = startProc(tb, "sleeper", filepath.Join(dir, "p.log"), dir, nil, "sh", "-c", script)
		p.TermGrace = 200 * time.Millisecond
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(Tail(p.LogPath, 5), "started") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		p.Stop(tb)
	})
	if r.Failed {
		t.Fatalf("stop: %s", r.Summary())
	}
	if exited, _ := p.Exited(); !exited {
		t.Fatal("leader still running")
	}
	// kill(-pgid, 0) fails with ESRCH once no process of the group is left.
	deadline := time.Now().Add(3 * time.Second)
	for processGroupAlive(p.Pid()) {
		if time.Now().After(deadline) {
			t.Fatal("a child of the process group survived Stop")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

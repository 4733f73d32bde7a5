package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// The machine's floor for a fixed-rate row: what one request costs a server
// that does nothing but wake, read 1 KiB and write it back, on the event loop
// library rmqd uses. At a fixed rate a broker goes idle between messages, and
// on a virtual machine each wake-up from idle costs tens of microseconds of
// kernel time, whatever the server does after it. An end-to-end message wakes
// the broker at least twice (the send arriving, the consumer's next pull
// arriving), so twice this figure is what no broker can go under here without
// answering several messages per wake-up.

// WakeFloor is the bare echo server's CPU per request at one rate.
type WakeFloor struct {
	Rate     float64 `json:"rate"`
	Requests int     `json:"requests"`
	CPUUs    float64 `json:"cpuUsPerRequest"`
}

// echoServer is the bare server: every byte read is written back.
type echoServer struct {
	gnet.BuiltinEventEngine
	ready chan struct{}
}

func (s *echoServer) OnBoot(gnet.Engine) gnet.Action {
	close(s.ready)
	return gnet.None
}

func (s *echoServer) OnTraffic(c gnet.Conn) gnet.Action {
	b, _ := c.Next(-1)
	_, _ = c.Write(b)
	return gnet.None
}

// serveEcho runs the echo server (the -echo-server child) and says "ready" on
// stdout once it listens.
func serveEcho(addr string) error {
	s := &echoServer{ready: make(chan struct{})}
	go func() {
		<-s.ready
		fmt.Println("ready")
	}()
	return gnet.Run(s, "tcp://"+addr, gnet.WithMulticore(true))
}

// probeWakeFloor starts this binary as an echo server in its own process and
// sends it 1 KiB requests at each rate for d, one at a time, paced like the
// end-to-end rows' producer.
func probeWakeFloor(ctx context.Context, rates []float64, d time.Duration) ([]WakeFloor, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-echo-server", addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start echo server: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	// gnet's own log lines come first.
	for sc := bufio.NewScanner(out); ; {
		if !sc.Scan() {
			return nil, fmt.Errorf("echo server did not start: %v", sc.Err())
		}
		if sc.Text() == "ready" {
			break
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	buf := make([]byte, 1024)
	var runs []WakeFloor
	for _, rate := range rates {
		if _, err := echoAt(ctx, c, buf, rate, time.Second); err != nil { // warm-up
			return runs, err
		}
		c0, err := cpuMicros(cmd.Process.Pid)
		if err != nil {
			return runs, err
		}
		n, err := echoAt(ctx, c, buf, rate, d)
		if err != nil {
			return runs, err
		}
		c1, err := cpuMicros(cmd.Process.Pid)
		if err != nil {
			return runs, err
		}
		runs = append(runs, WakeFloor{Rate: rate, Requests: n, CPUUs: float64(c1-c0) / float64(n)})
	}
	return runs, nil
}

// echoAt sends one request every 1/rate (at once when behind) for d and
// reads each answer before the next.
func echoAt(ctx context.Context, c net.Conn, buf []byte, rate float64, d time.Duration) (int, error) {
	gap := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	n := 0
	for next := start; next.Sub(start) < d; next = next.Add(gap) {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
		if _, err := c.Write(buf); err != nil {
			return n, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return n, err
		}
		n++
	}
	if n == 0 {
		return 0, errors.New("no request in the window")
	}
	return n, nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"os"
	"time"
)

// pprofEnv names an address (e.g. 127.0.0.1:6060) on which rmqd serves Go's
// profiling endpoints, so a running broker can be profiled under real load.
const pprofEnv = "RMQD_PPROF"

// pprofPublicEnv=1 lets RMQD_PPROF listen beyond loopback: the endpoints have
// no auth, and a profile or trace runs as long as the caller asks.
const pprofPublicEnv = "RMQD_PPROF_PUBLIC"

// startPprof serves /debug/pprof/ until ctx ends; nothing when the variable is unset.
func startPprof(ctx context.Context, logger *slog.Logger) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
	}
	if err := checkPprofAddr(addr, os.Getenv(pprofPublicEnv) == "1"); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof server", "err", err)
		}
	}()
	logger.Info("pprof listening", "addr", ln.Addr().String())
	return nil
}

// checkPprofAddr refuses an address beyond loopback (":6060" is every
// interface) unless public.
func checkPprofAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", pprofEnv, addr, err)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s=%s listens beyond loopback; set %s=1 to allow it", pprofEnv, addr, pprofPublicEnv)
}

package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// pprofEnv names an address (e.g. 127.0.0.1:6060) on which rmqd serves Go's
// profiling endpoints, so a running broker can be profiled under real load.
const pprofEnv = "RMQD_PPROF"

// startPprof serves /debug/pprof/ until ctx ends; nothing when the variable is unset.
func startPprof(ctx context.Context, logger *slog.Logger) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
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

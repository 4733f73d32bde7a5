// Command rmqd runs a RocketMQ name server and broker that the official clients,
// mqadmin and the dashboard use unchanged.
//
//	rmqd [-c broker.conf]                    standalone: name server + broker
//	rmqd namesrv [-c namesrv.conf]           name server only
//	rmqd broker -c broker.conf -n host:9876  broker only
//	rmqd check [-repair] STORE_DIR           offline store consistency check
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const usage = `rmqd: a RocketMQ name server and broker.

Usage:
  rmqd [standalone] [-c broker.conf] [-n addr] [-p]   name server and broker in one process (default)
  rmqd namesrv [-c namesrv.conf] [-p]                name server only
  rmqd broker -c broker.conf [-n addr] [-p]          broker only
  rmqd check [-repair] STORE_DIR                     check a stopped broker's store offline

Flags:
  -c file   configuration file in the Java broker.conf / namesrv.conf format (key=value)
  -n addrs  name server list host:port;host:port (overrides namesrvAddr)
  -p        print the effective configuration and exit
  -h        this help
  -log-format text|json   log line format (default text)
  -log-file PATH          log to PATH instead of standard error
  -log-max-size MiB       rotate PATH before it grows past this size (default 100; 0 never)
  -log-keep N             rotated files kept, PATH.1 newest .. PATH.N (default 5)

Standalone listens on namesrvListenPort (9876) and listenPort (10911) of 127.0.0.1
only unless bindAddress (or a non-loopback brokerIP1) is set, advertises 127.0.0.1
unless brokerIP1 is set, and keeps its store under ./store.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	mode       string
	configFile string
	namesrv    string
	print      bool
	log        logOptions
}

func parseArgs(args []string, stderr io.Writer) (options, error) {
	opts := options{mode: "standalone", log: defaultLogOptions()}
	if len(args) > 0 && (args[0] == "namesrv" || args[0] == "broker" || args[0] == "standalone") {
		opts.mode, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("rmqd "+opts.mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	fs.StringVar(&opts.configFile, "c", "", "configuration file")
	fs.StringVar(&opts.namesrv, "n", "", "name server addresses")
	fs.BoolVar(&opts.print, "p", false, "print effective configuration")
	fs.StringVar(&opts.log.format, "log-format", opts.log.format, "text or json")
	fs.StringVar(&opts.log.file, "log-file", "", "log file")
	fs.IntVar(&opts.log.maxSize, "log-max-size", opts.log.maxSize, "MiB before rotation")
	fs.IntVar(&opts.log.keep, "log-keep", opts.log.keep, "rotated files kept")
	if err := fs.Parse(args); err != nil {
		return opts, err
	}
	if fs.NArg() > 0 {
		return opts, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := opts.log.validate(); err != nil {
		return opts, err
	}
	if opts.mode == "broker" && opts.configFile == "" && opts.namesrv == "" {
		return opts, errors.New("broker mode needs -c broker.conf or -n namesrvAddr")
	}
	return opts, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return runCheck(args[1:], stdout, stderr)
	}
	opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rmqd: %v\n", err)
		return 2
	}
	logger, closeLog, err := newLogger(opts.log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rmqd: %v\n", err)
		return 1
	}
	defer closeLog.Close()
	if !opts.print {
		raiseNoFileLimit(logger)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	served := make(chan struct{})
	defer close(served)
	go watchSignals(sigs, served, cancel, shutdownLimit, logger, os.Exit)
	if err := serve(ctx, opts, stdout, logger); err != nil {
		logger.Error("rmqd stopped", "err", err)
		return 1
	}
	return 0
}

// shutdownLimit bounds a whole graceful stop (a hung flush, a stuck peer);
// shutdownGrace bounds its first step only.
const shutdownLimit = 60 * time.Second

// watchSignals starts the graceful stop on the first SIGINT/SIGTERM and
// forces the exit on a second one or once limit has passed, as an operator's
// kill -9 would: the store's abort file is removed last, so the next start
// recovers it as after a crash. It returns when served is closed.
func watchSignals(sigs <-chan os.Signal, served <-chan struct{}, cancel context.CancelCauseFunc,
	limit time.Duration, logger *slog.Logger, exit func(int)) {
	var sig os.Signal
	select {
	case sig = <-sigs:
	case <-served:
		return
	}
	cancel(fmt.Errorf("signal %v", sig))
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case sig = <-sigs:
		logger.Error("second signal: exiting before the shutdown finished; the next start recovers the store as after a crash", "signal", sig.String())
	case <-t.C:
		logger.Error("shutdown took too long: exiting; the next start recovers the store as after a crash", "limit", limit)
	case <-served:
		return
	}
	exit(1)
}

package main

import (
	"log/slog"
	"syscall"
)

// raiseNoFileLimit lifts the soft open-files limit to the hard one: every
// client connection is a descriptor, and the common soft default (1024) would
// refuse connections long before serverMaxConnections does.
func raiseNoFileLimit(logger *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		logger.Warn("cannot read the open-files limit", "err", err)
		return
	}
	if lim.Cur < lim.Max {
		old := lim.Cur
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			logger.Warn("cannot raise the open-files limit", "soft", old, "hard", lim.Max, "err", err)
			return
		}
	}
	logger.Info("open-files limit", "soft", lim.Cur)
}

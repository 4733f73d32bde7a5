//go:build !failpoint

package store

// failpointDelay is a failpoint compiled out: see failpoint.go (build tag failpoint).
func failpointDelay(string) {}

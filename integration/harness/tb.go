package harness

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// TB is the part of testing.TB the harness needs. *testing.T satisfies it, and so does the recorder Soft
// passes to a scenario that is expected to fail, so one scenario body serves both cases.
type TB interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(func())
	TempDir() string
	Context() context.Context
}

// SoftResult is what a scenario run under Soft did.
type SoftResult struct {
	Failed   bool
	Skipped  bool
	Messages []string // Errorf/Fatalf/Skipf texts, in order
}

// Soft runs body with a TB that records failures instead of failing t: Errorf and Fatalf are logged to t
// (prefixed "soft:") and remembered; Fatalf and Skipf end body like they would end a test. Cleanups and
// TempDir go to t. Use it for (target, scenario) pairs listed as expected failures.
func Soft(t *testing.T, body func(TB)) SoftResult {
	t.Helper()
	s := &softTB{t: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			// A panic in the scenario is a failure of the scenario, not of the test binary.
			if r := recover(); r != nil {
				s.record(false, fmt.Sprintf("panic: %v", r))
			}
		}()
		body(s)
	}()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	return SoftResult{Failed: s.failed, Skipped: s.skipped, Messages: append([]string(nil), s.msgs...)}
}

type softTB struct {
	t       *testing.T
	mu      sync.Mutex
	failed  bool
	skipped bool
	msgs    []string
}

func (s *softTB) record(skip bool, msg string) {
	s.t.Helper()
	s.mu.Lock()
	if skip {
		s.skipped = true
	} else {
		s.failed = true
	}
	s.msgs = append(s.msgs, msg)
	s.mu.Unlock()
	s.t.Logf("soft: %s", msg)
}

func (s *softTB) Helper()      {}
func (s *softTB) Name() string { return s.t.Name() }
func (s *softTB) Logf(format string, args ...any) {
	s.t.Helper()
	s.t.Logf(format, args...)
}
func (s *softTB) Errorf(format string, args ...any) {
	s.t.Helper()
	s.record(false, fmt.Sprintf(format, args...))
}
func (s *softTB) Fatalf(format string, args ...any) {
	s.t.Helper()
	s.record(false, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (s *softTB) Skipf(format string, args ...any) {
	s.t.Helper()
	s.record(true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (s *softTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
func (s *softTB) Cleanup(f func())         { s.t.Cleanup(f) }
func (s *softTB) TempDir() string          { return s.t.TempDir() }
func (s *softTB) Context() context.Context { return s.t.Context() }

// Summary is the recorded messages on one line, shortened for a log.
func (r SoftResult) Summary() string { return joinShort(r.Messages, 600) }

// joinShort joins failure messages on one line of at most limit bytes (and "...").
func joinShort(msgs []string, limit int) string {
	s := strings.Join(msgs, " | ")
	if len(s) > limit {
		s = s[:limit] + "..."
	}
	return s
}

// Reported passes everything to t and says again, as t's last line, what failed it. A failing case prints
// the tails of its processes' logs from its cleanups, after the failure itself; a CI log cut to its tail
// then shows the broker's last lines but not why the case failed. Call it first in the case, so its
// cleanup runs after every other.
func Reported(t *testing.T) TB {
	r := &reportedTB{T: t}
	t.Cleanup(func() {
		r.mu.Lock()
		msgs := joinShort(r.msgs, 2000)
		r.mu.Unlock()
		if msgs != "" {
			t.Logf("=== %s failed: %s", t.Name(), msgs)
		}
	})
	return r
}

type reportedTB struct {
	*testing.T
	mu   sync.Mutex
	msgs []string
}

func (r *reportedTB) note(msg string) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
}

func (r *reportedTB) Errorf(format string, args ...any) {
	r.T.Helper()
	r.note(fmt.Sprintf(format, args...))
	r.T.Errorf(format, args...)
}

func (r *reportedTB) Fatalf(format string, args ...any) {
	r.T.Helper()
	r.note(fmt.Sprintf(format, args...))
	r.T.Fatalf(format, args...)
}

package main

import (
	"strings"
	"testing"

	"rmqd/integration/loadgen/lg"
)

func TestRowMet(t *testing.T) {
	for _, c := range []struct {
		target string
		a, r   float64
		want   string
	}{
		{"", 10, 5, ""},
		{"<= 0.5x", 10, 5, "yes"},
		{"<= 0.5x", 10, 6, "**no**"},
		{"<= 0.5x", 0, 6, ""},
		{">= 2x", 10, 20, "yes"},
		{"<= 0.12x, <= 50", 500, 55, "**no**"}, // ratio holds, absolute does not
		{"<= 0.12x, <= 50", 500, 45, "yes"},
		{"<= 0.12x, <= 50", 300, 45, "**no**"},
		{">= 70", 0, 71, "yes"}, // absolute targets need no Apache figure
		{">= 70", 50, 20, "**no**"},
	} {
		x := row{a: c.a, r: c.r, target: c.target}
		if got := x.met(); got != c.want {
			t.Errorf("met(%q, a=%v r=%v) = %q, want %q", c.target, c.a, c.r, got, c.want)
		}
	}
}

func TestMedianE2E(t *testing.T) {
	run := func(rate, p50, p99, cpu float64, load string) E2ERun {
		x := E2ERun{Rate: rate, CPUUs: cpu, Load: load}
		x.Result.Pull.Lat.P50Us, x.Result.Pull.Lat.P99Us = p50, p99
		return x
	}
	runs := []E2ERun{run(2000, 150, 900, 62.5, "a"), run(10000, 1, 1, 1, "x"), run(2000, 140, 300, 60.0, "b"),
		run(2000, 160, 350, 60.8, "c")}
	at := e2eRunsAt(runs, 2000)
	if len(at) != 3 {
		t.Fatalf("runs at 2000/s: %d, want 3", len(at))
	}
	m := medianE2E(at)
	if m.CPUUs != 60.8 || m.Load != "c" || m.Result.Pull.Lat.P50Us != 150 || m.Result.Pull.Lat.P99Us != 350 {
		t.Fatalf("median: cpu %v load %q p50 %v p99 %v, want 60.8 c 150 350", m.CPUUs, m.Load,
			m.Result.Pull.Lat.P50Us, m.Result.Pull.Lat.P99Us)
	}
	if at[0].CPUUs != 62.5 {
		t.Fatalf("medianE2E reordered its input")
	}
	if m := medianE2E(nil); m.Rate != 0 {
		t.Fatalf("median of none: %+v", m)
	}
	note := e2eRunsNote(&Results{Brokers: []*BrokerResult{{Kind: "rmqd", E2E: runs}}}, &env{e2eRates: []float64{2000, 10000}})
	if want := "rmqd end-to-end broker CPU per message, every run in order (µs; the table shows medians): @2000/s 62.5, 60.0, 60.8."; !strings.Contains(note, want) {
		t.Fatalf("note %q lacks %q", note, want)
	}
}

func TestPathRows(t *testing.T) {
	lag := func(p50, p99 float64) *lg.Summary { return &lg.Summary{P50Us: p50, P99Us: p99} }
	a := &BrokerResult{Kind: "apache", Paths: []PathRun{{Path: "timer", Rate: 2000, CPUUs: 500, Lag: lag(600e3, 1100e3)},
		{Path: "bcq", Batch: 16, InFlight: 16, CPUUs: 10, ReadCPU: 2, Read: &lg.PullResult{MsgPerS: 1e5}}}}
	r := &BrokerResult{Kind: "rmqd", Paths: []PathRun{{Path: "timer", Rate: 2000, CPUUs: 60, Lag: lag(500e3, 1000e3)},
		{Path: "bcq", Batch: 16, InFlight: 16, CPUUs: 6, ReadCPU: 0.5, Read: &lg.PullResult{MsgPerS: 3e5}}}}
	got := map[string]row{}
	for _, x := range pathRows(a, r) {
		got[x.name] = x
	}
	if x := got["timer (TIMER_DELAY_MS 1–2 s) 1 KiB @2000/s broker CPU per message, send + delivery"]; x.met() != "yes" {
		t.Errorf("timer CPU row %+v: met %q", x, x.met())
	}
	if x := got["BatchCQ send 16 × 1 KiB batches ×16 broker CPU per message (saturation)"]; x.met() != "**no**" {
		t.Errorf("bcq CPU row %+v: met %q, want no (0.6x)", x, x.met())
	}
	if x := got["timer (TIMER_DELAY_MS 1–2 s) 1 KiB @2000/s delivery lag p99"]; x.a != 1100 || x.r != 1000 {
		t.Errorf("lag row %+v", x)
	}
	if _, ok := got["transaction (half message + oneway commit) 1 KiB @2000/s broker CPU per message, send + commit"]; ok {
		t.Errorf("a row for a path neither broker ran")
	}
}

package main

import "testing"

// The benchmark Producer's output lines (rocketmq-example 5.5.0) as the driver parses them.
func TestJavaProducerLines(t *testing.T) {
	rep := "Current Time: 2026-11-30 04:24:30,123 | Send TPS: 2515 | Max RT(ms): 120 | Average RT(ms):   6.123 | Send Failed: 0 | Response Failed: 0"
	m := javaReport.FindStringSubmatch(rep)
	if m == nil || m[1] != "2515" || m[3] != "6.123" {
		t.Fatalf("report line: %q", m)
	}
	done := "[Complete] Send Total: 20000 | Send TPS: 3162 | Max RT(ms): 787 | Average RT(ms):   4.990 | Send Failed: 3 | Response Failed: 1"
	m = javaComplete.FindStringSubmatch(done)
	if m == nil || m[1] != "20000" || m[2] != "3162" || m[3] != "787" || m[4] != "4.990" || m[5] != "3" || m[6] != "1" {
		t.Fatalf("complete line: %q", m)
	}
	short := "[Complete] Send Total: 10 Send Failed: 0 Response Failed: 0"
	m = javaComplete.FindStringSubmatch(short)
	if m == nil || m[1] != "10" || m[5] != "0" || m[6] != "0" {
		t.Fatalf("short complete line: %q", m)
	}
}

func TestParseDD(t *testing.T) {
	for line, want := range map[string]float64{
		"536870912 bytes (537 MB, 512 MiB) copied, 2.5 s, 215 MB/s": 536870912 / 2.5 / 1e6,
		"1 GB/s": 1000,
	} {
		if got := parseDD(line); got < want*0.99 || got > want*1.01 {
			t.Errorf("parseDD(%q) = %v, want %v", line, got, want)
		}
	}
}

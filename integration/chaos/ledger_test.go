package chaos

import "testing"

// TestLedgerCounts: a redelivery is a duplicate, not a reorder; a first delivery behind a later message of
// its key on the orderly topic is a reorder; keys and the concurrent topic are independent.
func TestLedgerCounts(t *testing.T) {
	l := newLedger()
	for _, id := range []string{
		"o-0-0", "o-0-1", "o-0-1", "o-0-0", // redeliveries after 1: duplicates only
		"o-0-3", "o-0-2", // 2 after 3: reordered
		"o-1-0", "o-1-1", // another key, in order
		"c-0-5", "c-0-4", // concurrent topic: order is not promised
	} {
		l.deliver(body(id))
	}
	dups := 0
	for _, n := range l.delivered {
		if n > 1 {
			dups++
		}
	}
	if dups != 2 || l.reordered != 1 || len(l.reIDs) != 1 || l.reIDs[0] != "o-0-2" {
		t.Fatalf("duplicated %d, reordered %d %v; want 2 and 1 [o-0-2]", dups, l.reordered, l.reIDs)
	}
}

// TestLostByQueue: a loss report groups the Go producers' lost sends by queue with their offset range and
// counts the rest (the Java producer's) apart.
func TestLostByQueue(t *testing.T) {
	l := newLedger()
	l.placed("c-0-1", "T", 1, 40)
	l.placed("c-0-2", "T", 1, 44)
	l.placed("c-1-7", "T", 3, 9)
	l.placed("c-1-8", "T", 0, 1) // not lost
	got := l.lostByQueue([]string{"c-0-2", "c-1-7", "c-0-1", "c-2-0"})
	want := "T/1: 2 (offsets 40-44); T/3: 1 (offsets 9-9); 1 from the Java producer (queue not known)"
	if got != want {
		t.Fatalf("lostByQueue = %q, want %q", got, want)
	}
}

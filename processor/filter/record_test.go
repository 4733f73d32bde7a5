package filter

import (
	"net/netip"
	"strings"
	"testing"

	"rmqd/codec"
)

func encodeRecord(t testing.TB, topic, props string, body []byte, born, store netip.AddrPort) []byte {
	t.Helper()
	m := &codec.Message{Topic: topic, Properties: props, Body: body, BornHost: born, StoreHost: store,
		QueueOffset: 7, CommitLogOffset: 4096, BornTimestamp: 1700000000000, StoreTimestamp: 1700000000001}
	buf := make([]byte, codec.RecordSize(m))
	if n := codec.EncodeRecord(buf, m); n != len(buf) {
		t.Fatalf("EncodeRecord wrote %d of %d", n, len(buf))
	}
	return buf
}

func TestRecordProperties(t *testing.T) {
	v4 := netip.MustParseAddrPort("10.0.0.5:51000")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:10911")
	props := kv("TAGS", "TagA", "a", "5", "UNIQ_KEY", "ABC")
	for _, tc := range []struct {
		name        string
		topic       string
		born, store netip.AddrPort
	}{
		{"v4", "TopicTest", v4, v4},
		{"born v6", "TopicTest", v6, v4},
		{"store v6", "TopicTest", v4, v6},
		{"both v6", "TopicTest", v6, v6},
		{"magic v2", "%RETRY%" + strings.Repeat("g", 150), v4, v6},
		{"empty topic and body", "", v4, v4},
	} {
		body := []byte("hello \x01\x02 body")
		if tc.topic == "" {
			body = nil
		}
		rec := encodeRecord(t, tc.topic, props, body, tc.born, tc.store)
		got, ok := recordProperties(rec)
		if !ok || got != props {
			t.Errorf("%s: properties %q, %v", tc.name, got, ok)
		}
		e, _ := Compile(TypeSQL92, "a > 4 AND TAGS = 'TagA'")
		if !e.MatchRecord(rec) {
			t.Errorf("%s: record did not match", tc.name)
		}
		e, _ = Compile(TypeSQL92, "a > 5")
		if e.MatchRecord(rec) {
			t.Errorf("%s: record matched a > 5", tc.name)
		}
		// Every truncation is refused without panicking.
		for n := range len(rec) - 1 {
			if _, ok := recordProperties(rec[:n]); ok && n < len(rec)-len(props) {
				t.Errorf("%s: truncated to %d accepted", tc.name, n)
			}
			e.MatchRecord(rec[:n])
		}
	}
}

func TestRecordWithoutProperties(t *testing.T) {
	rec := encodeRecord(t, "T", "", []byte("x"), netip.MustParseAddrPort("1.2.3.4:5"), netip.MustParseAddrPort("1.2.3.4:6"))
	if p, ok := recordProperties(rec); !ok || p != "" {
		t.Fatalf("%q %v", p, ok)
	}
	isNull, _ := Compile(TypeSQL92, "a IS NULL")
	eq, _ := Compile(TypeSQL92, "a = 1")
	if !isNull.MatchRecord(rec) || eq.MatchRecord(rec) {
		t.Error("a record without properties has every property NULL")
	}
}

func TestRecordMalformed(t *testing.T) {
	rec := encodeRecord(t, "T", kv("a", "1"), []byte("x"), netip.MustParseAddrPort("1.2.3.4:5"), netip.MustParseAddrPort("1.2.3.4:6"))
	e, _ := Compile(TypeSQL92, "a IS NULL OR a = 1")
	if !e.MatchRecord(rec) {
		t.Fatal("well-formed record")
	}
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), rec...)
		f(b)
		return b
	}
	bodyLenPos := 84
	cases := map[string][]byte{
		"blank magic":       mutate(func(b []byte) { copy(b[4:], []byte{0xCB, 0xD4, 0x31, 0x94}) }),
		"negative body len": mutate(func(b []byte) { b[bodyLenPos] = 0x80 }),
		"huge body len":     mutate(func(b []byte) { b[bodyLenPos+1] = 0x7F }),
		"negative topic":    mutate(func(b []byte) { b[bodyLenPos+4+1] = 0x80 }),
		"long props":        mutate(func(b []byte) { b[bodyLenPos+4+1+1+1] = 0x7F }),
		"v6 flag on v4":     mutate(func(b []byte) { b[39] |= 0x30 }),
	}
	for name, b := range cases {
		if e.MatchRecord(b) {
			t.Errorf("%s: matched", name)
		}
	}
	// A negative properties length reads as "no properties", as in Java.
	neg := mutate(func(b []byte) { b[bodyLenPos+4+1+1+1] = 0xFF })
	if p, ok := recordProperties(neg); !ok || p != "" {
		t.Errorf("negative properties length: %q %v", p, ok)
	}
}

package filter

import (
	"net/netip"
	"slices"
	"testing"

	"rmqd/codec"
	"rmqd/compat"
)

var fuzzHost = netip.MustParseAddrPort("10.0.0.5:10911")

// FuzzCompile: no input panics either compiler, and whatever compiles can be
// evaluated.
func FuzzCompile(f *testing.F) {
	for _, s := range validExprs {
		f.Add(s)
	}
	for _, s := range invalidExprs[:20] {
		f.Add(s)
	}
	f.Add("TagA || TagB")
	f.Fuzz(func(t *testing.T, expr string) {
		tags, codes, all := ParseTags(expr)
		if all != (expr == "" || expr == "*") {
			t.Fatalf("ParseTags(%q) all=%v", expr, all)
		}
		for _, tag := range tags {
			if tag == "" || javaTrim(tag) != tag || !slices.Contains(codes, compat.JavaStringHash(tag)) {
				t.Fatalf("ParseTags(%q): tag %q", expr, tag)
			}
		}
		if te, err := Compile(TypeTag, expr); err == nil {
			te.MatchTagsCode(int64(compat.JavaStringHash(expr)))
		}
		e, err := Compile(TypeSQL92, expr)
		if err != nil {
			return
		}
		for _, props := range []string{"", benchProps, kv("a", "1", "b", "x", "c", "1.5")} {
			e.MatchEncodedProperties(props)
		}
		e.MatchProperties(func(string) (string, bool) { return "1", true })
		e.MatchProperties(nil)
	})
}

// FuzzEvaluate: the three ways of reading properties agree, and a record built
// from the properties matches exactly when its properties string does.
func FuzzEvaluate(f *testing.F) {
	for _, c := range evalCases {
		f.Add(c.expr, c.props)
	}
	f.Fuzz(func(t *testing.T, expr, props string) {
		e, err := Compile(TypeSQL92, expr)
		if err != nil {
			return
		}
		want := e.MatchEncodedProperties(props)
		m := codec.ParseProperties(props)
		get := func(n string) (string, bool) { v, ok := m[n]; return v, ok }
		if got := e.MatchProperties(get); got != want {
			t.Fatalf("%q on %q: map lookup %v, string lookup %v", expr, props, got, want)
		}
		if len(props) > 32767 {
			return
		}
		msg := &codec.Message{Topic: "TopicTest", Body: []byte("body"), Properties: props, BornHost: fuzzHost, StoreHost: fuzzHost}
		rec := make([]byte, codec.RecordSize(msg))
		codec.EncodeRecord(rec, msg)
		if got := e.MatchRecord(rec); got != want {
			t.Fatalf("%q on %q: record %v, string %v", expr, props, got, want)
		}
	})
}

// FuzzMatchRecord: arbitrary bytes as a record never panic.
func FuzzMatchRecord(f *testing.F) {
	msg := &codec.Message{Topic: "T", Body: []byte("x"), Properties: kv("a", "1"), BornHost: fuzzHost, StoreHost: fuzzHost}
	rec := make([]byte, codec.RecordSize(msg))
	codec.EncodeRecord(rec, msg)
	f.Add(rec)
	f.Add(rec[:40])
	e, err := Compile(TypeSQL92, "a = 1 OR a IS NULL")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if props, ok := recordProperties(rec); ok && len(props) > len(rec) {
			t.Fatalf("properties longer than the record")
		}
		e.MatchRecord(rec)
	})
}

package filter

import (
	"net/netip"
	"testing"

	"rmqd/compat"
)

// benchProps looks like what a Java producer stores: client bookkeeping plus a
// few user properties, in HashMap order.
var benchProps = kv(
	"UNIQ_KEY", "7F0000010BB818B4AAC2527F4E8A0000",
	"CLUSTER", "DefaultCluster",
	"region", "hangzhou",
	"WAIT", "true",
	"TAGS", "TagA",
	"KEYS", "order-20231130-0001",
	"a", "5",
	"price", "99.5",
	"big", "1e400",
	"huge", "-1e99999999999",
)

const benchSQL = "a BETWEEN 1 AND 10 AND region IN ('hangzhou', 'beijing') AND TAGS = 'TagA'"

func BenchmarkEvaluateSQL(b *testing.B) {
	e, err := Compile(TypeSQL92, benchSQL)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !e.MatchEncodedProperties(benchProps) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkMatchRecord(b *testing.B) {
	e, err := Compile(TypeSQL92, benchSQL)
	if err != nil {
		b.Fatal(err)
	}
	host := netip.MustParseAddrPort("10.0.0.5:10911")
	rec := encodeRecord(b, "TopicTest", benchProps, make([]byte, 256), host, host)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if !e.MatchRecord(rec) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkTagMatch(b *testing.B) {
	e, err := Compile(TypeTag, "TagA || TagB || TagC")
	if err != nil {
		b.Fatal(err)
	}
	code := int64(compat.JavaStringHash("TagC"))
	b.ReportAllocs()
	for b.Loop() {
		if !e.MatchTagsCode(code) || !e.MatchRecord(nil) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkCompileSQL(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(TypeSQL92, benchSQL); err != nil {
			b.Fatal(err)
		}
	}
}

// Per-message checks must not allocate, including the paths that convert
// strings to numbers and those that end in a Java exception.
func TestEvaluateAllocs(t *testing.T) {
	host := netip.MustParseAddrPort("10.0.0.5:10911")
	rec := encodeRecord(t, "TopicTest", benchProps, []byte("body"), host, host)
	exprs := []string{
		benchSQL,
		"price > 10.5 AND price < 1e3 AND a <> 4 AND KEYS STARTSWITH 'order' AND b IS NULL",
		"a = TRUE OR a = 'x' OR -a = 1 OR a IN ('1','2','3','4','5','6')",
		"big > 1.5 OR huge < 1.5 OR a = 2147483648 OR price = 99",
		"region > 1",
		"price > a",
	}
	get := func(name string) (string, bool) { return "5", true }
	for _, s := range exprs {
		e, err := Compile(TypeSQL92, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		n := testing.AllocsPerRun(100, func() {
			e.MatchRecord(rec)
			e.MatchEncodedProperties(benchProps)
			e.MatchProperties(get)
		})
		if n != 0 {
			t.Errorf("%q: %v allocations per evaluation", s, n)
		}
	}
	tag, _ := Compile(TypeTag, "TagA||TagB")
	if n := testing.AllocsPerRun(100, func() {
		tag.MatchTagsCode(42)
		tag.MatchRecord(rec)
		tag.MatchProperties(get)
	}); n != 0 {
		t.Errorf("tag filter: %v allocations", n)
	}
}

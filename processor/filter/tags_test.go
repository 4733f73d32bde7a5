package filter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"rmqd/compat"
)

func TestParseTags(t *testing.T) {
	tests := []struct {
		in   string
		tags []string
		all  bool
	}{
		{"", nil, true},
		{"*", nil, true},
		{"TagA", []string{"TagA"}, false},
		{"TagA||TagB", []string{"TagA", "TagB"}, false},
		{" TagA || TagB ", []string{"TagA", "TagB"}, false},
		{"TagA||TagA", []string{"TagA"}, false},
		{"TagA||||TagB||", []string{"TagA", "TagB"}, false},
		{"a|b", []string{"a|b"}, false},
		{"|||", []string{"|"}, false},
		{"|| ||", nil, false},
		{" * ", []string{"*"}, false}, // only exactly "*" means all
		{"*||a", []string{"*", "a"}, false},
		{"\t\x01tag\x1f ", []string{"tag"}, false},  // String.trim strips every char <= ' '
		{"\u00a0tag", []string{"\u00a0tag"}, false}, // ...and nothing else
		{"标签||タグ", []string{"标签", "タグ"}, false},
	}
	for _, tt := range tests {
		tags, codes, all := ParseTags(tt.in)
		if all != tt.all || !slices.Equal(tags, tt.tags) {
			t.Errorf("ParseTags(%q) = %q, all=%v; want %q, all=%v", tt.in, tags, all, tt.tags, tt.all)
			continue
		}
		if len(codes) != len(tags) {
			t.Errorf("ParseTags(%q): %d codes for %d tags", tt.in, len(codes), len(tags))
			continue
		}
		for i, tag := range tags {
			if codes[i] != compat.JavaStringHash(tag) {
				t.Errorf("ParseTags(%q): code of %q = %d", tt.in, tag, codes[i])
			}
		}
	}
}

func TestParseTagsCollidingCodes(t *testing.T) {
	// "Aa" and "BB" share a Java hash code; the code set holds it once.
	tags, codes, _ := ParseTags("Aa||BB")
	if len(tags) != 2 || len(codes) != 1 || codes[0] != 2112 {
		t.Fatalf("tags %q codes %v", tags, codes)
	}
}

func TestCompileTag(t *testing.T) {
	for _, typ := range []string{"", TypeTag} {
		e, err := Compile(typ, "TagA || TagB")
		if err != nil {
			t.Fatal(err)
		}
		if e.Type() != TypeTag || e.All() || e.String() != "TagA || TagB" || !slices.Equal(e.Tags(), []string{"TagA", "TagB"}) {
			t.Errorf("Compile(%q): %+v", typ, e)
		}
	}
	for _, sub := range []string{"", "*"} {
		e, err := Compile(TypeTag, sub)
		if err != nil || !e.All() || e.String() != "*" {
			t.Errorf("Compile(TAG, %q) = %v, %v", sub, e, err)
		}
	}
	// Java's split leaves no pieces at all for these and FilterAPI throws.
	for _, sub := range []string{"||", "||||"} {
		if _, err := Compile(TypeTag, sub); !errors.Is(err, ErrInvalidExpression) {
			t.Errorf("Compile(TAG, %q) err = %v", sub, err)
		}
	}
	for _, typ := range []string{"sql92", "tag", "FOO", " SQL92"} {
		if _, err := Compile(typ, "a = 1"); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Compile(%q) err = %v", typ, err)
		}
	}
}

func TestMatchTags(t *testing.T) {
	e, _ := Compile(TypeTag, "TagA||TagB")
	hashA := int64(compat.JavaStringHash("TagA"))
	tests := []struct {
		code int64
		want bool
	}{
		{hashA, true},
		{int64(compat.JavaStringHash("TagB")), true},
		{int64(compat.JavaStringHash("TagC")), false},
		{0, false},
		{hashA + 1<<32, true}, // Java compares tagsCode.intValue()
	}
	for _, tt := range tests {
		if got := e.MatchTagsCode(tt.code); got != tt.want {
			t.Errorf("MatchTagsCode(%d) = %v", tt.code, got)
		}
	}
	props := map[string]string{"TAGS": "TagA"}
	get := func(n string) (string, bool) { v, ok := props[n]; return v, ok }
	if !e.MatchProperties(get) {
		t.Error("exact tag TagA not matched")
	}
	props["TAGS"] = "TagC"
	if e.MatchProperties(get) || e.MatchProperties(nil) {
		t.Error("TagC or no properties matched TagA||TagB")
	}
	// The broker filters tags by hash only; the record and properties checks pass.
	if !e.MatchRecord(nil) || !e.MatchEncodedProperties("TAGS\x01TagC\x02") {
		t.Error("tag subscription rejected a record")
	}

	all, _ := Compile(TypeTag, "*")
	if !all.MatchTagsCode(12345) || !all.MatchTagsCode(0) || !all.MatchProperties(nil) {
		t.Error("* must match everything")
	}
	none, _ := Compile(TypeTag, "|| ||")
	if none.MatchTagsCode(0) || none.MatchTagsCode(int64(compat.JavaStringHash(" "))) {
		t.Error("a subscription without tags matched")
	}
}

func TestTagsCode(t *testing.T) {
	if TagsCode("") != 0 || TagsCode("TagA") != int64(compat.JavaStringHash("TagA")) || TagsCode("Aa") != 2112 {
		t.Error("TagsCode")
	}
}

func TestManyTags(t *testing.T) {
	var parts []string
	for i := range 20000 {
		parts = append(parts, fmt.Sprintf(" t%d ", i%5000))
	}
	parts = append(parts, "Aa", "BB")
	e, err := Compile(TypeTag, strings.Join(parts, "||"))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Tags()) != 5002 || len(e.TagCodes()) != 5001 {
		t.Fatalf("%d tags, %d codes", len(e.Tags()), len(e.TagCodes()))
	}
	if e.Tags()[0] != "t0" || e.Tags()[5001] != "BB" {
		t.Errorf("order: %q %q", e.Tags()[0], e.Tags()[5001])
	}
	if !e.MatchTagsCode(int64(compat.JavaStringHash("t4999"))) || e.MatchTagsCode(int64(compat.JavaStringHash("t5000"))) {
		t.Error("MatchTagsCode on a large set")
	}
	get := func(string) (string, bool) { return "t123", true }
	miss := func(string) (string, bool) { return "t5000", true }
	if !e.MatchProperties(get) || e.MatchProperties(miss) {
		t.Error("MatchProperties on a large set")
	}
}

func TestNoAliasing(t *testing.T) {
	buf := []byte("TagA||TagB")
	s := unsafe.String(&buf[0], len(buf))
	tags, _, _ := ParseTags(s)
	e, _ := Compile(TypeTag, s)
	sqlBuf := []byte("abc = 'x' AND TAGS IN ('TagA')")
	sql, _ := Compile(TypeSQL92, unsafe.String(&sqlBuf[0], len(sqlBuf)))
	for i := range buf {
		buf[i] = 'z'
	}
	for i := range sqlBuf {
		sqlBuf[i] = 'z'
	}
	if tags[0] != "TagA" || e.Tags()[1] != "TagB" || e.String() != "TagA||TagB" {
		t.Errorf("tags alias their input: %q %q %q", tags, e.Tags(), e.String())
	}
	if !sql.MatchEncodedProperties(kv("abc", "x", "TAGS", "TagA")) || sql.String() != "abc = 'x' AND TAGS IN ('TagA')" {
		t.Error("SQL92 expression aliases its input")
	}
}

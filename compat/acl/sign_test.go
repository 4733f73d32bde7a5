package acl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

type kv [][2]string

func (f kv) Len() int                  { return len(f) }
func (f kv) At(i int) (string, string) { return f[i][0], f[i][1] }

type javaVector struct {
	Name          string      `json:"name"`
	Code          int32       `json:"code"`
	AccessKey     []byte      `json:"accessKey"`
	SecretKey     []byte      `json:"secretKey"`
	SecurityToken []byte      `json:"securityToken"`
	Fields        [][2][]byte `json:"fields"`
	Body          []byte      `json:"body"`
	Signature     string      `json:"signature"`
}

// TestSignatureMatchesJava checks the signer against vectors printed by the
// real AclClientRPCHook of rocketmq-acl 4.9.7 and rocketmq-client 5.3.3 (both
// print the same file; testdata/AclVectors.java.txt is the program).
func TestSignatureMatchesJava(t *testing.T) {
	fh, err := os.Open("testdata/java_signatures.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var v javaVector
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		n++
		// The server sees the header fields plus what the hook added.
		var f kv
		for _, p := range v.Fields {
			f = append(f, [2]string{string(p[0]), string(p[1])})
		}
		f = append(f, [2]string{FieldAccessKey, string(v.AccessKey)})
		if v.SecurityToken != nil {
			f = append(f, [2]string{FieldSecurityToken, string(v.SecurityToken)})
		}
		f = append(f, [2]string{FieldSignature, v.Signature})
		if got := Signature(string(v.SecretKey), f, v.Body); got != v.Signature {
			t.Errorf("%s: signature %s, Java %s", v.Name, got, v.Signature)
		}
		// Reversed field order must not matter.
		r := make(kv, len(f))
		for i := range f {
			r[len(f)-1-i] = f[i]
		}
		if got := Signature(string(v.SecretKey), r, v.Body); got != v.Signature {
			t.Errorf("%s reversed: signature %s, Java %s", v.Name, got, v.Signature)
		}
		h := NewMAC(string(v.SecretKey))
		WriteContent(h, nil, f, nil, v.Body)
		if ok, _ := VerifyMAC(h, v.Signature, nil); !ok {
			t.Errorf("%s: EqualSignature false", v.Name)
		}
		if EqualSignature(h.Sum(nil), v.Signature[:len(v.Signature)-2]+"x=") {
			t.Errorf("%s: EqualSignature true for a wrong signature", v.Name)
		}
	}
	if n < 5 {
		t.Fatalf("only %d vectors", n)
	}
}

// TestSignatureGoClientVector is the Go client's own test vector
// (internal/remote/interceptor_test.go of rocketmq-client-go v2.1.2).
func TestSignatureGoClientVector(t *testing.T) {
	h := NewMAC("adiaushdiaushd")
	h.Write([]byte("Hello RocketMQ Client ACL Feature"))
	if !EqualSignature(h.Sum(nil), "tAb/54Rwwcq+pbH8Loi7FWX4QSQ=") {
		t.Fatal("mismatch with the Go client's vector")
	}
}

func TestCompareJava(t *testing.T) {
	// U+FFE0 sorts after U+1F600 in UTF-16 (surrogates are 0xD83D...), before
	// it in UTF-8 byte order.
	if compareJava("\uffe0", "\U0001F600") <= 0 {
		t.Fatal("U+FFE0 should sort after U+1F600 as Java does")
	}
	if compareJava("Z", "a") >= 0 || compareJava("", "a") >= 0 || compareJava("ab", "ab") != 0 {
		t.Fatal("ASCII order")
	}
}

func TestWriteContentNoAlloc(t *testing.T) {
	f := kv{{"b", "2"}, {"a", "1"}, {"AccessKey", "ak"}, {"Signature", "x"}}
	h := NewMAC("12345678")
	scratch := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		h.Reset()
		scratch = WriteContent(h, scratch, &f, nil, nil)
	})
	if allocs > 0 {
		t.Fatalf("%v allocations", allocs)
	}
	if string(scratch) != "ak12" {
		t.Fatalf("content %q", scratch)
	}
}

// compareJavaRef is String.compareTo spelled out: both keys whole in UTF-16.
func compareJavaRef(a, b string) int {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func sign(c int) int {
	switch {
	case c < 0:
		return -1
	case c > 0:
		return 1
	}
	return 0
}

// randKey draws from pieces chosen to sit on the orders' edges: ASCII,
// two- and three-byte runes, U+E000..U+FFFF (above the surrogates in UTF-16,
// below supplementary runes in UTF-8), supplementary runes, a real U+FFFD and
// invalid bytes (which decode to U+FFFD).
func randKey(r *rand.Rand) string {
	pieces := []string{"a", "b", "Z", "\x7f", "é", "ÿ", "\u0800", "\ud7ff", "\ue000", "\uffe0", "\uffff", "\ufffd",
		"\U00010000", "\U0001F600", "\U0010FFFF", "\xff", "\x80", "\xe9\x80", "\xf0\x9f", "\xed\xa0\x80"}
	var sb strings.Builder
	for n := r.IntN(6); n > 0; n-- {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

// TestCompareJavaMatchesReference: the early-stopping comparison orders as
// whole-string UTF-16 comparison does, on random keys with a shared prefix
// (so that the difference falls inside or after multi-byte runes).
func TestCompareJavaMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		p := randKey(r)
		a, b := p+randKey(r), p+randKey(r)
		if got, want := sign(compareJava(a, b)), sign(compareJavaRef(a, b)); got != want {
			t.Fatalf("compareJava(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
}

// FuzzCompareJava checks compareJava against the reference on any bytes.
func FuzzCompareJava(f *testing.F) {
	f.Add("\uffe0", "\U0001F600")
	f.Add("a\xe9\x80", "a\xe9\x80\x80")
	f.Add("\ufffd", "\xff")
	f.Add("x\xf0\x9f\x98", "x\xf0\x9f\x98\x80")
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := sign(compareJava(a, b)), sign(compareJavaRef(a, b)); got != want {
			t.Fatalf("compareJava(%+q, %+q) = %d, want %d", a, b, got, want)
		}
		if got, want := sign(compareJava(b, a)), -sign(compareJavaRef(a, b)); got != want {
			t.Fatalf("compareJava(%+q, %+q) = %d, want %d", b, a, got, want)
		}
	})
}

// TestSortFieldsComparisons: the header is sorted before its signature is
// checked, so the number of key comparisons must stay O(n log n) for the
// worst order a client can send (a quadratic sort made ~520,000 comparisons
// of 4,000-byte keys for 1,024 fields).
func TestSortFieldsComparisons(t *testing.T) {
	const n = 1024
	for _, order := range []string{"descending", "ascending", "equal"} {
		var f kv
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("é%04d", n-i)
			switch order {
			case "ascending":
				k = fmt.Sprintf("é%04d", i)
			case "equal":
				k = "é"
			}
			f = append(f, [2]string{k, strconv.Itoa(i)})
		}
		calls := 0
		idx := sortFields(nil, f, func(a, b string) int { calls++; return compareJava(a, b) })
		if bound := 4 * n * bits.Len(n); calls > bound {
			t.Errorf("%s: %d comparisons for %d keys, want at most %d", order, calls, n, bound)
		}
		for p := 1; p < len(idx); p++ {
			ka, _ := f.At(idx[p-1])
			kb, _ := f.At(idx[p])
			if c := compareJavaRef(ka, kb); c > 0 || c == 0 && idx[p-1] > idx[p] {
				t.Fatalf("%s: not sorted stably at %d", order, p)
			}
		}
	}
}

// TestWriteContentRepeatedKey: a repeated key signs its last value only,
// whatever the order of the other fields.
func TestWriteContentRepeatedKey(t *testing.T) {
	var f kv
	for i := 0; i < 100; i++ {
		f = append(f, [2]string{fmt.Sprintf("k%03d", 99-i), ""})
	}
	f = append(f, [2]string{"dup", "1"}, [2]string{"dup", "2"}, [2]string{"dup", "3"}, [2]string{FieldSignature, "s"})
	h := NewMAC("x")
	if got := string(WriteContent(h, nil, f, nil, nil)); got != "3" {
		t.Fatalf("content %q, want the last value only", got)
	}
}

package codec

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestPropertiesGetLastWins(t *testing.T) {
	p := "A\x011\x02B\x01b\x02A\x012\x02"
	v, ok := PropertyValue(p, "A")
	require.True(t, ok)
	require.Equal(t, "2", v)
	_, ok = PropertyValue(p, "NOPE")
	require.False(t, ok)
	// An empty value is no value: Java's decoder drops the piece, so an earlier
	// well-formed value stays.
	v, ok = PropertyValue("A\x011\x02A\x01\x02", "A")
	require.True(t, ok)
	require.Equal(t, "1", v)
	_, ok = PropertyValue("A\x01\x02", "A")
	require.False(t, ok)
	// Only the first 0x01 splits; the value keeps later ones.
	v, _ = PropertyValue("A\x01x\x01y\x02", "A")
	require.Equal(t, "x\x01y", v)

	names := []string{"A", "B", "C"}
	vals := make([]string, 3)
	found := make([]bool, 3)
	PropertyValues(p, names, vals, found)
	require.Equal(t, []string{"2", "b", ""}, vals)
	require.Equal(t, []bool{true, true, false}, found)

	var seen []string
	for i := 0; ; {
		n, v, next, ok := NextProperty(p, i)
		if !ok {
			break
		}
		seen = append(seen, n+"="+v)
		i = next
	}
	require.Equal(t, []string{"A=1", "B=b", "A=2"}, seen, "iteration reports every pair in order")
}

func TestPropertiesMalformedPieces(t *testing.T) {
	odd := "\x01x\x02A\x01\x02B\x01b\x02junk\x02C\x01c"
	require.Equal(t, map[string]string{"B": "b", "C": "c"}, ParseProperties(odd))
	e := EditProperties(odd)
	require.Equal(t, "B\x01b\x02C\x01c\x02", e.String(), "malformed pieces dropped, final 0x02 added")
	for _, s := range []string{"", "\x02", "\x01", "\x01\x02", "A\x01", "AB", "\x02\x02"} {
		require.Empty(t, ParseProperties(s), "%q", s)
		e := EditProperties(s)
		require.Equal(t, "", e.String(), "%q", s)
	}
}

func TestPropertiesEditor(t *testing.T) {
	base := "TAGS\x01TagA\x02KEYS\x01k1 k2\x02"
	e := EditProperties(base)
	require.Equal(t, base, e.String(), "unchanged canonical base comes back as is")

	e.Set(PropTags, "TagB")
	e.Set("NEW", "n")
	e.SetInt(PropRealQueueID, -3)
	e.Delete(PropKeys)
	e.Delete("ABSENT")
	v, ok := e.Get(PropTags)
	require.True(t, ok)
	require.Equal(t, "TagB", v)
	_, ok = e.Get(PropKeys)
	require.False(t, ok)
	v, _ = e.Get(PropRealQueueID)
	require.Equal(t, "-3", v)
	require.True(t, e.Has("NEW"))
	require.False(t, e.Has(PropKeys))
	require.Equal(t, "TAGS\x01TagB\x02NEW\x01n\x02REAL_QID\x01-3\x02", e.String())

	// A set replaces every copy, wherever it was; a later Set of the same name
	// keeps its first position.
	e = EditProperties("REAL_TOPIC\x01evil\x02X\x01x\x02REAL_TOPIC\x01evil2\x02")
	e.Set(PropRealTopic, "first")
	e.Set("Y", "y")
	e.Set(PropRealTopic, "good")
	require.Equal(t, "X\x01x\x02REAL_TOPIC\x01good\x02Y\x01y\x02", e.String())

	// Repeats in the base: one copy, the last value, at the last position.
	e = EditProperties("A\x011\x02B\x01b\x02A\x012\x02")
	require.Equal(t, "B\x01b\x02A\x012\x02", e.String())

	// Empty values are written as Java writes them, and read as absent.
	e = EditProperties("")
	e.Set("E", "")
	require.Equal(t, "E\x01\x02", e.String())
	require.False(t, e.Has("E"))
	e.Set("", "ignored")
	require.Equal(t, "E\x01\x02", e.String())

	// More changes than fit inline.
	e = EditProperties("Z\x01z\x02")
	for i := range 20 {
		e.SetInt(fmt.Sprintf("N%02d", i), int64(i))
	}
	e.Set("N03", "three")
	m := ParseProperties(e.String())
	require.Len(t, m, 21)
	require.Equal(t, "three", m["N03"])
	require.Equal(t, "19", m["N19"])

	// Many repeated pairs (past the stack-tracked size): still last wins, once each.
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "k%d\x01v%d\x02", i%50, i)
	}
	e = EditProperties(sb.String())
	e.Set("k7", "seven")
	out := e.String()
	m = ParseProperties(out)
	require.Len(t, m, 50)
	require.Equal(t, "v199", m["k49"])
	require.Equal(t, "seven", m["k7"])
	requireEachNameOnce(t, out)

	require.Equal(t, "A\x01a\x02B\x01b\x02", SetProperty("A\x01a", "B", "b"))
	require.Equal(t, "B\x01b\x02", DeleteProperty("A\x011\x02B\x01b\x02A\x012\x02", "A"))
	require.Equal(t, "a\x011\x02b\x012\x02", FormatProperties(map[string]string{"b": "2", "a": "1", "": "x", "e": ""}))
}

func requireEachNameOnce(t testing.TB, props string) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; ; {
		n, _, next, ok := NextProperty(props, i)
		if !ok {
			break
		}
		require.False(t, seen[n], "name %q written twice in %q", n, props)
		seen[n] = true
		i = next
	}
	if props != "" {
		require.Equal(t, byte(PropSep), props[len(props)-1], "every pair ends in 0x02")
	}
}

// TestPropertiesAgainstJava compares the decoder and the editor with what Apache
// RocketMQ 5.3.3's MessageDecoder makes of the same strings (testdata/props).
func TestPropertiesAgainstJava(t *testing.T) {
	f, err := os.Open("testdata/props/java.txt")
	require.NoError(t, err)
	defer f.Close()
	unhex := func(s string) string {
		b, err := hex.DecodeString(s)
		require.NoError(t, err)
		return string(b)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		require.Len(t, cols, 3, sc.Text())
		in, javaEnc := unhex(cols[0]), unhex(cols[1])
		want := map[string]string{}
		if cols[2] != "" {
			for _, kv := range strings.Split(cols[2], ",") {
				k, v, _ := strings.Cut(kv, "=")
				want[unhex(k)] = unhex(v)
			}
		}
		require.Equal(t, want, ParseProperties(in), "decode %q", in)
		for k, v := range want {
			got, ok := PropertyValue(in, k)
			require.True(t, ok)
			require.Equal(t, v, got, "get %q in %q", k, in)
		}
		e := EditProperties(in)
		ours := e.String()
		require.Equal(t, want, ParseProperties(ours), "re-encode %q", in)
		requireEachNameOnce(t, ours)
		require.Equal(t, len(javaEnc), len(ours), "same bytes as Java up to order, %q", in)
		require.Equal(t, sortedPairs(javaEnc), sortedPairs(ours))
		// Java's own encoding is canonical: the editor gives it back unchanged.
		je := EditProperties(javaEnc)
		require.Equal(t, javaEnc, je.String())
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 20)
}

func sortedPairs(props string) []string {
	var out []string
	for _, p := range strings.Split(props, string(rune(PropSep))) {
		if p != "" {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func TestPropertiesAllocs(t *testing.T) {
	props := "UNIQ_KEY\x01AC110001000018B4AAC2123456780000\x02WAIT\x01true\x02TAGS\x01tagA\x02KEYS\x01k1 k2\x02"
	names := []string{PropTags, PropKeys, PropUniqKey, PropDelay}
	vals := make([]string, len(names))
	found := make([]bool, len(names))
	n := testing.AllocsPerRun(100, func() {
		_, _ = PropertyValue(props, PropKeys)
		PropertyValues(props, names, vals, found)
		e := EditProperties(props)
		_ = e.String() // unchanged: the base itself
		_, _ = e.Get(PropTags)
		v := ViewProperties(props)
		_, _ = v.Get(PropUniqKey)
		_ = v.Has(PropDelay)
	})
	require.Zero(t, n)
	n = testing.AllocsPerRun(100, func() {
		e := EditProperties(props)
		e.Set(PropRealTopic, "TopicTest")
		e.SetInt(PropRealQueueID, 3)
		e.SetInt(PropTimerOutMs, 1700000000000)
		e.Delete(PropWait)
		_ = e.String()
	})
	require.Equal(t, 1.0, n, "an edit costs the one result string")
	n = testing.AllocsPerRun(100, func() {
		v := ViewProperties(props)
		e := EditProperties(v.Props())
		_ = e.StringView(&v)
		e.Set(PropCluster, "DefaultCluster")
		_ = e.StringView(&v)
		_, _ = v.Get(PropCluster)
	})
	require.Equal(t, 1.0, n, "a view left indexing the result costs nothing more")
}

func TestPropView(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 40; i++ { // past the view's inline pairs: searched instead
		fmt.Fprintf(&b, "N%d\x01v%d\x02", i%20, i)
		props := b.String()
		v := ViewProperties(props)
		for j := 0; j < 22; j++ {
			name := fmt.Sprintf("N%d", j)
			got, ok := v.Get(name)
			want, wantOK := PropertyValue(props, name)
			require.Equal(t, wantOK, ok, "%d pairs, %s", i+1, name)
			require.Equal(t, want, got, "%d pairs, %s: the last pair wins", i+1, name)
		}
	}
	v := ViewProperties("A\x011\x02\x01x\x02A\x01\x02B\x01b")
	got, ok := v.Get("A")
	require.True(t, ok)
	require.Equal(t, "1", got, "an empty value is no value")
	require.True(t, v.Has("B"))
	require.False(t, v.Has(""))
	v.Reset("")
	require.False(t, v.Has("A"))
}

func FuzzProperties(f *testing.F) {
	f.Add("A\x01a\x02A\x01b\x02", "A", "v")
	f.Add("\x01x\x02A\x01\x02B\x01b\x02junk\x02C\x01c", "C", "")
	f.Add("REAL_TOPIC\x01../../evil\x02REAL_QID\x01999\x02", PropRealTopic, "T")
	f.Fuzz(func(t *testing.T, props, name, value string) {
		m := ParseProperties(props)
		for k, v := range m {
			require.NotEmpty(t, k)
			require.NotEmpty(t, v)
			require.NotContains(t, k, string(rune(PropSep)))
			require.NotContains(t, k, string(rune(PropNameValueSep)))
			require.NotContains(t, v, string(rune(PropSep)))
			got, ok := PropertyValue(props, k)
			require.True(t, ok)
			require.Equal(t, v, got)
		}
		view := ViewProperties(props)
		for _, k := range []string{name, "A", "C"} {
			got, ok := view.Get(k)
			want, wantOK := PropertyValue(props, k)
			require.Equal(t, wantOK, ok, "view of %q, name %q", props, k)
			require.Equal(t, want, got)
		}
		e := EditProperties(props)
		out := e.String()
		require.Equal(t, m, ParseProperties(out))
		requireEachNameOnce(t, out)
		again := EditProperties(out)
		require.Equal(t, out, again.String(), "an encoding is canonical")
		requireStringView(t, &e, props)

		// A broker write replaces whatever the client sent under the name.
		if name == "" || strings.ContainsAny(name, "\x01\x02") || strings.Contains(value, "\x02") {
			return
		}
		e.Set(name, value)
		out = e.String()
		requireStringView(t, &e, props)
		requireEachNameOnce(t, out)
		got, ok := PropertyValue(out, name)
		require.Equal(t, value != "", ok)
		require.Equal(t, value, got)
		want := maps(m)
		delete(want, name)
		if value != "" {
			want[name] = value
		}
		require.Equal(t, want, ParseProperties(out))
		e.Delete(name)
		out = e.String()
		_, ok = PropertyValue(out, name)
		require.False(t, ok)
		e.SetInt("N", int64(len(props)))
		e.Set("E", "") // written, but no pair to a reader
		requireStringView(t, &e, props)
	})
}

// requireStringView checks that StringView over a view of props encodes as
// String does and leaves the view a fresh walk of the result would make.
func requireStringView(t *testing.T, e *PropertiesEditor, props string) {
	t.Helper()
	v := ViewProperties(props)
	out := e.StringView(&v)
	require.Equal(t, e.String(), out)
	requireSameView(t, ViewProperties(out), v)
	var other PropView // a view of something else is replaced
	out = e.StringView(&other)
	require.Equal(t, e.String(), out)
	requireSameView(t, ViewProperties(out), other)
}

func requireSameView(t *testing.T, want, got PropView) {
	t.Helper()
	require.Equal(t, want.props, got.props)
	require.Equal(t, want.n, got.n, "pairs indexed in %q", want.props)
	if want.n < 0 {
		return
	}
	require.Equal(t, want.canon, got.canon, "canonical %q", want.props)
	require.Equal(t, want.names[:want.n], got.names[:got.n])
	require.Equal(t, want.vals[:want.n], got.vals[:got.n])
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Into writes the result into the caller's buffer when it fits, and into a new
// string when it does not; either way the encoding is String's.
func TestPropertiesEditorInto(t *testing.T) {
	base := "TAGS\x01a\x02UNIQ_KEY\x01X\x02"
	want := func() string {
		e := EditProperties(base)
		e.Set(PropCluster, "DefaultCluster")
		return e.String()
	}()
	buf := make([]byte, 256)
	e := EditProperties(base)
	e.Set(PropCluster, "DefaultCluster")
	e.Into(buf)
	got := e.String()
	require.Equal(t, want, got)
	require.Equal(t, unsafe.SliceData(buf), unsafe.StringData(got), "written into the buffer")

	small := make([]byte, 4)
	e = EditProperties(base)
	e.Set(PropCluster, "DefaultCluster")
	e.Into(small)
	got = e.String()
	require.Equal(t, want, got)
	require.NotEqual(t, unsafe.SliceData(small), unsafe.StringData(got), "too small: a string of its own")
}

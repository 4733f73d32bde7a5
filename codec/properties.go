package codec

import (
	"sort"
	"strconv"
	"strings"
	"unsafe"
)

// Message properties travel as one string: name 0x01 value 0x02 name 0x01 value
// 0x02 ... This file is the only reader and writer of that format. Its rules are
// Java's (MessageDecoder.string2messageProperties / messageProperties2String,
// Message.putProperty): the properties are a map, so a repeated name keeps its
// last value, a broker write replaces the name, and an encoding writes each name
// once, every pair followed by 0x02.

// Property separators of the encoded properties string.
const (
	PropNameValueSep = '\x01'
	PropSep          = '\x02'
)

// nextProperty returns the next well-formed pair of props starting at i, following
// MessageDecoder.string2messageProperties: pieces split on 0x02, a pair needs a 0x01
// with a non-empty name before it and a non-empty value after it; other pieces are
// skipped. ok is false when nothing is left.
func nextProperty(props string, i int) (name, value string, next int, ok bool) {
	for i < len(props) {
		end := strings.IndexByte(props[i:], PropSep)
		var piece string
		if end < 0 {
			piece, next = props[i:], len(props)
		} else {
			piece, next = props[i:i+end], i+end+1
		}
		i = next
		sep := strings.IndexByte(piece, PropNameValueSep)
		if sep > 0 && sep < len(piece)-1 {
			return piece[:sep], piece[sep+1:], next, true
		}
	}
	return "", "", len(props), false
}

// NextProperty iterates the well-formed pairs of props in order without
// allocating: start with i = 0 and continue with the returned next while ok. A
// repeated name is reported each time; readers that keep the last one agree with
// PropertyValue.
func NextProperty(props string, i int) (name, value string, next int, ok bool) {
	return nextProperty(props, i)
}

// PropertyValue finds name in an encoded properties string without allocating. When
// a name repeats, the last value wins, as it does in Java's HashMap.
func PropertyValue(props, name string) (string, bool) {
	// A send asks for several names most messages lack (TRAN_MSG, DELAY, the
	// TIMER_ ones); one vectorised search rules those out without a pair walk.
	if !strings.Contains(props, name) {
		return "", false
	}
	var val string
	found := false
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return val, found
		}
		if n == name {
			val, found = v, true
		}
		i = next
	}
}

// PropertyValues looks up several names in one pass without allocating: vals[j]
// and found[j] receive names[j]'s value (last wins). vals and found must be at
// least as long as names; entries of absent names are left untouched.
func PropertyValues(props string, names []string, vals []string, found []bool) {
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return
		}
		for j, want := range names {
			if want == n {
				vals[j], found[j] = v, true
				break
			}
		}
		i = next
	}
}

// viewPairs is how many pairs a PropView indexes; a larger string (only
// hostile or unusual clients send one) is searched as PropertyValue does.
const viewPairs = 16

// PropView indexes an encoded properties string in one walk, so that the
// several names a send asks for (TRAN_MSG, DELAY, the TIMER_ ones, UNIQ_KEY)
// cost a few comparisons each instead of a search of the string each. Use it
// as a local value; it allocates nothing.
type PropView struct {
	props string
	n     int  // pairs indexed; -1: more than viewPairs
	canon bool // the pairs are contiguous, each closed by 0x02 (when n >= 0)
	names [viewPairs]string
	vals  [viewPairs]string
}

// ViewProperties indexes props.
func ViewProperties(props string) PropView {
	var v PropView
	v.Reset(props)
	return v
}

// Reset indexes props, replacing what the view held.
func (v *PropView) Reset(props string) {
	v.props, v.n, v.canon = props, 0, true
	for i := 0; ; {
		n, val, next, ok := nextProperty(props, i)
		if !ok {
			return
		}
		if v.n == viewPairs {
			v.n = -1
			return
		}
		v.canon = v.canon && closedPair(props, i, n, val, next)
		v.names[v.n], v.vals[v.n] = n, val
		v.n++
		i = next
	}
}

// closedPair reports that the pair nextProperty found from i to next sits
// right at i and ends in 0x02: nothing skipped before it, nothing missing after.
func closedPair(props string, i int, name, val string, next int) bool {
	return next == i+len(name)+len(val)+2 && props[next-1] == PropSep
}

// Props is the encoded properties string the view indexes.
func (v *PropView) Props() string { return v.props }

// pairSpan is where one pair lies in an encoding being written, so that the
// view of the result needs no walk of it.
type pairSpan struct{ off, nameLen, valLen int }

// refill makes v index s, whose first pairs sp holds (pairs in all, each name
// once); canon as in Reset.
func (v *PropView) refill(s string, sp []pairSpan, pairs int, canon bool) {
	v.props, v.canon = s, canon
	if pairs > len(sp) {
		v.n = -1
		return
	}
	v.n = pairs
	for k, p := range sp[:pairs] {
		v.names[k] = s[p.off : p.off+p.nameLen]
		v.vals[k] = s[p.off+p.nameLen+1 : p.off+p.nameLen+1+p.valLen]
	}
}

// Get is PropertyValue(props, name) for the indexed props.
func (v *PropView) Get(name string) (string, bool) {
	if v.n < 0 {
		return PropertyValue(v.props, name)
	}
	for i := v.n - 1; i >= 0; i-- { // the last pair of a name wins
		if v.names[i] == name {
			return v.vals[i], true
		}
	}
	return "", false
}

// Has reports whether name has a value.
func (v *PropView) Has(name string) bool {
	_, ok := v.Get(name)
	return ok
}

// ParseProperties decodes props into a map (tests and cold paths).
func ParseProperties(props string) map[string]string {
	m := make(map[string]string)
	for i := 0; ; {
		n, v, next, ok := nextProperty(props, i)
		if !ok {
			return m
		}
		m[n] = v
		i = next
	}
}

// FormatProperties encodes m with names sorted, skipping empty names and values
// (which a Java reader would drop anyway).
func FormatProperties(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k, v := range m {
		if k != "" && v != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	e := EditProperties("")
	for _, k := range names {
		e.Set(k, m[k])
	}
	return e.String()
}

// SetProperty returns props with name set to value (replacing any earlier
// value), encoded as PropertiesEditor.String does.
func SetProperty(props, name, value string) string {
	e := EditProperties(props)
	e.Set(name, value)
	return e.String()
}

// SetPropertyInt is SetProperty with a number, formatted straight into the
// result (no string of its own).
func SetPropertyInt(props, name string, v int64) string {
	e := EditProperties(props)
	e.SetInt(name, v)
	return e.String()
}

// DeleteProperty returns props without name, encoded as PropertiesEditor.String
// does.
func DeleteProperty(props, name string) string {
	e := EditProperties(props)
	e.Delete(name)
	return e.String()
}

// propEdit is one pending change of a PropertiesEditor. A numeric value is kept
// as a number and formatted only when encoding, so setting one costs nothing.
type propEdit struct {
	name  string
	value string
	num   int64
	isNum bool
	del   bool
}

// inlineEdits is how many changes an editor holds without allocating; the
// broker's rewrites make at most six.
const inlineEdits = 8

// PropertiesEditor rebuilds an encoded properties string with some names set or
// removed, the way the Java broker's putProperty / clearProperty followed by
// messageProperties2String does: each name is written once, with its last value,
// and every pair ends in 0x02; malformed pieces (which Java's decoder drops) are
// dropped. The base's pairs keep their order; names set through the editor come
// after them, in the order first set. Use it as a local value: it allocates only
// in String, once, and not at all when nothing changes.
//
// Names must not contain 0x01 or 0x02 and values must not contain 0x02; every
// name the broker sets is a MessageConst name and its values are topic names,
// numbers or configuration strings.
type PropertiesEditor struct {
	base   string
	n      int
	inline [inlineEdits]propEdit
	more   []propEdit
	dst    []byte // Into's buffer
}

// Into has the result written into buf when it fits there, instead of into a
// new allocation: the string then aliases buf, which the caller must leave
// untouched for as long as the string is used (a pooled send answer's scratch).
func (e *PropertiesEditor) Into(buf []byte) { e.dst = buf }

// EditProperties starts an editor over the encoded properties props.
func EditProperties(props string) PropertiesEditor {
	return PropertiesEditor{base: props}
}

func (e *PropertiesEditor) edit(i int) *propEdit {
	if i < inlineEdits {
		return &e.inline[i]
	}
	return &e.more[i-inlineEdits]
}

// find returns the pending change of name, or nil.
func (e *PropertiesEditor) find(name string) *propEdit {
	for i := 0; i < e.n; i++ {
		if p := e.edit(i); p.name == name {
			return p
		}
	}
	return nil
}

func (e *PropertiesEditor) put(p propEdit) {
	if p.name == "" {
		return
	}
	if old := e.find(p.name); old != nil {
		*old = p
		return
	}
	if e.n < inlineEdits {
		e.inline[e.n] = p
	} else {
		e.more = append(e.more, p)
	}
	e.n++
}

// Set gives name the value, replacing what the base or an earlier Set held
// (Message.putProperty). An empty value is written as Java writes it (name 0x01
// 0x02), which every reader then ignores.
func (e *PropertiesEditor) Set(name, value string) { e.put(propEdit{name: name, value: value}) }

// SetInt is Set with a decimal number.
func (e *PropertiesEditor) SetInt(name string, v int64) {
	e.put(propEdit{name: name, num: v, isNum: true})
}

// Delete removes name (MessageAccessor.clearProperty).
func (e *PropertiesEditor) Delete(name string) { e.put(propEdit{name: name, del: true}) }

// Get is name's value after the changes made so far (last wins in the base).
func (e *PropertiesEditor) Get(name string) (string, bool) {
	if p := e.find(name); p != nil {
		switch {
		case p.del:
			return "", false
		case p.isNum:
			return strconv.FormatInt(p.num, 10), true
		}
		return p.value, p.value != ""
	}
	return PropertyValue(e.base, name)
}

// Has reports whether name has a value after the changes made so far.
func (e *PropertiesEditor) Has(name string) bool {
	if p := e.find(name); p != nil {
		return !p.del && (p.isNum || p.value != "")
	}
	_, ok := PropertyValue(e.base, name)
	return ok
}

// smallProps is how many base pairs String tracks on the stack; beyond it (only
// hostile or unusual clients send that many) a map finds repeats, so the cost
// stays linear.
const smallProps = 32

// String encodes the edited properties. It returns the base itself when that is
// already the encoding (no changes, no repeats, nothing malformed), so it
// allocates at most once for any base of up to smallProps pairs, and walks such a
// base once.
func (e *PropertiesEditor) String() string { return e.encode(nil) }

// StringView is String for a base that v indexes: it takes the base's pairs
// from v instead of walking the base again, and leaves v indexing the result,
// so a send's properties are walked once whatever the broker rewrites.
func (e *PropertiesEditor) StringView(v *PropView) string { return e.encode(v) }

// encode is String; v, when not nil, is left indexing the result.
func (e *PropertiesEditor) encode(v *PropView) string {
	if v != nil && v.n >= 0 && v.props == e.base {
		return e.encodePairs(v.names[:v.n], v.vals[:v.n], v.canon, v)
	}
	var names, vals [smallProps]string
	pairs, canonical := 0, true
	for i := 0; ; {
		n, val, next, ok := nextProperty(e.base, i)
		if !ok {
			break
		}
		canonical = canonical && closedPair(e.base, i, n, val, next)
		if pairs < smallProps {
			names[pairs], vals[pairs] = n, val
		}
		pairs++
		i = next
	}
	if pairs > smallProps {
		out := e.stringLarge(canonical)
		if v != nil {
			v.Reset(out)
		}
		return out
	}
	return e.encodePairs(names[:pairs], vals[:pairs], canonical, v)
}

// encodePairs encodes the base's pairs (at most smallProps) with the changes;
// canonical says whether they are the whole base in its encoding.
func (e *PropertiesEditor) encodePairs(names, vals []string, canonical bool, v *PropView) string {
	// A base pair is written when the editor leaves its name alone and no later
	// pair repeats the name (last wins).
	var keep [smallProps]bool
	pairs := len(names)
	size := 0
	for k := 0; k < pairs; k++ {
		keep[k] = e.find(names[k]) == nil
		for j := k + 1; keep[k] && j < pairs; j++ {
			keep[k] = names[j] != names[k]
		}
		if keep[k] {
			size += len(names[k]) + len(vals[k]) + 2
		} else {
			canonical = false
		}
	}
	size, canonical = e.editsSize(size, canonical)
	if canonical && size == len(e.base) {
		if v != nil && v.props != e.base {
			v.Reset(e.base)
		}
		return e.base // every base pair kept, nothing added, nothing trailing
	}
	var spArr [viewPairs]pairSpan
	var sp []pairSpan // where the pairs go, for v only
	if v != nil {
		sp = spArr[:]
	}
	out := 0
	b := e.dst[:0]
	if cap(b) < size {
		b = make([]byte, 0, size)
	}
	for k := 0; k < pairs; k++ {
		if keep[k] {
			out = addSpan(sp, out, len(b), len(names[k]), len(vals[k]))
			b = appendPair(b, names[k], vals[k])
		}
	}
	b, out, clean := e.appendEdits(b, sp, out)
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if v != nil {
		v.refill(s, sp, out, clean)
	}
	return s
}

// addSpan records a pair at off in sp (when there is room) and returns the
// count of pairs so far.
func addSpan(sp []pairSpan, n, off, nameLen, valLen int) int {
	if n < len(sp) {
		sp[n] = pairSpan{off, nameLen, valLen}
	}
	return n + 1
}

// stringLarge is String for a base of more than smallProps pairs (only hostile
// or unusual clients send that many): a map finds repeats, so the cost stays
// linear.
func (e *PropertiesEditor) stringLarge(canonical bool) string {
	last := make(map[string]int)
	k := 0
	for i := 0; ; k++ {
		n, _, next, ok := nextProperty(e.base, i)
		if !ok {
			break
		}
		last[n] = k
		i = next
	}
	kept := func(k int, n string) bool { return last[n] == k && e.find(n) == nil }
	size := 0
	k = 0
	for i := 0; ; k++ {
		n, v, next, ok := nextProperty(e.base, i)
		if !ok {
			break
		}
		if kept(k, n) {
			size += len(n) + len(v) + 2
		} else {
			canonical = false
		}
		i = next
	}
	size, canonical = e.editsSize(size, canonical)
	if canonical && size == len(e.base) {
		return e.base
	}
	b := make([]byte, 0, size)
	k = 0
	for i := 0; ; k++ {
		n, v, next, ok := nextProperty(e.base, i)
		if !ok {
			break
		}
		if kept(k, n) {
			b = appendPair(b, n, v)
		}
		i = next
	}
	b, _, _ = e.appendEdits(b, nil, 0)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// editsSize adds the encoded size of the pending changes to size; any written
// change makes the result differ from the base.
func (e *PropertiesEditor) editsSize(size int, canonical bool) (int, bool) {
	var num [20]byte
	for j := 0; j < e.n; j++ {
		if p := e.edit(j); !p.del {
			canonical = false
			size += len(p.name) + 2 + len(p.value)
			if p.isNum {
				size += len(strconv.AppendInt(num[:0], p.num, 10))
			}
		}
	}
	return size, canonical
}

// appendEdits appends the pending changes' pairs, in the order first set,
// recording in sp those a reader sees (pairs counts them, as addSpan does);
// clean is false when a pair with an empty value, which readers skip, comes
// before one they see (PropView's canon).
func (e *PropertiesEditor) appendEdits(b []byte, sp []pairSpan, pairs int) (_ []byte, _ int, clean bool) {
	clean = true
	skipped := false
	for j := 0; j < e.n; j++ {
		p := e.edit(j)
		if p.del {
			continue
		}
		off := len(b)
		b = append(append(b, p.name...), PropNameValueSep)
		if p.isNum {
			b = strconv.AppendInt(b, p.num, 10)
		} else {
			b = append(b, p.value...)
		}
		if valLen := len(b) - off - len(p.name) - 1; valLen > 0 {
			pairs = addSpan(sp, pairs, off, len(p.name), valLen)
			clean = clean && !skipped
		} else {
			skipped = true
		}
		b = append(b, PropSep)
	}
	return b, pairs, clean
}

// appendPair appends one encoded pair. The buffers it fills are sized first
// and never written again once returned as strings.
func appendPair(b []byte, name, value string) []byte {
	b = append(append(b, name...), PropNameValueSep)
	return append(append(b, value...), PropSep)
}

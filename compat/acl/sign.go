package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Fields is the custom header of a request as the signer reads it.
type Fields interface {
	Len() int
	At(i int) (key, value string)
}

// maxSortedFields bounds the fields sorted without allocating; a header has
// about a dozen.
const maxSortedFields = 64

// WriteContent writes what AclClientRPCHook signs into h: the values of the
// fields sorted by key as Java's TreeMap orders Strings (UTF-16 code units),
// leaving out Signature and the keys skip reports, then the body. scratch is
// reused for the values and returned grown.
func WriteContent(h hash.Hash, scratch []byte, f Fields, skip func(key string) bool, body []byte) []byte {
	var stack [maxSortedFields]int
	idx := SortFields(stack[:0], f)
	return WriteSorted(h, scratch, f, idx, skip, body)
}

// SortFields appends to dst the indexes of f's fields other than Signature,
// ordered by key as Java's String.compareTo orders them; fields with the same
// key stay in header order. It makes O(n log n) comparisons, each stopping at
// the first difference: the header is sorted before the signature is known
// to be good. The result can be written several times with WriteSorted.
func SortFields(dst []int, f Fields) []int {
	return sortFields(dst, f, compareJava)
}

func sortFields(dst []int, f Fields, cmp func(a, b string) int) []int {
	n := f.Len()
	if cap(dst)-len(dst) < n {
		dst = slices.Grow(dst, n)
	}
	start := len(dst)
	for i := 0; i < n; i++ {
		if k, _ := f.At(i); k != FieldSignature {
			dst = append(dst, i)
		}
	}
	slices.SortFunc(dst[start:], func(x, y int) int {
		kx, _ := f.At(x)
		ky, _ := f.At(y)
		if c := cmp(kx, ky); c != 0 {
			return c
		}
		return x - y // stable: a repeated key's last value is the one kept
	})
	return dst
}

// WriteSorted writes into h the values of the fields at idx (as SortFields
// orders them), leaving out the keys skip reports, then the body. A repeated
// key keeps its last value, as Java's map does. scratch is reused for the
// values and returned grown.
func WriteSorted(h hash.Hash, scratch []byte, f Fields, idx []int, skip func(key string) bool, body []byte) []byte {
	scratch = scratch[:0]
	for p, i := range idx {
		k, v := f.At(i)
		if skip != nil && skip(k) {
			continue
		}
		if p+1 < len(idx) {
			if nk, _ := f.At(idx[p+1]); nk == k {
				continue // a repeated key keeps its last value, as a map would
			}
		}
		scratch = append(scratch, v...)
	}
	h.Write(scratch)
	h.Write(body)
	return scratch
}

// NewMAC is the HmacSHA1 keyed with secretKey's UTF-8 bytes (AclSigner).
func NewMAC(secretKey string) hash.Hash { return hmac.New(sha1.New, []byte(secretKey)) }

// Signature is the base64 HmacSHA1 signature of a request as
// AclClientRPCHook computes it. The AccessKey (and SecurityToken) fields must
// already be among f.
func Signature(secretKey string, f Fields, body []byte) string {
	h := NewMAC(secretKey)
	WriteContent(h, nil, f, nil, body)
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// VerifyMAC compares h's sum with the base64 text a client sent, in constant
// time. The sum is appended to scratch[:0] (no allocation once it is big
// enough); the grown scratch is returned.
func VerifyMAC(h hash.Hash, sent string, scratch []byte) (bool, []byte) {
	scratch = h.Sum(scratch[:0])
	return EqualSignature(scratch, sent), scratch
}

// EqualSignature compares a computed MAC with the base64 text a client sent,
// in constant time (Java 5.x uses MessageDigest.isEqual).
func EqualSignature(mac []byte, sent string) bool {
	var buf [32]byte // base64 of a SHA-1 MAC is 28 bytes
	if base64.StdEncoding.EncodedLen(len(mac)) > len(buf) {
		return false
	}
	enc := buf[:base64.StdEncoding.EncodedLen(len(mac))]
	base64.StdEncoding.Encode(enc, mac)
	return subtle.ConstantTimeCompare(enc, []byte(sent)) == 1
}

// compareJava is String.compareTo: UTF-16 code unit order. It equals byte
// order except between supplementary characters and U+E000..U+FFFF. Invalid
// UTF-8 compares as Go decodes it: each bad byte is one U+FFFD. It looks at
// the bytes up to the first difference, then at the runes from there only.
func compareJava(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return 0
	}
	if i < n && a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		// An ASCII byte always starts a rune, and is its own code unit.
		return int(a[i]) - int(b[i])
	}
	// Back up to a rune start shared by both: a byte that is not a
	// continuation byte starts a rune as Go decodes, and if the three bytes
	// before i are all continuation bytes, i starts one.
	q := i
	for j := i - 1; j >= 0 && j >= i-(utf8.UTFMax-1); j-- {
		if !utf8.RuneStart(a[j]) {
			continue
		}
		q = j
		break
	}
	a, b = a[q:], b[q:]
	for len(a) > 0 && len(b) > 0 {
		ra, wa := utf8.DecodeRuneInString(a)
		rb, wb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ha, la := utf16Units(ra)
			hb, lb := utf16Units(rb)
			if ha != hb {
				return int(ha) - int(hb)
			}
			return int(la) - int(lb)
		}
		a, b = a[wa:], b[wb:]
	}
	return len(a) - len(b)
}

// utf16Units is r's first UTF-16 code unit and its second (0 if none).
func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	h, l := utf16.EncodeRune(r)
	return uint16(h), uint16(l)
}

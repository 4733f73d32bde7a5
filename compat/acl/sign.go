package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"unicode/utf16"
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
	n := f.Len()
	var stack [maxSortedFields]int
	idx := stack[:0]
	if n > maxSortedFields {
		idx = make([]int, 0, n)
	}
	for i := 0; i < n; i++ {
		k, _ := f.At(i)
		if k == FieldSignature || skip != nil && skip(k) {
			continue
		}
		// Insertion sort, stable: a dozen keys, no allocation.
		j := len(idx)
		idx = append(idx, i)
		for ; j > 0; j-- {
			pk, _ := f.At(idx[j-1])
			if compareJava(pk, k) <= 0 {
				break
			}
			idx[j] = idx[j-1]
		}
		idx[j] = i
	}
	scratch = scratch[:0]
	for p, i := range idx {
		k, v := f.At(i)
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
// order except between supplementary characters and U+E000..U+FFFF.
func compareJava(a, b string) int {
	ascii := true
	for i := 0; i < len(a) && ascii; i++ {
		ascii = a[i] < 0x80
	}
	for i := 0; i < len(b) && ascii; i++ {
		ascii = b[i] < 0x80
	}
	if ascii {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

package auth

import "unsafe"

// unsafeString views b as a string without copying, as the codec's
// zero-copy header decoding does.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

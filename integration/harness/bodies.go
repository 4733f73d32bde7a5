package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// MakeBody is the runner's Bodies.make in Go: "<prefix>-<i>-" then a..z shifted by i, exactly size bytes.
// Go-sent and Java-sent messages with the same prefix, index and size have the same body.
func MakeBody(prefix string, i, size int) []byte {
	head := fmt.Sprintf("%s-%d-", prefix, i)
	b := make([]byte, size)
	for j := range b {
		if j < len(head) {
			b[j] = head[j]
		} else {
			b[j] = byte('a' + (j+i)%26)
		}
	}
	return b
}

// Sha256Hex is the digest format the runner reports (lower-case hex).
func Sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func bodyHead(b []byte) string {
	n := min(len(b), 48)
	r := make([]rune, n)
	for i := range n {
		r[i] = rune(b[i]) // ISO-8859-1, like the runner
	}
	return string(r)
}

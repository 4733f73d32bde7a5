package auth

import (
	"testing"

	"rmqd/codec"
)

// BenchmarkHookSend is the hook on a granted, signed SEND_MESSAGE_V2: it
// must not allocate (sends are the hot path).
func BenchmarkHookSend(b *testing.B) {
	m, err := NewManager(Config{AuthenticationEnabled: true, AuthorizationEnabled: true, StoreRoot: b.TempDir(), ClusterName: "c"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.update(func(st *state) error {
		return seedAlice(st)
	}); err != nil {
		b.Fatal(err)
	}
	req := signed(codec.ReqSendMessageV2, "alice", "alicepw", ext("a", "pg", "b", "orders", "c", "TBW102", "d", "4"), make([]byte, 1024))
	c := from("127.0.0.1")
	h := m.Hook()
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Before(c, req); resp != nil {
			b.Fatal(resp.Remark)
		}
	}
}

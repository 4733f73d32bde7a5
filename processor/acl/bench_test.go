package acl

import (
	"testing"

	"rmqd/codec"
)

// BenchmarkHookSignedSend is the hook's cost on a granted, signed SEND_MESSAGE_V2
// with a 1 KiB body.
func BenchmarkHookSignedSend(b *testing.B) {
	m := newManager(b, testYAML)
	h := m.Hook()
	ext := codec.ExtFields{{Key: "a", Value: "pg"}, {Key: "b", Value: "TopicA"}, {Key: "c", Value: "TBW102"}, {Key: "d", Value: "4"},
		{Key: "e", Value: "0"}, {Key: "f", Value: "0"}, {Key: "g", Value: "1735689600000"}, {Key: "h", Value: "0"},
		{Key: "i", Value: "UNIQ_KEY\x0107F\x02"}, {Key: "j", Value: "0"}, {Key: "k", Value: "false"}, {Key: "m", Value: "false"}}
	req := signed(codec.ReqSendMessageV2, "RocketMQ", "12345678", ext, make([]byte, 1024))
	c := from("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		if resp := h.Before(c, req); resp != nil {
			b.Fatal(resp.Remark)
		}
	}
}

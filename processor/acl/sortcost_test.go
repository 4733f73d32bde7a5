package acl

import (
	"fmt"
	"strings"
	"testing"

	"rmqd/codec"
)

// bigSortedHeader is a header an attacker knowing an access key can send
// before any signature check: ~1,020 distinct ~4,000-byte keys in
// descending order (about 4 MB, within the frame's header and field limits),
// a SecurityToken (so both signed forms are tried) and a wrong signature.
func bigSortedHeader(ak string, nonASCII bool) *codec.RemotingCommand {
	req := codec.NewRequest(codec.ReqSendMessageV2)
	pad := strings.Repeat("x", 4000)
	for i := 1019; i >= 0; i-- {
		k := fmt.Sprintf("%04d", i) + pad
		if nonASCII {
			k = "é" + k
		}
		req.Ext = append(req.Ext, codec.ExtField{Key: k})
	}
	req.Ext = append(req.Ext, codec.ExtField{Key: "b", Value: "TopicA"}, codec.ExtField{Key: "AccessKey", Value: ak},
		codec.ExtField{Key: "SecurityToken", Value: "t"}, codec.ExtField{Key: "Signature", Value: "wrong"})
	return req
}

// TestBigHeaderRefused: such a request is refused for its signature (the
// sort's comparison count is bounded in compat/acl's TestSortFieldsComparisons;
// here the request goes through the hook end to end).
func TestBigHeaderRefused(t *testing.T) {
	m := newManager(t, testYAML)
	h := m.Hook()
	for _, na := range []bool{false, true} {
		resp := h.Before(from("127.0.0.1"), bigSortedHeader("RocketMQ", na))
		if resp == nil || resp.Code != codec.RespNoPermission || !strings.Contains(resp.Remark, "signature") {
			t.Fatalf("nonASCII=%v: %+v", na, resp)
		}
	}
}

package auth

import (
	"testing"

	"rmqd/codec"
)

// FuzzHook: whatever a peer sends, the hook answers or lets through and
// never panics.
func FuzzHook(f *testing.F) {
	f.Add(int32(codec.ReqSendMessageV2), "b", "orders", "a", "pg", []byte(nil), true)
	f.Add(int32(codec.ReqHeartBeat), "x", "y", "", "", []byte(`{"consumerDataSet":[{"groupName":"%RETRY%g","subscriptionDataSet":[{"topic":"t"}]}]}`), false)
	f.Add(int32(codec.ReqLockBatchMq), "", "", "", "", []byte(`{"consumerGroup":"g","mqSet":[{"topic":"%RETRY%x"}]}`), true)
	f.Add(int32(codec.ReqQueryCorrectionOffset), "filterGroups", "a,,b", "topic", "%RETRY%t", []byte(nil), true)
	f.Add(int32(codec.ReqAuthCreateAcl), "subject", "User:alice", "", "", []byte(`{"policies":[]}`), true)
	root := f.TempDir()
	m, err := NewManager(Config{AuthenticationEnabled: false, AuthorizationEnabled: true, StoreRoot: root, ClusterName: "c"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := m.update(seedAlice); err != nil {
		f.Fatal(err)
	}
	c := from("127.0.0.1")
	f.Fuzz(func(t *testing.T, code int32, k1, v1, k2, v2 string, body []byte, signedByAlice bool) {
		e := ext(k1, v1, k2, v2)
		var req *codec.RemotingCommand
		if signedByAlice {
			req = signed(code, "alice", "alicepw", e, body)
		} else {
			req = signed(code, "", "", e, body)
		}
		if resp := m.Hook().Before(c, req); resp != nil && resp.Code != codec.RespNoPermission {
			t.Fatalf("hook answered %d", resp.Code)
		}
		// The read-only admin codes on the same input.
		for _, code := range []int32{codec.ReqAuthGetUser, codec.ReqAuthListUser, codec.ReqAuthGetAcl, codec.ReqAuthListAcl} {
			r := *req
			r.Code = code
			_, _ = Handlers(m)[code].ProcessRequest(t.Context(), c, &r)
		}
	})
}

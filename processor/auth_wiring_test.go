package processor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rmqd/codec"
)

// TestAuthWiring: the ACL 2.0 switches build processor/auth, create the
// initial super user in <storePathRootDir>/config/auth.json and serve the
// AUTH_* codes.
func TestAuthWiring(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
		c.InitAuthenticationUser = `{"username":"su","password":"supw"}`
	})
	if b.auth == nil || b.auth.User("su") == nil || !b.auth.User("su").Super {
		t.Fatal("no super user from initAuthenticationUser")
	}
	if _, err := os.Stat(filepath.Join(b.Config().Store.StorePathRootDir, "config", "auth.json")); err != nil {
		t.Fatal(err)
	}
	h := b.Handlers()
	call := func(code int32, ext codec.ExtFields, body string) *codec.RemotingCommand {
		req := codec.NewRequest(code)
		req.Ext, req.Body = ext, []byte(body)
		resp, err := h[code].ProcessRequest(context.Background(), nil, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := call(codec.ReqAuthCreateUser, codec.ExtFields{{Key: "username", Value: "u1"}}, `{"password":"p","username":"u1"}`); r.Code != codec.RespSuccess {
		t.Fatalf("createUser %d %q", r.Code, r.Remark)
	}
	if r := call(codec.ReqAuthGetUser, codec.ExtFields{{Key: "username", Value: "u1"}}, ""); !strings.Contains(string(r.Body), `"username":"u1"`) {
		t.Fatalf("getUser %d %q %s", r.Code, r.Remark, r.Body)
	}
	c := DefaultBrokerConfig()
	if _, err := c.ApplyProperties(map[string]string{"initAuthenticationUser": `{"username":"a"}`, "authorizationWhitelist": "10,11",
		"authenticationStrategy": "x"}); err != nil || c.InitAuthenticationUser != `{"username":"a"}` || c.AuthorizationWhitelist != "10,11" ||
		c.authProviders()["authenticationStrategy"] != "x" {
		t.Fatalf("broker.conf keys: %+v %v", c, err)
	}
	if _, ok := c.Properties()["initAuthenticationUser"]; ok {
		t.Error("GET_BROKER_CONFIG would show initAuthenticationUser (a password)")
	}
}

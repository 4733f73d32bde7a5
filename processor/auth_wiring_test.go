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

// TestAuthMigrateWiring: migrateAuthFromV1Enabled imports the ACL 1.0 file
// aclPlainFile names when the broker is built (processor/auth TestMigrateV1
// has the mapping); the key is off by default and shown by GET_BROKER_CONFIG.
func TestAuthMigrateWiring(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(plain, []byte("accounts:\n  - accessKey: v1admin\n    secretKey: v1adminpw\n    admin: true\n"+
		"  - accessKey: v1user\n    secretKey: v1userpw\n    topicPerms:\n      - t1=PUB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
		c.MigrateAuthFromV1Enabled, c.AclPlainFile = true, plain
	})
	if u := b.auth.User("v1admin"); u == nil || !u.Super || u.Password != "v1adminpw" {
		t.Fatalf("admin account: %+v", u)
	}
	if a := b.auth.Acl("User:v1user"); b.auth.User("v1user") == nil || a == nil || len(a.Policies) != 1 {
		t.Fatalf("normal account: %+v", a)
	}
	off := newTestBroker(t, func(c *BrokerConfig) {
		c.AuthenticationEnabled = true
		c.AclPlainFile = plain
	})
	if off.auth.User("v1admin") != nil {
		t.Error("migrated with migrateAuthFromV1Enabled=false")
	}
	c := DefaultBrokerConfig()
	if v := c.Properties()["migrateAuthFromV1Enabled"]; v != "false" {
		t.Errorf("default shown as %q", v)
	}
	if _, err := c.ApplyProperties(map[string]string{"migrateAuthFromV1Enabled": "true"}); err != nil || !c.MigrateAuthFromV1Enabled {
		t.Fatalf("broker.conf key: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(bad, []byte("accounts: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultBrokerConfig()
	cfg.Store.StorePathRootDir = t.TempDir()
	cfg.AuthenticationEnabled, cfg.MigrateAuthFromV1Enabled, cfg.AclPlainFile = true, true, bad
	if _, err := newAuth(&cfg, nil); err == nil {
		t.Error("a plain_acl.yml that is no YAML did not stop the start (Java's AclException does)")
	}
}

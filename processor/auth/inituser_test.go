package auth

import (
	"testing"

	"rmqd/codec"
	jauth "rmqd/compat/auth"
)

// TestInnerCredentialsUser: 5.3.3's initUser also makes the
// innerClientAuthenticationCredentials account a super user when no user has
// its name, so the requests brokers sign with it pass the other brokers' hooks.
func TestInnerCredentialsUser(t *testing.T) {
	root := t.TempDir()
	m := newTestManager(t, root, func(c *Config) {
		c.InitAuthenticationUser = ""
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"innerpw"}`
	})
	if u := m.User("inner"); u == nil || !u.Super || u.Password != "innerpw" {
		t.Fatalf("inner user %+v", u)
	}
	resp := serve(t, m, from("10.0.0.1"), signed(codec.ReqAuthListUser, "inner", "innerpw", ext("filter", ""), nil))
	if resp.Code != codec.RespSuccess {
		t.Fatalf("inner user's admin request: %d %q", resp.Code, resp.Remark)
	}
	// An existing user of that name is kept as it is (createUser is skipped).
	if err := m.update(func(st *state) error {
		st.users["inner"] = &jauth.User{Username: "inner", Password: "changed"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	m2 := newTestManager(t, root, func(c *Config) {
		c.InitAuthenticationUser = ""
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"innerpw"}`
	})
	if u := m2.User("inner"); u == nil || u.Super || u.Password != "changed" {
		t.Fatalf("existing user overwritten: %+v", u)
	}
	// Java's createUser refuses a blank secret key, which stops the start.
	if _, err := NewManager(Config{AuthenticationEnabled: true, StoreRoot: t.TempDir(),
		InnerClientAuthenticationCredentials: `{"accessKey":"inner"}`}, nil); err == nil {
		t.Error("inner credentials without a secret key accepted")
	}
}

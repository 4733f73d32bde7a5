package processor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rmqd/processor/acl"
)

// TestACLWiring: aclEnable loads plain_acl.yml beside the store (created when
// missing) and serves the ACL admin codes; aclEnable with the ACL 2.0
// switches is refused.
func TestACLWiring(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.AclEnable = true
		c.RocketmqHome = ""
	})
	want := filepath.Join(filepath.Dir(b.Config().Store.StorePathRootDir), "conf", "plain_acl.yml")
	if b.acl == nil || b.acl.Path() != want {
		t.Fatalf("acl manager %v, want file %s", b.acl, want)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatalf("plain_acl.yml not created: %v", err)
	}
	for _, code := range []int32{acl.ReqUpdateAndCreateAclConfig, acl.ReqDeleteAclConfig, acl.ReqGetBrokerClusterAclInfo,
		acl.ReqUpdateGlobalWhiteAddrs, acl.ReqGetBrokerClusterAclConfig} {
		if b.Handlers()[code] == nil {
			t.Errorf("code %d not served", code)
		}
	}

	cfg := testConfig(t)
	cfg.AuthenticationEnabled, cfg.AclEnable = true, true
	if _, err := NewBroker(cfg, b.st, quietLog()); err == nil || !strings.Contains(err.Error(), "exclusive") {
		t.Fatalf("authenticationEnabled: %v", err)
	}
	c := DefaultBrokerConfig()
	if _, err := c.ApplyProperties(map[string]string{"aclEnable": "true", "aclPlainFile": "conf/x.yml", "authorizationEnabled": "true"}); err != nil ||
		!c.AclEnable || c.AclPlainFile != "conf/x.yml" || !c.AuthorizationEnabled {
		t.Fatalf("broker.conf keys: %+v %v", c, err)
	}
}

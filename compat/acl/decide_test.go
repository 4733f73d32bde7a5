package acl

import (
	"errors"
	"net/netip"
	"testing"
)

func TestAddrPatterns(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"", nil, []string{"127.0.0.1"}},
		{"192.168.*.*", []string{"192.168.0.1", "192.168.255.9"}, []string{"192.169.0.1", "10.0.0.1"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100"}, []string{"192.168.1.101", "192.168.2.50"}},
		{"10.1-9.*.*", []string{"10.5.3.3"}, []string{"10.10.0.0"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.2"}, []string{"192.168.1.4"}},
		{"127.0.0.1,127.0.0.3", []string{"127.0.0.3"}, []string{"127.0.0.2"}},
		{"127.0.0.2", []string{"127.0.0.2", "::ffff:127.0.0.2"}, []string{"127.0.0.1"}},
		{"::1", []string{"0:0:0:0:0:0:0:1"}, []string{"127.0.0.1"}},
	}
	for _, c := range cases {
		m, err := ParseAddrPattern(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		for _, h := range c.yes {
			if !m.Match(netip.MustParseAddr(h)) {
				t.Errorf("%q should match %s", c.pattern, h)
			}
		}
		for _, h := range c.no {
			if m.Match(netip.MustParseAddr(h)) {
				t.Errorf("%q should not match %s", c.pattern, h)
			}
		}
	}
	for _, bad := range []string{"192.168.1.x", "300.1.1.1", "192.168.*.1", "192.168.1.5-2", "1.2.3.4,nope", "*.1.1.1"} {
		if _, err := ParseAddrPattern(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

const sampleYAML = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
`

func denied(t *testing.T, err error, want string) {
	t.Helper()
	var d *Denied
	if !errors.As(err, &d) || d.Reason != want {
		t.Fatalf("got %v, want denial %q", err, want)
	}
}

func TestCheckerRules(t *testing.T) {
	f, err := ParseFile([]byte(sampleYAML))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewChecker(f)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(host, ak string, has bool) (Decision, *Secret, error) {
		return c.Authenticate(&Request{Addr: netip.MustParseAddr(host), AccessKey: ak, HasAccessKey: has})
	}
	if d, _, err := auth("10.10.103.7", "", false); err != nil || d != Allow {
		t.Fatalf("global white: %v %v", d, err)
	}
	_, _, err = auth("127.0.0.1", "", false)
	denied(t, err, "No accessKey is configured")
	_, _, err = auth("127.0.0.1", "nobody12", true)
	denied(t, err, "No acl config for nobody12")
	if d, _, err := auth("192.168.1.9", "rocketmq2", true); err != nil || d != Allow {
		t.Fatalf("account white: %v %v", d, err)
	}
	if d, sk, err := auth("127.0.0.1", "RocketMQ", true); err != nil || d != VerifyThenAuthorize || sk.Key() != "12345678" {
		t.Fatalf("verify: %v %q %v", d, sk.Key(), err)
	}
	az := func(code int32, res ...Resource) error {
		return c.Authorize(&Request{Code: code, AccessKey: "RocketMQ", HasAccessKey: true, Resources: res})
	}
	if err := az(310, Resource{"topicB", Pub}); err != nil {
		t.Fatal(err)
	}
	denied(t, az(310, Resource{"topicC", Pub}), "No permission for topic:topicC")
	denied(t, az(310, Resource{"topicA", Sub}), "No permission for topic:topicA")
	denied(t, az(310, Resource{"other", Pub}), "No default permission for topic:other")
	if err := az(11, Resource{"topicC", Sub}, Resource{RetryTopic("anyGroup"), Sub}); err != nil {
		t.Fatal(err)
	}
	denied(t, az(11, Resource{"topicC", Sub}, Resource{RetryTopic("groupA"), Sub}), "No permission for group:groupA")
	denied(t, az(17), "Need admin permission for request code=17, but accessKey=RocketMQ is not")
	denied(t, az(329), "Need admin permission for request code=329, but accessKey=RocketMQ is not")
	// The store clean-ups, admin like DELETE_EXPIRED_COMMITLOG (ACL 2.0 asks the cluster resource).
	denied(t, az(306), "Need admin permission for request code=306, but accessKey=RocketMQ is not")
	denied(t, az(316), "Need admin permission for request code=316, but accessKey=RocketMQ is not")
	// The commitlog read mode: its broker.conf key needs admin through UPDATE_BROKER_CONFIG.
	denied(t, az(2004), "Need admin permission for request code=2004, but accessKey=RocketMQ is not")
	// Java 5.4's timer engine switch, which sets timerStopEnqueue.
	denied(t, az(5001), "Need admin permission for request code=5001, but accessKey=RocketMQ is not")
	if err := az(310, Resource{TraceTopic, Pub}); err != nil {
		t.Fatalf("trace topic: %v", err)
	}
	if err := c.Authorize(&Request{Code: 17, AccessKey: "rocketmq2", HasAccessKey: true}); err != nil {
		t.Fatalf("admin: %v", err)
	}
}

func TestFileRoundTripAndChecks(t *testing.T) {
	f, err := ParseFile([]byte(sampleYAML))
	if err != nil {
		t.Fatal(err)
	}
	f.NextVersion(1234)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Accounts) != 2 || g.Accounts[0].TopicPerms[1] != "topicB=PUB|SUB" || g.Version() != (FileVersion{1, 1234}) ||
		g.GlobalWhiteRemoteAddresses[0] != "10.10.103.*" || !g.Accounts[1].Admin {
		t.Fatalf("round trip lost data:\n%s", b)
	}
	if err := CheckAccount(&Account{AccessKey: "short", SecretKey: "12345678"}); err == nil {
		t.Fatal("short access key accepted")
	}
	if err := CheckAccount(&Account{AccessKey: "RocketMQ", SecretKey: "12345678", TopicPerms: []string{"t=WRITE"}}); err == nil {
		t.Fatal("bad perm accepted")
	}
	if e, err := ParseFile(nil); err != nil || len(e.Accounts) != 0 {
		t.Fatal("empty file")
	}
}

package acl

import (
	"net/netip"
	"testing"
)

// FuzzParseAddrPattern: white-address patterns reach the broker through the
// ACL admin codes; no pattern may panic, and a compiled one must answer.
func FuzzParseAddrPattern(f *testing.F) {
	for _, s := range []string{"*", "", "192.168.*.*", "192.168.1.1-100", "10.1-9.*.*", "192.168.1.{1,2,3}",
		"1.2.3.4,5.6.7.8", "::1", "{}", "}", "1.2.3.-", "-1.2.3.4", "1.2.3.4-", "*.*.*.*"} {
		f.Add(s)
	}
	addrs := []netip.Addr{netip.MustParseAddr("192.168.1.50"), netip.MustParseAddr("::1"), {}}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseAddrPattern(s)
		if err != nil {
			return
		}
		for _, a := range addrs {
			m.Match(a)
		}
	})
}

// FuzzParseFile: a plain_acl.yml (edited by hand or through the admin codes)
// never panics the loader or the checker it compiles to.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(sampleYAML))
	f.Add([]byte("accounts:\n  - accessKey: x\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: [1.2.3.*]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := ParseFile(b)
		if err != nil {
			return
		}
		c, err := NewChecker(file)
		if err != nil {
			return
		}
		r := &Request{Code: 10, Addr: netip.MustParseAddr("127.0.0.1"), AccessKey: "RocketMQ", HasAccessKey: true,
			Resources: []Resource{{Name: "topicA", Perm: Pub}, {Name: RetryTopic("g"), Perm: Sub}}}
		if d, _, err := c.Authenticate(r); err == nil && d == VerifyThenAuthorize {
			_ = c.Authorize(r)
		}
		if _, err := file.Marshal(); err != nil {
			t.Fatalf("a parsed file does not marshal: %v", err)
		}
	})
}

package auth

import (
	"encoding/json"
	"net/netip"
	"testing"
)

// FuzzAclInfo: any AclInfo body is refused with a message or compiles into
// entries the evaluator decides on without panicking, and survives a
// round trip through the wire form.
func FuzzAclInfo(f *testing.F) {
	f.Add([]byte(`{"policies":[{"entries":[{"resource":"Topic:a*","actions":["Pub","All"],"sourceIps":["10.0.0.0/8","::1"],"decision":"Deny"}]}]}`), "Topic:abc", "10.1.1.1")
	f.Add([]byte(`{"policies":[{"policyType":"Default","entries":[{"resource":"*","actions":["Sub"],"decision":"Allow"}]}]}`), "Group:%RETRY%g", "")
	f.Fuzz(func(t *testing.T, body []byte, resKey, ip string) {
		var info AclInfo
		if json.Unmarshal(body, &info) != nil {
			return
		}
		ps, err := FromAclInfo(&info)
		if err != nil {
			if !IsRefusal(err) {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		a := &Acl{Subject: "User:u", Policies: ps}
		back := ToAclInfo(a)
		if _, err := FromAclInfo(&back); err != nil {
			t.Fatalf("round trip refused: %v", err)
		}
		res, ok := ParseResource(resKey)
		if !ok {
			res = Topic(resKey)
		}
		addr, _ := netip.ParseAddr(ip)
		for _, act := range []Action{ActPub, ActSub, ActSub | ActGet, ActAny, ActUpdate} {
			_ = Authorize(&Request{Username: "u", HasUsername: true, Resource: res, Actions: act, Addr: addr}, &User{Username: "u"}, a)
		}
	})
}

package auth

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

func mustAcl(t *testing.T, subject, body string) *Acl {
	t.Helper()
	var info AclInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		t.Fatal(err)
	}
	ps, err := FromAclInfo(&info)
	if err != nil {
		t.Fatal(err)
	}
	return &Acl{Subject: subject, Policies: ps}
}

// The table follows AclAuthorizationHandler / UserAuthorizationHandler (5.3.3,
// with the #9540 ordering fix) and AuthorizationEvaluatorTest's cases.
func TestAuthorizeTable(t *testing.T) {
	acl := mustAcl(t, "User:u", `{"policies":[{"entries":[
		{"resource":"Topic:*","actions":["Pub"],"decision":"Allow"},
		{"resource":"Topic:secret","actions":["Pub","Sub"],"decision":"Deny"},
		{"resource":"Topic:pre*","actions":["Sub"],"decision":"Allow"},
		{"resource":"Topic:prefix*","actions":["Sub"],"decision":"Deny"},
		{"resource":"Topic:both","actions":["Pub"],"decision":"Allow"},
		{"resource":"Topic:both","actions":["Pub"],"decision":"Deny"},
		{"resource":"Group:g1","actions":["Sub"],"decision":"Allow"},
		{"resource":"Group:lan*","actions":["All"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"},
		{"resource":"Cluster:*","actions":["Get"],"sourceIps":["127.0.0.1"],"decision":"Allow"}
	]},{"policyType":"Default","entries":[{"resource":"*","actions":["Sub"],"decision":"Allow"}]}]}`)
	user := &User{Username: "u", Password: "p"}
	local, lan := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3")
	cases := []struct {
		name string
		res  Resource
		act  Action
		addr netip.Addr
		want string // "" allowed, else a part of the refusal
	}{
		{"any topic pub", Topic("t1"), ActPub, local, ""},
		{"literal deny beats *", Topic("secret"), ActPub, local, "the decision is deny."},
		{"sub on a topic falls to the Default policy", Topic("t1"), ActSub, local, ""},
		{"prefix allow", Topic("prex"), ActSub, local, ""},
		{"longer prefix deny wins", Topic("prefix1"), ActSub, local, "the decision is deny."},
		{"equal specificity: deny over allow", Topic("both"), ActPub, local, "the decision is deny."},
		{"group literal", Group("%RETRY%g1"), ActSub, local, ""},
		{"group with no entry, Default * Sub", Group("g2"), ActSub, local, ""},
		{"group update: nothing matches", Group("g2"), ActUpdate, local, "User:u has no permission to access Group:g2 from 127.0.0.1, no matched policies."},
		{"All grants update from the right IP", Group("lan1"), ActUpdate, lan, ""},
		{"source IP outside the block", Group("lan1"), ActUpdate, local, "no matched policies."},
		{"cluster get from its IP", Cluster("c"), ActGet, local, ""},
		{"cluster get elsewhere", Cluster("c"), ActGet, lan, "no matched policies."},
		{"cluster update", Cluster("c"), ActUpdate, local, "no matched policies."},
		{"Any wants: every entry matches", Topic("t1"), ActAny, local, ""},
		{"one of several actions", Topic("q"), ActSub | ActGet, local, ""},
	}
	for _, c := range cases {
		r := &Request{Username: "u", HasUsername: true, Resource: c.res, Actions: c.act, Addr: c.addr, AddrText: c.addr.String()}
		err := Authorize(r, user, acl)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestAuthorizeUsers(t *testing.T) {
	r := &Request{Username: "u", HasUsername: true, Resource: Topic("t"), Actions: ActPub, AddrText: "1.2.3.4"}
	if err := Authorize(r, &User{Username: "u", Super: true}, nil); err != nil {
		t.Errorf("super user: %v", err)
	}
	if err := Authorize(r, nil, nil); err == nil || err.Error() != "User:u not found." {
		t.Errorf("unknown user: %v", err)
	}
	if err := Authorize(r, &User{Username: "u", Disabled: true, Super: true}, nil); err == nil || err.Error() != "User:u is disabled." {
		t.Errorf("disabled: %v", err)
	}
	if err := Authorize(r, &User{Username: "u"}, nil); err == nil ||
		err.Error() != "User:u has no permission to access Topic:t from 1.2.3.4, no matched policies." {
		t.Errorf("no acl: %v", err)
	}
	if err := Authorize(&Request{Resource: Topic("t")}, nil, nil); !IsRefusal(err) {
		t.Errorf("no user named: %v", err)
	}
	if err := CheckUser("", nil); err == nil || err.Error() != "username cannot be null." {
		t.Errorf("CheckUser: %v", err)
	}
	if err := CheckUser("x", nil); err == nil || err.Error() != "User:x is not found." {
		t.Errorf("CheckUser: %v", err)
	}
}

func TestResourceKeys(t *testing.T) {
	for key, want := range map[string]string{"*": "*", "Topic:*": "Topic:*", "topic:foo": "Topic:foo",
		"Group:pre*": "Group:pre*", "Cluster:DefaultCluster": "Cluster:DefaultCluster", "Bogus:x": "", "": ""} {
		r, ok := ParseResource(key)
		if got := r.Key(); ok != (want != "") || ok && got != want {
			t.Errorf("%q: %q %v, want %q", key, got, ok, want)
		}
	}
}

func TestAclInfoValidation(t *testing.T) {
	for body, want := range map[string]string{
		`{}`:                            "The policies is empty.",
		`{"policies":[{"entries":[]}]}`: "The policy entries is empty.",
		`{"policies":[{"entries":[{"resource":"Nope:x","actions":["Pub"],"decision":"Allow"}]}]}`:                      "The resource is null.",
		`{"policies":[{"entries":[{"resource":"Topic:x","actions":[],"decision":"Allow"}]}]}`:                          "The actions is empty.",
		`{"policies":[{"entries":[{"resource":"Topic:x","actions":["Any"],"decision":"Allow"}]}]}`:                     "The actions can not be Any.",
		`{"policies":[{"entries":[{"resource":"Topic:x","actions":["Pub"],"sourceIps":["x.y"],"decision":"Allow"}]}]}`: "The source ip is invalid.",
		`{"policies":[{"entries":[{"resource":"Topic:x","actions":["Pub"],"decision":"Maybe"}]}]}`:                     "The decision is null or illegal.",
	} {
		var info AclInfo
		_ = json.Unmarshal([]byte(body), &info)
		if _, err := FromAclInfo(&info); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	a := mustAcl(t, "User:u", `{"policies":[{"entries":[{"resource":"Topic:a","actions":["Pub","Sub"],"sourceIps":["10.0.0.0/8"],"decision":"Allow"}]}]}`)
	a.Merge([]Policy{{Type: PolicyCust, Entries: []Entry{{Resource: Topic("a"), Actions: ActSub, Deny: true}, {Resource: Topic("b"), Actions: ActPub}}}})
	got, _ := json.Marshal(ToAclInfo(a))
	want := `{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:a"},{"actions":["Pub"],"decision":"Allow","resource":"Topic:b"}],"policyType":"Custom"}],"subject":"User:u"}`
	if string(got) != want {
		t.Errorf("merged:\n%s\nwant\n%s", got, want)
	}
	a.DeleteEntry(PolicyCust, Topic("a"))
	a.DeleteEntry(PolicyCust, Topic("b"))
	if len(a.Policies) != 0 {
		t.Errorf("policies left: %+v", a.Policies)
	}
}

// Package auth is Apache RocketMQ 5.3's ACL 2.0 model and decision rules:
// users, ACL policies (resource patterns, actions, source IPs, Allow/Deny) and
// the wire bodies (UserInfo, AclInfo) of the AUTH_* admin codes. It imports
// nothing of ours so that the name server can share it.
package auth

import (
	"fmt"
	"net/netip"
	"strings"
)

// UserType and UserStatus as Java spells them on the wire.
const (
	UserSuper   = "Super"
	UserNormal  = "Normal"
	StatusOn    = "enable"
	StatusOff   = "disable"
	PolicyCust  = "Custom"
	PolicyDef   = "Default"
	DecideAllow = "Allow"
	DecideDeny  = "Deny"
)

// Action is one of Java's Action values; a set is a bit mask.
type Action uint16

// Java's actions. Any is only on the request side (a request wanting Any
// matches every entry); All is on the entry side (grants everything).
const (
	ActAll Action = 1 << iota
	ActAny
	ActPub
	ActSub
	ActCreate
	ActUpdate
	ActDelete
	ActGet
	ActList
)

var actionNames = []struct {
	a    Action
	name string
}{{ActAll, "All"}, {ActAny, "Any"}, {ActPub, "Pub"}, {ActSub, "Sub"}, {ActCreate, "Create"},
	{ActUpdate, "Update"}, {ActDelete, "Delete"}, {ActGet, "Get"}, {ActList, "List"}}

// ParseAction is Action.getByName (case-insensitive).
func ParseAction(s string) (Action, bool) {
	for _, n := range actionNames {
		if strings.EqualFold(n.name, strings.TrimSpace(s)) {
			return n.a, true
		}
	}
	return 0, false
}

// Names lists the actions of a in Java's order.
func (a Action) Names() []string {
	var out []string
	for _, n := range actionNames {
		if a&n.a != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// ResourceType is Java's ResourceType.
type ResourceType uint8

// Java's resource types.
const (
	TypeUnknown ResourceType = iota
	TypeAny
	TypeCluster
	TypeNamespace
	TypeTopic
	TypeGroup
)

var typeNames = [...]string{"Unknown", "Any", "Cluster", "Namespace", "Topic", "Group"}

func (t ResourceType) String() string { return typeNames[t] }

// Pattern is Java's ResourcePattern.
type Pattern uint8

// Java's patterns.
const (
	PatAny Pattern = iota
	PatLiteral
	PatPrefixed
)

// Resource is a resource of a policy entry (a pattern) or of a request (a
// literal name).
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern Pattern
}

// Topic and Group name a request's resource. A group given by its retry
// topic is named without the prefix, as Resource.ofGroup.
func Topic(name string) Resource { return Resource{Type: TypeTopic, Name: name, Pattern: PatLiteral} }

// Group is Resource.ofGroup.
func Group(name string) Resource {
	name = strings.TrimPrefix(name, RetryPrefix)
	return Resource{Type: TypeGroup, Name: name, Pattern: PatLiteral}
}

// Cluster is Resource.ofCluster.
func Cluster(name string) Resource {
	return Resource{Type: TypeCluster, Name: name, Pattern: PatLiteral}
}

// RetryPrefix starts the retry topic of a consumer group.
const RetryPrefix = "%RETRY%"

// IsRetryTopic is NamespaceUtil.isRetryTopic.
func IsRetryTopic(t string) bool { return strings.HasPrefix(t, RetryPrefix) }

// ParseResource is Resource.of(resourceKey): "*", "Topic:*", "Topic:foo",
// "Group:pre*". ok is false where Java returns null.
func ParseResource(key string) (Resource, bool) {
	if strings.TrimSpace(key) == "" {
		return Resource{}, false
	}
	if key == "*" {
		return Resource{Type: TypeAny, Pattern: PatAny}, true
	}
	typ, name, _ := strings.Cut(key, ":")
	t := TypeUnknown
	for i, n := range typeNames {
		if i > 0 && strings.EqualFold(n, typ) {
			t = ResourceType(i)
		}
	}
	if t == TypeUnknown {
		return Resource{}, false
	}
	switch {
	case name == "*":
		return Resource{Type: t, Pattern: PatAny}, true
	case strings.HasSuffix(name, "*"):
		return Resource{Type: t, Name: name[:strings.IndexByte(name, '*')], Pattern: PatPrefixed}, true
	}
	return Resource{Type: t, Name: name, Pattern: PatLiteral}, true
}

// Key is Resource.getResourceKey.
func (r Resource) Key() string {
	if r.Type == TypeAny {
		return "*"
	}
	switch r.Pattern {
	case PatAny:
		return r.Type.String() + ":*"
	case PatPrefixed:
		return r.Type.String() + ":" + r.Name + "*"
	}
	return r.Type.String() + ":" + r.Name
}

// Match is Resource.isMatch: does pattern r cover the request's resource x.
func (r Resource) Match(x Resource) bool {
	if r.Type == TypeAny {
		return true
	}
	if r.Type != x.Type {
		return false
	}
	switch r.Pattern {
	case PatAny:
		return true
	case PatLiteral:
		return r.Name == x.Name
	case PatPrefixed:
		return strings.HasPrefix(x.Name, r.Name)
	}
	return false
}

// Source is one sourceIps entry: an address or a CIDR block
// (IPAddressUtils.isIPInRange).
type Source struct {
	Text   string
	prefix netip.Prefix
}

// ParseSource compiles a sourceIps entry.
func ParseSource(s string) (Source, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return Source{Text: s, prefix: p.Masked()}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return Source{}, fmt.Errorf("sourceIp %s is invalid", s)
	}
	a = a.Unmap()
	return Source{Text: s, prefix: netip.PrefixFrom(a, a.BitLen())}, nil
}

// Match reports whether a (unmapped) is in the source.
func (s Source) Match(a netip.Addr) bool { return s.prefix.Contains(a.Unmap()) }

// Entry is a PolicyEntry.
type Entry struct {
	Resource Resource
	Actions  Action
	Sources  []Source // none: any address
	Deny     bool
}

// matchActions is PolicyEntry.isMatchAction.
func (e *Entry) matchActions(want Action) bool {
	if e.Actions == 0 {
		return false
	}
	if want&ActAny != 0 {
		return true
	}
	return want&e.Actions != 0 || e.Actions&ActAll != 0
}

// matchSource is PolicyEntry.isMatchEnvironment; an unknown peer address
// matches only entries without sources.
func (e *Entry) matchSource(a netip.Addr) bool {
	if len(e.Sources) == 0 {
		return true
	}
	if !a.IsValid() {
		return false
	}
	for _, s := range e.Sources {
		if s.Match(a) {
			return true
		}
	}
	return false
}

// Policy is one policy (Custom or Default) of an ACL.
type Policy struct {
	Type    string // PolicyCust or PolicyDef
	Entries []Entry
}

// Acl is the policies of one subject ("User:name").
type Acl struct {
	Subject  string
	Policies []Policy
}

// Policy returns the policy of type t, or nil.
func (a *Acl) Policy(t string) *Policy {
	for i := range a.Policies {
		if a.Policies[i].Type == t {
			return &a.Policies[i]
		}
	}
	return nil
}

// Merge is Acl.updatePolicy: each entry of in replaces the entry for the same
// resource in the policy of the same type, or is added to it.
func (a *Acl) Merge(in []Policy) {
	for _, p := range in {
		old := a.Policy(p.Type)
		if old == nil {
			a.Policies = append(a.Policies, Policy{Type: p.Type, Entries: append([]Entry(nil), p.Entries...)})
			continue
		}
	next:
		for _, e := range p.Entries {
			for i := range old.Entries {
				if old.Entries[i].Resource == e.Resource {
					old.Entries[i] = e
					continue next
				}
			}
			old.Entries = append(old.Entries, e)
		}
	}
}

// DeleteEntry is Acl.deletePolicy: drop the entry for r from the policy of
// type t, and the policy once empty.
func (a *Acl) DeleteEntry(t string, r Resource) {
	out := a.Policies[:0]
	for _, p := range a.Policies {
		if p.Type == t {
			es := p.Entries[:0]
			for _, e := range p.Entries {
				if e.Resource != r {
					es = append(es, e)
				}
			}
			p.Entries = es
			if len(es) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	a.Policies = out
}

// Clone deep-copies a so that a snapshot can be changed without touching
// readers of the old one.
func (a *Acl) Clone() *Acl {
	c := &Acl{Subject: a.Subject, Policies: make([]Policy, len(a.Policies))}
	for i, p := range a.Policies {
		c.Policies[i] = Policy{Type: p.Type, Entries: append([]Entry(nil), p.Entries...)}
	}
	return c
}

// User is a user as stored.
type User struct {
	Username string
	Password string
	Super    bool
	Disabled bool
}

// SubjectKey is User.getSubjectKey.
func SubjectKey(username string) string { return "User:" + username }

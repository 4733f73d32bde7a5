package acl

import (
	"fmt"
	"hash"
	"net/netip"
	"sync"
)

// Resource is one thing a request touches: a topic, or a group as its retry
// topic (RetryTopic), with the permission it needs.
type Resource struct {
	Name string
	Perm byte
}

// Request is what the checker needs of one request.
type Request struct {
	Code int32
	// Addr is the peer's IP.
	Addr netip.Addr
	// AccessKey is the AccessKey field; HasAccessKey tells an empty one from a
	// missing one.
	AccessKey    string
	HasAccessKey bool
	Resources    []Resource
}

// Denied is a refusal: Reason is Java's AclException message.
type Denied struct {
	AccessKey string
	Reason    string
}

func (d *Denied) Error() string { return d.Reason }

// Secret is an account's secret key with keyed HmacSHA1 instances to reuse,
// so that verifying a signature allocates nothing.
type Secret struct {
	key  string
	macs sync.Pool
}

// NewSecret keeps key with a pool of HmacSHA1 instances keyed with it.
func NewSecret(key string) *Secret {
	s := &Secret{key: key}
	s.macs.New = func() any { return NewMAC(key) }
	return s
}

// Key is the secret key.
func (s *Secret) Key() string { return s.key }

// MAC returns a reset HmacSHA1 keyed with the secret; hand it back with PutMAC.
func (s *Secret) MAC() hash.Hash {
	h := s.macs.Get().(hash.Hash)
	h.Reset()
	return h
}

// PutMAC returns a MAC obtained from MAC.
func (s *Secret) PutMAC(h hash.Hash) { s.macs.Put(h) }

type account struct {
	Account
	secret       *Secret
	white        AddrMatcher
	defaultTopic byte
	defaultGroup byte
	perms        map[string]byte // topic, or RetryTopic(group)
}

// Checker is one loaded configuration, immutable: reloads build a new one.
type Checker struct {
	accounts map[string]*account
	globals  []AddrMatcher
}

// NewChecker compiles plain_acl.yml files (Java 4.9.3+ reads every file of
// conf/acl as well as conf/plain_acl.yml). Like Java it refuses a file with a
// bad account or address pattern as a whole; an access key listed twice keeps
// its first entry, in file order.
func NewChecker(files ...*File) (*Checker, error) {
	c := &Checker{accounts: map[string]*account{}}
	for _, f := range files {
		if err := c.add(f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Checker) add(f *File) error {
	for _, g := range f.GlobalWhiteRemoteAddresses {
		m, err := ParseAddrPattern(g)
		if err != nil {
			return fmt.Errorf("globalWhiteRemoteAddresses %q: %w", g, err)
		}
		c.globals = append(c.globals, m)
	}
	for i := range f.Accounts {
		a := &f.Accounts[i]
		if err := CheckAccount(a); err != nil {
			return err
		}
		if _, dup := c.accounts[a.AccessKey]; dup {
			continue
		}
		w, err := ParseAddrPattern(a.WhiteRemoteAddress)
		if err != nil {
			return fmt.Errorf("account %s whiteRemoteAddress: %w", a.AccessKey, err)
		}
		acc := &account{Account: *a, secret: NewSecret(a.SecretKey), white: w, defaultTopic: ParsePerm(a.DefaultTopicPerm),
			defaultGroup: ParsePerm(a.DefaultGroupPerm), perms: map[string]byte{}}
		for _, r := range a.GroupPerms {
			name, perm, _ := splitResourcePerm(r)
			acc.perms[RetryTopic(name)] = ParsePerm(perm)
		}
		for _, r := range a.TopicPerms {
			name, perm, _ := splitResourcePerm(r)
			acc.perms[name] = ParsePerm(perm)
		}
		c.accounts[a.AccessKey] = acc
	}
	return nil
}

// Decision is the outcome of Check before the signature is verified.
type Decision int

const (
	// Allow: let the request through without looking at its signature
	// (global or account white address).
	Allow Decision = iota
	// VerifyThenAuthorize: verify the signature with SecretKey, then call
	// Authorize.
	VerifyThenAuthorize
)

// Authenticate is the first half of PlainPermissionManager.validate: white
// lists, then the account. With VerifyThenAuthorize it returns the secret the
// signature must be verified with.
func (c *Checker) Authenticate(r *Request) (Decision, *Secret, error) {
	for _, g := range c.globals {
		if g.Match(r.Addr) {
			return Allow, nil, nil
		}
	}
	if !r.HasAccessKey {
		return 0, nil, &Denied{Reason: "No accessKey is configured"}
	}
	a := c.accounts[r.AccessKey]
	if a == nil {
		return 0, nil, &Denied{AccessKey: r.AccessKey, Reason: fmt.Sprintf("No acl config for %s", r.AccessKey)}
	}
	if a.white.Match(r.Addr) {
		return Allow, nil, nil
	}
	return VerifyThenAuthorize, a.secret, nil
}

// SignatureFailed is the refusal for a signature that does not verify.
func SignatureFailed(accessKey string) *Denied {
	return &Denied{AccessKey: accessKey, Reason: fmt.Sprintf("Check signature failed for accessKey=%s", accessKey)}
}

// Authorize is the second half of validate, after the signature verified: the
// trace-topic exemption, admin codes, then each resource against the
// account's grants and defaults (PlainPermissionChecker).
func (c *Checker) Authorize(r *Request) error {
	for _, res := range r.Resources {
		if res.Name == TraceTopic && res.Perm == Pub {
			return nil
		}
	}
	a := c.accounts[r.AccessKey]
	if a == nil {
		return &Denied{AccessKey: r.AccessKey, Reason: fmt.Sprintf("No acl config for %s", r.AccessKey)}
	}
	if a.Admin {
		return nil
	}
	if NeedAdmin(r.Code) {
		return &Denied{AccessKey: r.AccessKey, Reason: fmt.Sprintf("Need admin permission for request code=%d, but accessKey=%s is not", r.Code, r.AccessKey)}
	}
	for _, res := range r.Resources {
		owned, ok := a.perms[res.Name]
		if !ok {
			def := a.defaultTopic
			if IsGroup(res.Name) {
				def = a.defaultGroup
			}
			if !CheckPermission(res.Perm, def) {
				return &Denied{AccessKey: r.AccessKey, Reason: "No default permission for " + printResource(res.Name)}
			}
			continue
		}
		if !CheckPermission(res.Perm, owned) {
			return &Denied{AccessKey: r.AccessKey, Reason: "No permission for " + printResource(res.Name)}
		}
	}
	return nil
}

// JavaError is an error whose text is Java's own message, word for word, so
// that tools matching on it keep working.
type JavaError string

func (e JavaError) Error() string { return string(e) }

func javaErr(format string, args ...any) error { return JavaError(fmt.Sprintf(format, args...)) }

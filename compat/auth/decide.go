package auth

import (
	"errors"
	"net/netip"
)

// Error is a refusal with Java's message (AuthenticationException or
// AuthorizationException); the broker answers NO_PERMISSION with it.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func refuse(format string, a ...any) *Error { return &Error{Msg: javaFormat(format, a...)} }

// javaFormat fills "{}" placeholders in order, as Java's exceptions do.
func javaFormat(format string, a ...any) string {
	out := make([]byte, 0, len(format)+32)
	for i := 0; i < len(format); i++ {
		if format[i] == '{' && i+1 < len(format) && format[i+1] == '}' && len(a) > 0 {
			switch v := a[0].(type) {
			case string:
				out = append(out, v...)
			default:
				out = append(out, "?"...)
			}
			a = a[1:]
			i++
			continue
		}
		out = append(out, format[i])
	}
	return string(out)
}

// IsRefusal reports whether err is a refusal (not a fault).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// CheckUser is DefaultAuthenticationHandler before the signature: the user
// must exist and be enabled. The caller then verifies the signature with
// u.Password and answers SignatureFailed when it does not match.
func CheckUser(username string, u *User) error {
	if username == "" {
		return refuse("username cannot be null.")
	}
	if u == nil {
		return refuse("User:{} is not found.", username)
	}
	if u.Disabled {
		return refuse("User:{} is disabled.", username)
	}
	return nil
}

// SignatureFailed is the refusal of a wrong or missing signature.
func SignatureFailed() error { return refuse("check signature failed.") }

// Request is one authorization context: who wants which actions on which
// resource from where.
type Request struct {
	Username    string // "" when the request named no user
	HasUsername bool
	Resource    Resource
	Actions     Action
	Addr        netip.Addr
	AddrText    string // the source IP as printed in refusals; "": Addr's text
}

// Authorize is the DefaultAuthorizationProvider chain (UserAuthorizationHandler
// then AclAuthorizationHandler): super users pass; otherwise the most specific
// matching entry of the Custom policy (else of the Default policy) decides,
// and no matching entry refuses.
//
// Where entries are equally specific, Deny wins. (5.3.3's comparator sorts
// Allow first there, against its own comment, and its prefix/literal ordering
// was fixed only after 5.3.3 (apache/rocketmq #9540); rmqd follows the fixed
// order and the documented deny-over-allow rule.)
func Authorize(r *Request, u *User, acl *Acl) error {
	if !r.HasUsername {
		return refuse("Authorization failed. Please verify your access rights and try again.")
	}
	if u == nil {
		return refuse("User:{} not found.", r.Username)
	}
	if u.Disabled {
		return refuse("User:{} is disabled.", r.Username)
	}
	if u.Super {
		return nil
	}
	if acl == nil {
		return r.denied("no matched policies.")
	}
	best := acl.best(PolicyCust, r)
	if best == nil {
		best = acl.best(PolicyDef, r)
	}
	if best == nil {
		return r.denied("no matched policies.")
	}
	if best.Deny {
		return r.denied("the decision is deny.")
	}
	return nil
}

func (r *Request) denied(detail string) error {
	text := r.AddrText
	if text == "" && r.Addr.IsValid() {
		text = r.Addr.String()
	}
	return refuse("{} has no permission to access {} from {}, "+detail, SubjectKey(r.Username), r.Resource.Key(), text)
}

// best is the entry of policy t that decides r, or nil.
func (a *Acl) best(t string, r *Request) *Entry {
	p := a.Policy(t)
	if p == nil {
		return nil
	}
	var best *Entry
	for i := range p.Entries {
		e := &p.Entries[i]
		if !e.Resource.Match(r.Resource) || !e.matchActions(r.Actions) || !e.matchSource(r.Addr) {
			continue
		}
		if best == nil || before(e, best) {
			best = e
		}
	}
	return best
}

// rank orders resource patterns from the most specific: a literal name, a
// prefix (longer first, see before), the type's "*", then "*".
func rank(r Resource) int {
	switch {
	case r.Type == TypeAny:
		return 3
	case r.Pattern == PatLiteral:
		return 0
	case r.Pattern == PatPrefixed:
		return 1
	}
	return 2
}

// before reports whether e decides over f.
func before(e, f *Entry) bool {
	re, rf := rank(e.Resource), rank(f.Resource)
	if re != rf {
		return re < rf
	}
	if re == 1 && len(e.Resource.Name) != len(f.Resource.Name) {
		return len(e.Resource.Name) > len(f.Resource.Name)
	}
	return e.Deny && !f.Deny
}

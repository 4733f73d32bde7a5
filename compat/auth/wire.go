package auth

import (
	"strings"
)

// UserInfo is the body of AUTH_CREATE_USER / AUTH_UPDATE_USER and the answer
// to AUTH_GET_USER (a list of them for AUTH_LIST_USER). Fields in fastjson's
// order; absent ones left out as fastjson leaves out nulls.
type UserInfo struct {
	Password   string `json:"password,omitempty"`
	UserStatus string `json:"userStatus,omitempty"`
	UserType   string `json:"userType,omitempty"`
	Username   string `json:"username,omitempty"`
}

// AclInfo is the body of AUTH_CREATE_ACL / AUTH_UPDATE_ACL and the answer to
// AUTH_GET_ACL (a list for AUTH_LIST_ACL).
type AclInfo struct {
	Policies []PolicyInfo `json:"policies,omitempty"`
	Subject  string       `json:"subject,omitempty"`
}

// PolicyInfo is AclInfo.PolicyInfo.
type PolicyInfo struct {
	Entries    []PolicyEntryInfo `json:"entries,omitempty"`
	PolicyType string            `json:"policyType,omitempty"`
}

// PolicyEntryInfo is AclInfo.PolicyEntryInfo.
type PolicyEntryInfo struct {
	Actions   []string `json:"actions,omitempty"`
	Decision  string   `json:"decision,omitempty"`
	Resource  string   `json:"resource,omitempty"`
	SourceIPs []string `json:"sourceIps,omitempty"`
}

// FromUserInfo is UserConverter.convertUser for a create/update: type and
// status stay unset ("" ) when the body leaves them out or names none Java
// knows.
func FromUserInfo(in *UserInfo) (u User, typ, status string) {
	u.Username, u.Password = in.Username, in.Password
	switch {
	case strings.EqualFold(in.UserType, UserSuper):
		typ = UserSuper
	case strings.EqualFold(in.UserType, UserNormal):
		typ = UserNormal
	}
	switch {
	case strings.EqualFold(in.UserStatus, StatusOn):
		status = StatusOn
	case strings.EqualFold(in.UserStatus, StatusOff):
		status = StatusOff
	}
	u.Super, u.Disabled = typ == UserSuper, status == StatusOff
	return u, typ, status
}

// ToUserInfo is UserConverter.convertUser for an answer (Java includes the
// password).
func ToUserInfo(u *User) UserInfo {
	info := UserInfo{Username: u.Username, Password: u.Password, UserType: UserNormal, UserStatus: StatusOn}
	if u.Super {
		info.UserType = UserSuper
	}
	if u.Disabled {
		info.UserStatus = StatusOff
	}
	return info
}

// FromAclInfo is AclConverter.convertAcl followed by the manager's initAcl and
// validate: a policy without a type is Custom, and every entry must name a
// resource, actions other than Any, valid source IPs and a decision. Errors
// carry Java's messages.
func FromAclInfo(in *AclInfo) ([]Policy, error) {
	if in == nil || len(in.Policies) == 0 {
		return nil, refuse("The policies is empty.")
	}
	out := make([]Policy, 0, len(in.Policies))
	for _, pi := range in.Policies {
		p := Policy{Type: PolicyCust}
		if strings.EqualFold(pi.PolicyType, PolicyDef) {
			p.Type = PolicyDef
		}
		if len(pi.Entries) == 0 {
			return nil, refuse("The policy entries is empty.")
		}
		for _, ei := range pi.Entries {
			var e Entry
			r, ok := ParseResource(ei.Resource)
			if !ok {
				return nil, refuse("The resource is null.")
			}
			e.Resource = r
			for _, a := range ei.Actions {
				if act, ok := ParseAction(a); ok {
					e.Actions |= act
				}
			}
			if e.Actions == 0 {
				return nil, refuse("The actions is empty.")
			}
			if e.Actions&ActAny != 0 {
				return nil, refuse("The actions can not be Any.")
			}
			for _, s := range ei.SourceIPs {
				if strings.TrimSpace(s) == "" {
					return nil, refuse("The source ip is empty.")
				}
				src, err := ParseSource(s)
				if err != nil {
					return nil, refuse("The source ip is invalid.")
				}
				e.Sources = append(e.Sources, src)
			}
			switch {
			case strings.EqualFold(ei.Decision, DecideAllow):
			case strings.EqualFold(ei.Decision, DecideDeny):
				e.Deny = true
			default:
				return nil, refuse("The decision is null or illegal.")
			}
			p.Entries = append(p.Entries, e)
		}
		out = append(out, p)
	}
	return out, nil
}

// ToAclInfo is AclConverter.convertAcl for an answer.
func ToAclInfo(a *Acl) AclInfo {
	info := AclInfo{Subject: a.Subject}
	for _, p := range a.Policies {
		pi := PolicyInfo{PolicyType: p.Type}
		for _, e := range p.Entries {
			ei := PolicyEntryInfo{Resource: e.Resource.Key(), Actions: e.Actions.Names(), Decision: DecideAllow}
			if e.Deny {
				ei.Decision = DecideDeny
			}
			for _, s := range e.Sources {
				ei.SourceIPs = append(ei.SourceIPs, s.Text)
			}
			pi.Entries = append(pi.Entries, ei)
		}
		info.Policies = append(info.Policies, pi)
	}
	return info
}

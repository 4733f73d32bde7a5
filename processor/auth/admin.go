package auth

import (
	"context"
	"strings"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/remoting"
)

// notEnabled answers the AUTH_* codes on a broker with neither switch on.
// (Java 5.3 serves them anyway, into a store nothing reads; rmqd says so
// instead of keeping users that protect nothing.)
const notEnabled = "The broker does not enable authentication or authorization."

// Handlers returns the AUTH_* admin processors (AdminBrokerProcessor's
// createUser ... listAcl). m may be nil: the codes then answer SYSTEM_ERROR.
func Handlers(m *Manager) map[int32]remoting.Processor {
	f := func(fn func(*codec.RemotingCommand) *codec.RemotingCommand) remoting.Processor {
		return remoting.ProcessorFunc(func(_ context.Context, _ remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
			if m == nil {
				return codec.NewResponse(req, codec.RespSystemError, notEnabled), nil
			}
			return fn(req), nil
		})
	}
	return map[int32]remoting.Processor{
		codec.ReqAuthCreateUser: f(m.createUser),
		codec.ReqAuthUpdateUser: f(m.updateUser),
		codec.ReqAuthDeleteUser: f(m.deleteUser),
		codec.ReqAuthGetUser:    f(m.getUser),
		codec.ReqAuthListUser:   f(m.listUser),
		codec.ReqAuthCreateAcl:  f(m.createOrUpdateAcl),
		codec.ReqAuthUpdateAcl:  f(m.createOrUpdateAcl),
		codec.ReqAuthDeleteAcl:  f(m.deleteAcl),
		codec.ReqAuthGetAcl:     f(m.getAcl),
		codec.ReqAuthListAcl:    f(m.listAcl),
	}
}

// answer is handleAuthException: refusals are NO_PERMISSION with their
// message, anything else SYSTEM_ERROR with Java's generic remark.
func (m *Manager) answer(req *codec.RemotingCommand, err error) *codec.RemotingCommand {
	if err == nil {
		return codec.NewResponse(req, codec.RespSuccess, "")
	}
	if jauth.IsRefusal(err) {
		return codec.NewResponse(req, codec.RespNoPermission, err.Error())
	}
	m.log.Error("auth: admin request failed", "code", req.Code, "err", err)
	return codec.NewResponse(req, codec.RespSystemError, "An system error occurred, please try again later.")
}

func refusal(msg string) error { return &jauth.Error{Msg: msg} }

// notSuperLogin is isNotSuperUserLogin: the request is signed by a user who
// is not a super user (unsigned requests pass: authentication is then off).
func (m *Manager) notSuperLogin(req *codec.RemotingCommand) bool {
	ak, _ := req.Ext.Get(jacl.FieldAccessKey)
	if ak == "" {
		return false
	}
	u := m.User(ak)
	return u == nil || !u.Super
}

func withBody(resp *codec.RemotingCommand, v any) *codec.RemotingCommand {
	b, err := codec.MarshalBody(v)
	if err != nil {
		return codec.NewResponse(resp, codec.RespSystemError, err.Error())
	}
	resp.Body = b
	return resp
}

func decodeUser(req *codec.RemotingCommand) (*jauth.UserInfo, error) {
	var in jauth.UserInfo
	if len(req.Body) > 0 {
		if err := codec.UnmarshalBody(req.Body, &in); err != nil {
			return nil, err
		}
	}
	// Header values alias the request's frame: clone what is kept.
	name, _ := req.Ext.Get("username")
	in.Username = strings.Clone(name)
	return &in, nil
}

func (m *Manager) createUser(req *codec.RemotingCommand) *codec.RemotingCommand {
	if name, _ := req.Ext.Get("username"); name == "" {
		return codec.NewResponse(req, codec.RespInvalidParameter, "The username is blank")
	}
	in, err := decodeUser(req)
	if err != nil {
		return m.answer(req, err)
	}
	u, _, _ := jauth.FromUserInfo(in)
	if u.Super && m.notSuperLogin(req) {
		return codec.NewResponse(req, codec.RespSystemError, "The super user can only be create by super user")
	}
	if strings.TrimSpace(u.Password) == "" {
		return m.answer(req, refusal("password can not be blank"))
	}
	return m.answer(req, m.update(func(st *state) error {
		if st.users[u.Username] != nil {
			return refusal("The user is existed")
		}
		st.users[u.Username] = &u
		return nil
	}))
}

func (m *Manager) updateUser(req *codec.RemotingCommand) *codec.RemotingCommand {
	if name, _ := req.Ext.Get("username"); name == "" {
		return codec.NewResponse(req, codec.RespInvalidParameter, "The username is blank")
	}
	in, err := decodeUser(req)
	if err != nil {
		return m.answer(req, err)
	}
	u, typ, status := jauth.FromUserInfo(in)
	notSuper := m.notSuperLogin(req)
	if u.Super && notSuper {
		return codec.NewResponse(req, codec.RespSystemError, "The super user can only be update by super user")
	}
	return m.answer(req, m.update(func(st *state) error {
		old := st.users[u.Username]
		if old == nil {
			return refusal("The user is not exist")
		}
		if old.Super && notSuper {
			return refusal("The super user can only be update by super user")
		}
		n := *old
		if u.Password != "" {
			n.Password = u.Password
		}
		if typ != "" {
			n.Super = u.Super
		}
		if status != "" {
			n.Disabled = u.Disabled
		}
		st.users[u.Username] = &n
		return nil
	}))
}

func (m *Manager) deleteUser(req *codec.RemotingCommand) *codec.RemotingCommand {
	name, _ := req.Ext.Get("username")
	notSuper := m.notSuperLogin(req)
	return m.answer(req, m.update(func(st *state) error {
		u := st.users[name]
		if u == nil {
			return nil
		}
		if u.Super && notSuper {
			return refusal("The super user can only be update by super user")
		}
		delete(st.users, name)
		delete(st.acls, jauth.SubjectKey(name))
		return nil
	}))
}

func (m *Manager) getUser(req *codec.RemotingCommand) *codec.RemotingCommand {
	name, _ := req.Ext.Get("username")
	if strings.TrimSpace(name) == "" {
		return codec.NewResponse(req, codec.RespInvalidParameter, "The username is blank")
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if u := m.User(name); u != nil {
		return withBody(resp, m.userInfo(req, u))
	}
	return resp
}

// userInfo is u as AUTH_GET_USER / AUTH_LIST_USER answer it. Java includes
// the password for any caller granted Cluster Get; rmqd only for a super
// user whose signature was checked (fastjson clients take a missing field
// as null).
func (m *Manager) userInfo(req *codec.RemotingCommand, u *jauth.User) jauth.UserInfo {
	info := jauth.ToUserInfo(u)
	if !m.verifiedSuper(req) {
		info.Password = ""
	}
	return info
}

// verifiedSuper reports whether req was authenticated as a super user.
func (m *Manager) verifiedSuper(req *codec.RemotingCommand) bool {
	if !m.cfg.AuthenticationEnabled || m.authnWL[req.Code] {
		return false // the AccessKey field is the client's word only
	}
	ak, _ := req.Ext.Get(jacl.FieldAccessKey)
	u := m.User(ak)
	return u != nil && u.Super && !u.Disabled
}

func (m *Manager) listUser(req *codec.RemotingCommand) *codec.RemotingCommand {
	filter, _ := req.Ext.Get("filter")
	st := m.cur.Load()
	var out []jauth.UserInfo
	for _, name := range sortedKeys(st.users) {
		if strings.TrimSpace(filter) != "" && !strings.Contains(name, filter) {
			continue
		}
		out = append(out, m.userInfo(req, st.users[name]))
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if len(out) == 0 {
		return resp
	}
	return withBody(resp, out)
}

// subjectUser is Subject.of for "User:name"; ok false for anything else.
func subjectUser(s string) (string, bool) {
	typ, name, found := strings.Cut(s, ":")
	if !found || !strings.EqualFold(typ, "User") {
		return "", false
	}
	return name, true
}

// createOrUpdateAcl is createAcl and updateAcl, which 5.3.3 implements alike:
// the body's entries are merged into the subject's ACL, per resource.
func (m *Manager) createOrUpdateAcl(req *codec.RemotingCommand) *codec.RemotingCommand {
	subject, _ := req.Ext.Get("subject")
	var in jauth.AclInfo
	if len(req.Body) > 0 {
		if err := codec.UnmarshalBody(req.Body, &in); err != nil {
			return m.answer(req, err)
		}
	}
	if len(in.Policies) == 0 {
		return m.answer(req, refusal("The body of acl is null"))
	}
	if in.Subject != "" {
		subject = in.Subject
	}
	name, ok := subjectUser(subject)
	if !ok {
		return m.answer(req, refusal("The subject type is null."))
	}
	ps, err := jauth.FromAclInfo(&in)
	if err != nil {
		return m.answer(req, err)
	}
	key := jauth.SubjectKey(name)
	return m.answer(req, m.update(func(st *state) error {
		if st.users[name] == nil {
			return refusal("The subject of " + key + " is not exist.")
		}
		a := &jauth.Acl{Subject: key}
		if old := st.acls[key]; old != nil {
			a = old.Clone()
		}
		a.Merge(ps)
		st.acls[key] = a
		return nil
	}))
}

func (m *Manager) deleteAcl(req *codec.RemotingCommand) *codec.RemotingCommand {
	subject, _ := req.Ext.Get("subject")
	if subject == "" {
		return m.answer(req, refusal("The subject is null."))
	}
	name, ok := subjectUser(subject)
	if !ok {
		return m.answer(req, refusal("The subject is null."))
	}
	ptype := jauth.PolicyCust
	if t, _ := req.Ext.Get("policyType"); strings.EqualFold(t, jauth.PolicyDef) {
		ptype = jauth.PolicyDef
	}
	rkey, _ := req.Ext.Get("resource")
	res, hasRes := jauth.ParseResource(rkey)
	key := jauth.SubjectKey(name)
	return m.answer(req, m.update(func(st *state) error {
		if st.users[name] == nil {
			return refusal("The subject is not exist.")
		}
		old := st.acls[key]
		if old == nil {
			return refusal("The acl is not exist.")
		}
		if !hasRes {
			delete(st.acls, key)
			return nil
		}
		a := old.Clone()
		a.DeleteEntry(ptype, res)
		if len(a.Policies) == 0 {
			delete(st.acls, key)
		} else {
			st.acls[key] = a
		}
		return nil
	}))
}

func (m *Manager) getAcl(req *codec.RemotingCommand) *codec.RemotingCommand {
	subject, _ := req.Ext.Get("subject")
	name, ok := subjectUser(subject)
	if !ok || m.User(name) == nil {
		return m.answer(req, refusal("The subject is not exist."))
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if a := m.Acl(jauth.SubjectKey(name)); a != nil {
		return withBody(resp, jauth.ToAclInfo(a))
	}
	return resp
}

func (m *Manager) listAcl(req *codec.RemotingCommand) *codec.RemotingCommand {
	sf, _ := req.Ext.Get("subjectFilter")
	rf, _ := req.Ext.Get("resourceFilter")
	st := m.cur.Load()
	var out []jauth.AclInfo
	for _, key := range sortedKeys(st.acls) {
		if strings.TrimSpace(sf) != "" && !strings.Contains(key, sf) {
			continue
		}
		info := jauth.ToAclInfo(st.acls[key])
		if strings.TrimSpace(rf) != "" && !strings.Contains(key, rf) {
			// LocalAuthorizationMetadataProvider keeps the entries whose
			// resource contains the filter (all of them when the subject
			// does), and the ACL if any is left.
			ps := info.Policies[:0]
			for _, p := range info.Policies {
				es := p.Entries[:0]
				for _, e := range p.Entries {
					if strings.Contains(e.Resource, rf) {
						es = append(es, e)
					}
				}
				if p.Entries = es; len(es) > 0 {
					ps = append(ps, p)
				}
			}
			if info.Policies = ps; len(ps) == 0 {
				continue
			}
		}
		out = append(out, info)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if len(out) == 0 {
		return resp
	}
	return withBody(resp, out)
}

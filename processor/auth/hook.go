package auth

import (
	"strings"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/processor/acl"
	"rmqd/remoting"
)

// Hook is the remoting.RPCHook of ACL 2.0: Java's AuthenticationPipeline
// then AuthorizationPipeline, in front of every request.
type Hook struct{ m *Manager }

// Hook returns the RPC hook checking requests against m.
func (m *Manager) Hook() *Hook { return &Hook{m: m} }

var _ remoting.RPCHook = (*Hook)(nil)

// After is part of remoting.RPCHook.
func (h *Hook) After(remoting.Conn, *codec.RemotingCommand, *codec.RemotingCommand) {}

// Before authenticates and authorizes req; a refusal answers NO_PERMISSION
// with Java's message and logs one line naming the user and the address.
func (h *Hook) Before(c remoting.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	m := h.m
	st := m.cur.Load()
	user, hasUser := req.Ext.Get(jacl.FieldAccessKey)
	if m.cfg.AuthenticationEnabled && !m.authnWL[req.Code] {
		u := st.users[user]
		if err := jauth.CheckUser(user, u); err != nil {
			return h.refuse(c, req, user, err)
		}
		bp := m.scratch.Get().(*[]byte)
		ok := acl.VerifySignature(req, st.secrets[user], bp)
		m.scratch.Put(bp)
		if !ok {
			return h.refuse(c, req, user, jauth.SignatureFailed())
		}
	}
	if !m.cfg.AuthorizationEnabled || m.authzWL[req.Code] {
		return nil
	}
	np := m.needs.Get().(*[]need)
	defer func() {
		clear(*np) // drop the names, which alias the request's frame
		m.needs.Put(np)
	}()
	ns, err := needs((*np)[:0], req, m.cfg.ClusterName)
	*np = ns
	if err != nil {
		return h.refuse(c, req, user, &jauth.Error{Msg: "parse authorization context error."})
	}
	if len(ns) == 0 {
		return nil
	}
	r := jauth.Request{Username: user, HasUsername: hasUser, Addr: acl.PeerAddr(c.RemoteAddr())}
	u, a := st.users[user], st.acls[jauth.SubjectKey(user)]
	for i := range ns {
		r.Resource, r.Actions = ns[i].res, ns[i].actions
		if err := jauth.Authorize(&r, u, a); err != nil {
			return h.refuse(c, req, user, err)
		}
	}
	return nil
}

// refuse answers NO_PERMISSION (the 5.3 pipelines' AbortProcessException)
// and queues the log line; the hook may run on an event loop, which must not
// wait on the log's writer.
func (h *Hook) refuse(c remoting.Conn, req *codec.RemotingCommand, user string, err error) *codec.RemotingCommand {
	reason := err.Error()
	h.m.refusals.Add(acl.Refusal{User: strings.Clone(user), Addr: c.RemoteAddr().String(), Code: req.Code, Reason: reason})
	return codec.NewResponse(req, codec.RespNoPermission, reason)
}

// AuthorizeResource checks, for a request the hook has let through, a
// resource the handler found only after reading the store (the record at a
// commitlog offset): actions on res for the request's user, as the hook
// would have checked it had it been in the header. It answers NO_PERMISSION
// with the hook's reason and log line, or nil when allowed.
func (m *Manager) AuthorizeResource(c remoting.Conn, req *codec.RemotingCommand, res jauth.Resource, actions jauth.Action) *codec.RemotingCommand {
	if !m.cfg.AuthorizationEnabled || m.authzWL[req.Code] {
		return nil
	}
	st := m.cur.Load()
	user, hasUser := req.Ext.Get(jacl.FieldAccessKey)
	r := jauth.Request{Username: user, HasUsername: hasUser, Addr: acl.PeerAddr(c.RemoteAddr()), Resource: res, Actions: actions}
	if err := jauth.Authorize(&r, st.users[user], st.acls[jauth.SubjectKey(user)]); err != nil {
		return (&Hook{m: m}).refuse(c, req, user, err)
	}
	return nil
}

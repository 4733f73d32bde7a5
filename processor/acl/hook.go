package acl

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	"rmqd/processor/pop"
	"rmqd/remoting"
)

// extFields adapts a request's header to the signer without copying it.
type extFields codec.ExtFields

func (e *extFields) Len() int { return len(*e) }
func (e *extFields) At(i int) (string, string) {
	f := (*e)[i]
	return f.Key, f.Value
}

// Hook is the remoting.RPCHook that enforces ACL 1.0 (Java's
// PlainAccessValidator registered as a server RPC hook).
type Hook struct{ m *Manager }

// Hook returns the RPC hook checking requests against m.
func (m *Manager) Hook() *Hook { return &Hook{m: m} }

var _ remoting.RPCHook = (*Hook)(nil)

// After is part of remoting.RPCHook.
func (h *Hook) After(remoting.Conn, *codec.RemotingCommand, *codec.RemotingCommand) {}

// Before checks req and answers NO_PERMISSION with Java's reason when it is
// refused. Java 4.9.x answers SYSTEM_ERROR with the exception text for the
// same refusals; rmqd answers NO_PERMISSION, as the 5.x auth pipeline does, so
// that clients can tell a refusal from a broker fault.
func (h *Hook) Before(c remoting.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	chk := h.m.cur.Load()
	if chk == nil {
		return nil
	}
	r := jacl.Request{Code: req.Code, Addr: PeerAddr(c.RemoteAddr())}
	r.AccessKey, r.HasAccessKey = req.Ext.Get(jacl.FieldAccessKey)
	dec, secret, err := chk.Authenticate(&r)
	if err != nil {
		return h.refuse(c, req, r.AccessKey, err)
	}
	if dec == jacl.Allow {
		return nil
	}
	if !h.verify(req, secret) {
		return h.refuse(c, req, r.AccessKey, jacl.SignatureFailed(r.AccessKey))
	}
	rp := h.m.resources.Get().(*[]jacl.Resource)
	defer func() {
		clear(*rp) // drop the names, which alias the request's frame
		h.m.resources.Put(rp)
	}()
	res, err := resources((*rp)[:0], req)
	*rp = res
	if err != nil {
		return h.refuse(c, req, r.AccessKey, &jacl.Denied{AccessKey: r.AccessKey, Reason: err.Error()})
	}
	r.Resources = res
	if err := chk.Authorize(&r); err != nil {
		return h.refuse(c, req, r.AccessKey, err)
	}
	return nil
}

// verify checks the Signature field with the account's secret key.
func (h *Hook) verify(req *codec.RemotingCommand, secret *jacl.Secret) bool {
	bp := h.m.scratch.Get().(*[]byte)
	defer h.m.scratch.Put(bp)
	return VerifySignature(req, secret, bp)
}

// VerifySignature checks req's Signature field with secret, as
// AclClientRPCHook signs (ACL 1.0 and 2.0 alike). Clients up to 4.9.3 add
// _UNIQUE_KEY_QUERY after signing (Java's server skips it for them). The Go
// client (v2.1.2) leaves the SecurityToken value out of what it signs; Java
// refuses such requests, rmqd accepts that form too since the token adds
// nothing secret. scratch is reused and grown.
func VerifySignature(req *codec.RemotingCommand, secret *jacl.Secret, scratch *[]byte) bool {
	sent, has := req.Ext.Get(jacl.FieldSignature)
	if !has {
		return false
	}
	var skip func(string) bool
	if req.Version <= jacl.VersionV4_9_3 {
		skip = skipUniqueKeyQuery
	}
	bp := scratch
	mac := secret.MAC()
	defer secret.PutMAC(mac)
	f := (*extFields)(&req.Ext)
	// Sorted once for both forms: the sort runs before the signature is
	// known to be good, on up to the frame's field limit.
	var stack [32]int
	idx := jacl.SortFields(stack[:0], f)
	*bp = jacl.WriteSorted(mac, *bp, f, idx, skip, req.Body)
	var ok bool
	if ok, *bp = jacl.VerifyMAC(mac, sent, *bp); ok {
		return true
	}
	if _, tok := req.Ext.Get(jacl.FieldSecurityToken); !tok {
		return false
	}
	mac.Reset()
	*bp = jacl.WriteSorted(mac, *bp, f, idx, func(k string) bool {
		return k == jacl.FieldSecurityToken || skip != nil && skip(k)
	}, req.Body)
	ok, *bp = jacl.VerifyMAC(mac, sent, *bp)
	return ok
}

func skipUniqueKeyQuery(k string) bool { return k == jacl.FieldUniqueKeyQuery }

// refuse answers NO_PERMISSION and queues the refusal's log line: the hook may
// run on a network event loop, which must not wait on the log's writer.
func (h *Hook) refuse(c remoting.Conn, req *codec.RemotingCommand, accessKey string, err error) *codec.RemotingCommand {
	reason := err.Error()
	h.m.refusals.Add(Refusal{User: strings.Clone(accessKey), Addr: c.RemoteAddr().String(), Code: req.Code, Reason: reason})
	return codec.NewResponse(req, codec.RespNoPermission, reason)
}

// PeerAddr is the peer IP without port, as Java's parse strips it (ACL 1.0
// and 2.0).
func PeerAddr(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap()
	}
	if a == nil {
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// resources is PlainAccessResource.parse: which topics and groups a request
// touches and the permission each needs. Groups are named by their retry topic.
// A header field that is present is checked even when empty (Java checks ""
// and "%RETRY%" against the defaults); a missing one names nothing.
func resources(dst []jacl.Resource, req *codec.RemotingCommand) ([]jacl.Resource, error) {
	add := func(name string, perm byte) { dst = append(dst, jacl.Resource{Name: name, Perm: perm}) }
	sendPerm := func(topic string) byte {
		if jacl.IsGroup(topic) {
			return jacl.Sub
		}
		return jacl.Pub
	}
	topic := func(k string, perm func(string) byte) {
		if v, ok := req.Ext.Get(k); ok {
			add(v, perm(v))
		}
	}
	sub := func(string) byte { return jacl.Sub }
	group := func(k string) {
		if v, ok := req.Ext.Get(k); ok {
			add(jacl.RetryTopic(v), jacl.Sub)
		}
	}
	// popTopic is a POP code's topic: in an ack, the group's own retry
	// topic (%RETRY%group+topic) is covered by the group check; any other
	// retry topic is checked as its group's.
	popTopic := func(t, group string) {
		if group == "" || !jacl.IsRetryTopicOf(t, group) {
			add(t, jacl.Sub)
		}
	}
	switch req.Code {
	case codec.ReqSendMessage, codec.ReqSendReplyMessage:
		topic("topic", sendPerm)
	case codec.ReqSendMessageV2, codec.ReqSendBatchMessage, codec.ReqSendReplyMessageV2:
		topic("b", sendPerm)
	case codec.ReqRecallMessage:
		topic("topic", func(string) byte { return jacl.Pub })
	case codec.ReqConsumerSendMsgBack:
		group("group")
	case codec.ReqPullMessage, codec.ReqLitePullMessage:
		topic("topic", sub)
		group("consumerGroup")
	case codec.ReqPopMessage, codec.ReqAckMessage, codec.ReqChangeMessageInvisibletime, codec.ReqPeekMessage,
		codec.ReqNotification, codec.ReqPollingInfo, codec.ReqPopLiteMessage:
		// Java's remoting parse maps none of the POP codes (any account
		// may pop any topic); rmqd asks what PULL_MESSAGE asks.
		if t, ok := req.Ext.Get("topic"); ok {
			g, _ := req.Ext.Get("consumerGroup")
			if !AcksInGroup(req.Code) {
				g = "" // the topic read: a retry topic is its own group's
			}
			popTopic(t, g)
		}
		group("consumerGroup")
	case codec.ReqLiteSubscriptionCtl:
		// Java 5.5 maps it to nothing; rmqd asks what a POP of each entry asks.
		body, err := codec.DecodeLiteSubscriptionCtlBody(req.Body)
		if err != nil {
			return nil, err
		}
		for _, e := range body.SubscriptionSet {
			add(e.Topic, jacl.Sub)
			add(jacl.RetryTopic(e.Group), jacl.Sub)
		}
	case codec.ReqBatchAckMessage:
		body, err := pop.DecodeBatchAckBody(req.Body)
		if err != nil {
			return nil, err
		}
		for _, a := range body.Acks {
			popTopic(a.Topic, a.ConsumerGroup)
			add(jacl.RetryTopic(a.ConsumerGroup), jacl.Sub)
		}
	case codec.ReqQueryMessage:
		topic("topic", sub)
	case codec.ReqHeartBeat:
		var hb codec.HeartbeatData
		if err := codec.UnmarshalBody(req.Body, &hb); err != nil {
			return nil, err
		}
		for _, cd := range hb.ConsumerDataSet {
			add(jacl.RetryTopic(cd.GroupName), jacl.Sub)
			for _, s := range cd.SubscriptionDataSet {
				add(s.Topic, jacl.Sub)
			}
		}
	case codec.ReqUnregisterClient, codec.ReqGetConsumerListByGroup:
		group("consumerGroup")
	case codec.ReqUpdateConsumerOffset:
		group("consumerGroup")
		topic("topic", sub)
	// Java's parse maps none of the codes below, so any account may move,
	// lock or switch any group; rmqd asks what UPDATE_CONSUMER_OFFSET asks.
	case codec.ReqInvokeBrokerToResetOffset:
		group("group")
		topic("topic", sub)
	case codec.ReqCloneGroupOffset:
		group("srcGroup")
		group("destGroup")
		if t, _ := req.Ext.Get("topic"); t != "" { // empty: every topic of srcGroup
			add(t, jacl.Sub)
		}
	case codec.ReqLockBatchMq, codec.ReqUnlockBatchMq:
		var body codec.LockBatchRequestBody
		if err := codec.UnmarshalBody(req.Body, &body); err != nil {
			return nil, fmt.Errorf("lock body: %w", err)
		}
		add(jacl.RetryTopic(body.ConsumerGroup), jacl.Sub)
		for _, mq := range body.MQSet {
			popTopic(mq.Topic, body.ConsumerGroup) // a group's own %RETRY% queue is its own
		}
	case codec.ReqConsumeMessageDirectly:
		group("consumerGroup")
		topic("topic", sub)
	case codec.ReqSetMessageRequestMode:
		var body struct {
			ConsumerGroup string `json:"consumerGroup"`
			Topic         string `json:"topic"`
		}
		if err := codec.UnmarshalBody(req.Body, &body); err != nil {
			return nil, fmt.Errorf("request mode body: %w", err)
		}
		add(jacl.RetryTopic(body.ConsumerGroup), jacl.Sub)
		popTopic(body.Topic, body.ConsumerGroup)
	}
	return dst, nil
}

// AcksInGroup reports the POP codes that only act on the caller's group's
// pop checkpoints, so that the pop retry topic clients send back in them
// (%RETRY%group+topic, or _ before retry v2) is the group's own. POP_MESSAGE
// and PEEK_MESSAGE read the topic named, where %RETRY%g_x is group g_x's.
func AcksInGroup(code int32) bool {
	return code == codec.ReqAckMessage || code == codec.ReqChangeMessageInvisibletime || code == codec.ReqBatchAckMessage
}

// SignRequest signs req as AclClientRPCHook does: AccessKey added, then
// Signature over the other fields and the body. The broker's own requests
// sign this way under ACL 2.0 (innerClientAuthenticationCredentials). A typed
// CustomHeader is moved into Ext first, or the signature would leave its
// fields out and the receiver, which reads them as ext fields, refuse it.
func SignRequest(req *codec.RemotingCommand, accessKey, secretKey string) {
	_ = req.MakeCustomHeaderToNet() // our own typed headers always read back
	req.Ext.Del(jacl.FieldSignature)
	req.Ext.Set(jacl.FieldAccessKey, accessKey)
	req.Ext.Set(jacl.FieldSignature, jacl.Signature(secretKey, (*extFields)(&req.Ext), req.Body))
}

// AuthorizeTopic checks, for a request the hook has let through, a topic the
// handler found only after reading the store (the record at a commitlog
// offset): perm on topic for the request's account, as the hook would have
// checked it had the topic been in the header. It answers NO_PERMISSION with
// the hook's reason and log line, or nil when allowed.
func (m *Manager) AuthorizeTopic(c remoting.Conn, req *codec.RemotingCommand, topic string, perm byte) *codec.RemotingCommand {
	chk := m.cur.Load()
	if chk == nil {
		return nil
	}
	h := Hook{m: m}
	r := jacl.Request{Code: req.Code, Addr: PeerAddr(c.RemoteAddr())}
	r.AccessKey, r.HasAccessKey = req.Ext.Get(jacl.FieldAccessKey)
	dec, _, err := chk.Authenticate(&r)
	if err != nil {
		return h.refuse(c, req, r.AccessKey, err)
	}
	if dec == jacl.Allow {
		return nil // a white address: the hook checks nothing either
	}
	res := [1]jacl.Resource{{Name: topic, Perm: perm}}
	r.Resources = res[:]
	if err := chk.Authorize(&r); err != nil {
		return h.refuse(c, req, r.AccessKey, err)
	}
	return nil
}

package processor

import (
	"rmqd/codec"
	"rmqd/compat"
	jacl "rmqd/compat/acl"
	"rmqd/processor/acl"
	"rmqd/processor/auth"
	"rmqd/processor/pop"
	"rmqd/remoting"
)

// acceptBrokerRevive reports a send to this broker's revive topic that
// another broker of the cluster made: an acting slave's POP checkpoint or
// ack (EscapeBridge.putMessageToSpecificQueue), which this broker's reviver
// then revives. Clients may not write there (compat.IsBrokerOnlyTopic: a
// forged checkpoint copies any message), so only a well-formed ck, ack or
// bAck record is taken, and only from a broker: with ACL 1.0 or 2.0 on,
// signed with innerClientAuthenticationCredentials (checked here, not only
// by the hook, which lets a white address through unsigned); with ACL off,
// only by a broker running enableSlaveActingMaster, the feature that sends
// them.
func (b *Broker) acceptBrokerRevive(c remoting.Conn, req *codec.RemotingCommand, h *codec.SendMessageRequestHeader) bool {
	cfg := b.conf()
	if req.Code == codec.ReqSendBatchMessage || h.Batch || h.Topic != compat.SysTopicRevivePrefix+cfg.BrokerClusterName {
		return false
	}
	if b.acl != nil || b.auth != nil {
		if !b.innerSigned(req) {
			b.log.Debug("revive topic send refused: not signed by the inner credentials", "remote", c.RemoteAddr())
			return false
		}
	} else if !cfg.EnableSlaveActingMaster {
		return false
	}
	tag, _ := codec.PropertyValue(h.Properties, codec.PropTags)
	if !pop.ValidReviveRecord(tag, req.Body) {
		b.log.Debug("revive topic send refused: not a POP checkpoint or ack", "remote", c.RemoteAddr(), "tag", tag)
		return false
	}
	return true
}

// innerSigned reports req signed by the innerClientAuthenticationCredentials
// account, as the broker's own requests sign (signInner).
func (b *Broker) innerSigned(req *codec.RemotingCommand) bool {
	ak, sk, ok, err := auth.ParseInnerCredentials(b.conf().InnerClientAuthenticationCredentials)
	if err != nil || !ok || sk == "" {
		return false
	}
	if got, _ := req.Ext.Get(jacl.FieldAccessKey); got != ak {
		return false
	}
	var scratch []byte
	return acl.VerifySignature(req, jacl.NewSecret(sk), &scratch)
}

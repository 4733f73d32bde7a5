package processor

import (
	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/remoting"
)

// topicAccess is what a handler does with a topic it learnt from the store
// rather than from the request's header.
type topicAccess uint8

const (
	accessView    topicAccess = iota // read a message (ACL 1.0 SUB, ACL 2.0 Sub or Get)
	accessConsume                    // copy a message into the caller's group (SUB / Sub)
	accessPublish                    // put a message into the topic (PUB / Pub)
)

// authorizeTopic asks the request hook in force (ACL 1.0 or ACL 2.0) whether
// the request's identity may do a with topic: requests naming a commitlog
// offset (VIEW_MESSAGE_BY_ID, CONSUMER_SEND_MSG_BACK, END_TRANSACTION) reach
// a record whose topic the hook never saw. It answers the hook's
// NO_PERMISSION, or nil when allowed or when neither is on.
func (b *Broker) authorizeTopic(c remoting.Conn, req *codec.RemotingCommand, topic string, a topicAccess) *codec.RemotingCommand {
	switch {
	case b.acl != nil:
		perm := jacl.Sub
		if a == accessPublish && !jacl.IsGroup(topic) {
			perm = jacl.Pub // a %RETRY% topic stands for its group, which is SUB (as for sends)
		}
		return b.acl.AuthorizeTopic(c, req, topic, perm)
	case b.auth != nil:
		if jauth.IsRetryTopic(topic) {
			return b.auth.AuthorizeResource(c, req, jauth.Group(topic), jauth.ActSub)
		}
		act := jauth.ActSub
		switch a {
		case accessView:
			act = jauth.ActSub | jauth.ActGet
		case accessPublish:
			act = jauth.ActPub
		}
		return b.auth.AuthorizeResource(c, req, jauth.Topic(topic), act)
	}
	return nil
}

// checksTopics reports whether authorizeTopic can refuse anything: the
// handlers skip decoding what it needs otherwise.
func (b *Broker) checksTopics() bool { return b.acl != nil || b.auth != nil }

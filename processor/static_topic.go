package processor

import (
	"context"
	"fmt"
	"math"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// Static topics (RocketMQ 5.x logical queues, `mqadmin updateStaticTopic`):
// clients address a logical queue id, which the topic's mapping on this
// broker (TopicQueueMappingManager) turns into a physical queue before a
// request is served. A logical queue that maps to one local queue from
// logical offset 0 (what updateStaticTopic creates) is served as that queue:
// logical and physical offsets are equal. One remapped to another broker
// (`remappingStaticTopic`) has several items, each a stretch of logical
// offsets held by one broker's physical queue; a request on it is served as
// Java's processors serve it (static_remap.go): from the item holding the
// offset asked for, here or forwarded to its broker (static_forward.go), with
// offsets turned between logical and physical ones.

// staticRefusal is the answer to a request on a static topic's logical queue
// that this broker cannot serve.
type staticRefusal struct {
	code   int32
	remark string
}

func (r *staticRefusal) response(req *codec.RemotingCommand) *codec.RemotingCommand {
	return codec.NewResponse(req, r.code, r.remark)
}

// forwardedRequest says whether req carries lo=false: Java's broker marks so a
// request it forwards with a physical queue id (buildTopicQueueMappingContext).
func forwardedRequest(req *codec.RemotingCommand) bool {
	lo, ok := req.Ext.GetBool("lo")
	return ok && !lo
}

// staticCtx is Java's TopicQueueMappingContext for a logical queue this
// broker leads: its items, oldest first, the last one the leader. The items
// are the stored mapping's: read only.
type staticCtx struct {
	d       *codec.TopicQueueMappingDetail
	logical int32
	items   []codec.LogicQueueMappingItem
}

func (s *staticCtx) leader() *codec.LogicQueueMappingItem { return &s.items[len(s.items)-1] }

// local reports an item held by this broker.
func (s *staticCtx) local(it *codec.LogicQueueMappingItem) bool { return it.Bname == s.d.Bname }

// physical reports the one local item from logical offset 0 that
// updateStaticTopic makes: served as its physical queue.
func (s *staticCtx) physical() bool {
	return len(s.items) == 1 && s.items[0].LogicOffset == 0 && s.items[0].StartOffset == 0
}

// staticLookup is the mapping of a static topic's logical queue (nil for a
// topic that is not static here, or a forwarded request). pick is the send's
// selectOneWhenMiss: a negative id takes the lowest logical queue hosted here.
// A queue this broker does not lead is refused as Java refuses it.
func (b *Broker) staticLookup(req *codec.RemotingCommand, topic string, logical int32, pick bool) (*staticCtx, *staticRefusal) {
	d := b.mappings.Get(topic)
	if d == nil || forwardedRequest(req) {
		return nil, nil
	}
	if logical < 0 && pick && len(d.HostedQueues) > 0 {
		logical = math.MaxInt32 // the lowest hosted logical queue
		for id := range d.HostedQueues {
			logical = min(logical, id)
		}
	}
	items := d.HostedQueues[logical]
	if logical < 0 || len(items) == 0 || items[len(items)-1].Bname != d.Bname {
		return nil, &staticRefusal{codec.RespNotLeaderForQueue,
			fmt.Sprintf("%s-%d does not exit in request process of current broker %s", topic, logical, d.Bname)}
	}
	return &staticCtx{d: d, logical: logical, items: items}, nil
}

// staticQueueHeader serves a queue request on a physical() logical queue by
// rewriting its queue id in place; a remapped one is returned for its own
// handling. A non-nil answer is a refusal.
func (b *Broker) staticQueueHeader(req *codec.RemotingCommand, topic string, queueID *int32) (*staticCtx, *codec.RemotingCommand) {
	s, r := b.staticLookup(req, topic, *queueID, false)
	if r != nil {
		return nil, r.response(req)
	}
	if s == nil {
		return nil, nil
	}
	if s.physical() {
		*queueID = s.items[0].QueueID
		return nil, nil
	}
	return s, nil
}

// handleUpdateAndCreateStaticTopic is UPDATE_AND_CREATE_STATIC_TOPIC
// (AdminBrokerProcessor.updateAndCreateStaticTopic): the topic config from
// the header, the mapping from the body (TopicQueueMappingDetail).
func (b *Broker) handleUpdateAndCreateStaticTopic(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.CreateTopicRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	force, _ := req.Ext.GetBool("force")
	topic := strings.Clone(h.Topic)
	if remark, ok := validateTopic(topic); !ok {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "static topic update refused"), nil
	}
	if b.guardsSystemTopic(topic) {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, systemTopicConflict(topic), "static topic update refused"), nil
	}
	d, err := codec.DecodeTopicQueueMappingDetail(req.Body)
	if err != nil {
		return b.refuseAdmin(c, req, codec.RespSystemError, err.Error(), "static topic update refused"), nil
	}
	// Java takes a mapping of another topic or broker (it only asserts, and
	// runs without -ea), which then answers every request NOT_LEADER_FOR_QUEUE.
	if d.Topic != topic || d.Bname != b.conf().BrokerName {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter,
			fmt.Sprintf("mapping of topic %q on broker %q sent to topic %q on broker %q", d.Topic, d.Bname, topic, b.conf().BrokerName),
			"static topic update refused"), nil
	}
	if remark := checkStaticMapping(d); remark != "" {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "static topic update refused"), nil
	}
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = h.ReadQueueNums, h.WriteQueueNums, h.Perm
	if h.TopicFilterType != "" {
		tc.TopicFilterType = strings.Clone(h.TopicFilterType)
	}
	tc.TopicSysFlag = h.TopicSysFlag
	if tc.Perm < 0 || tc.Perm >= 8 {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, fmt.Sprintf("perm %d is illegal", tc.Perm), "static topic update refused"), nil
	}
	if remark, ok := checkQueueNums(tc.ReadQueueNums, tc.WriteQueueNums); !ok {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "static topic update refused"), nil
	}
	d = d.Clone() // stored for good: nothing shared with the request's decoding
	// The mapping first: the topic change below wakes the registration, which
	// must carry the mapping (Java updates both before registering).
	if err := b.mappings.Update(d, force); err != nil {
		b.log.Warn("static topic update refused", "topic", topic, "err", err, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	b.topics.Update(tc)
	b.log.Info("static topic updated", "topic", topic, "readQueueNums", tc.ReadQueueNums,
		"writeQueueNums", tc.WriteQueueNums, "epoch", d.Epoch, "totalQueues", d.TotalQueues, "remote", c.RemoteAddr())
	if err := b.registerChanged(ctx); err != nil {
		b.log.Warn("register broker after static topic update", "topic", topic, "err", err)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// checkStaticMapping bounds what the wire may store: a total queue count a
// topic may have and logical ids inside it (Java checks neither; a client
// builds totalQueues logical queues from the route).
func checkStaticMapping(d *codec.TopicQueueMappingDetail) string {
	if d.TotalQueues < 0 || d.TotalQueues > compat.MaxQueueNums {
		return fmt.Sprintf("totalQueues %d is illegal, allowed 0..%d", d.TotalQueues, compat.MaxQueueNums)
	}
	for id, items := range d.HostedQueues {
		if id < 0 || id >= d.TotalQueues {
			return fmt.Sprintf("logical queue %d is outside totalQueues %d", id, d.TotalQueues)
		}
		for _, it := range items {
			if it.QueueID > compat.MaxQueueNums {
				return fmt.Sprintf("logical queue %d maps to physical queue %d, above %d", id, it.QueueID, compat.MaxQueueNums)
			}
		}
	}
	return ""
}

// staticTopicConfigBody is GET_TOPIC_CONFIG's TopicConfigAndQueueMapping: the
// topic config, with mappingDetail when the request asks lo=true (mqadmin's
// examineTopicConfigAll) and the topic is static here.
func (b *Broker) staticTopicConfigBody(req *codec.RemotingCommand, topic string, body []byte) []byte {
	if lo, _ := req.Ext.GetBool("lo"); !lo {
		return body
	}
	d := b.mappings.Get(topic)
	if d == nil || len(body) == 0 || body[len(body)-1] != '}' {
		return body
	}
	out := append(body[:len(body)-1:len(body)-1], `,"mappingDetail":`...)
	out = d.AppendJSON(out)
	return append(out, '}')
}

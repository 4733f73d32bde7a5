package processor

import (
	"context"
	"fmt"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// Static topics (RocketMQ 5.x logical queues, `mqadmin updateStaticTopic`):
// clients address a logical queue id, which the topic's mapping on this
// broker (TopicQueueMappingManager) turns into a physical queue id before a
// request is served. rmqd serves a logical queue that maps to one local
// queue from logical offset 0 (what updateStaticTopic creates), where logical
// and physical offsets are equal and only the queue id changes. A queue
// remapped to another broker (`remappingStaticTopic`) has several items, and
// Java would forward the request to the broker holding the offset asked for;
// rmqd answers SYSTEM_ERROR instead (staticRemappedRemark).

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

// staticQueue turns a static topic's logical queue id into the physical one
// it maps to here (static true, logical the id served, which pick may have
// chosen); a topic that is not static here, or a forwarded request, keeps its
// id. pick is the send's selectOneWhenMiss: a negative id takes the lowest
// logical queue hosted here.
func (b *Broker) staticQueue(req *codec.RemotingCommand, topic string, logical int32, pick bool) (phys, served int32, static bool, _ *staticRefusal) {
	d := b.mappings.Get(topic)
	if d == nil || forwardedRequest(req) {
		return logical, logical, false, nil
	}
	if logical < 0 && pick {
		for _, id := range codec.SortedKeys(d.HostedQueues) {
			logical = id
			break
		}
	}
	items := d.HostedQueues[logical]
	if logical < 0 || len(items) == 0 || items[len(items)-1].Bname != d.Bname {
		return 0, logical, true, &staticRefusal{codec.RespNotLeaderForQueue,
			fmt.Sprintf("%s-%d does not exit in request process of current broker %s", topic, logical, d.Bname)}
	}
	it := items[0]
	if len(items) > 1 || it.LogicOffset != 0 || it.StartOffset != 0 {
		return 0, logical, true, &staticRefusal{codec.RespSystemError, staticRemappedRemark(topic, logical, len(items))}
	}
	return it.QueueID, logical, true, nil
}

// staticRemappedRemark is the answer for a logical queue only a forward to
// another broker could serve.
func staticRemappedRemark(topic string, logical int32, items int) string {
	return fmt.Sprintf("static topic %s queue %d was remapped (%d mapping items): rmqd serves a logical queue only while it maps to one local queue from offset 0, and does not forward to other brokers",
		topic, logical, items)
}

// staticQueueHeader rewrites a queue request header's queue id in place;
// non-nil is the answer.
func (b *Broker) staticQueueHeader(req *codec.RemotingCommand, topic string, queueID *int32) *codec.RemotingCommand {
	phys, _, _, r := b.staticQueue(req, topic, *queueID, false)
	if r != nil {
		return r.response(req)
	}
	*queueID = phys
	return nil
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

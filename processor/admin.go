package processor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/pop"
	"rmqd/remoting"
)

// kvTable is the {"table":{k:v}} body.
type kvTable struct {
	Table map[string]string `json:"table"`
}

// checkQueueNums refuses read or write queue counts outside
// 0..compat.MaxQueueNums (Java takes any int: a topic of 2^31 queues answers
// GET_TOPIC_STATS_INFO with as many entries and hands every client a route
// that long).
func checkQueueNums(counts ...int32) (string, bool) {
	for _, n := range counts {
		if n != compat.ClampQueueNums(n) {
			return fmt.Sprintf("queue nums %d is illegal, allowed 0..%d", n, compat.MaxQueueNums), false
		}
	}
	return "", true
}

// handleUpdateAndCreateTopic is UPDATE_AND_CREATE_TOPIC.
func (b *Broker) handleUpdateAndCreateTopic(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (resp *codec.RemotingCommand, _ error) {
	start := time.Now()
	var h codec.CreateTopicRequestHeader
	err := codec.DecodeHeader(req.Ext, &h)
	topic := strings.Clone(h.Topic)
	tc := NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = h.ReadQueueNums, h.WriteQueueNums, h.Perm
	if h.TopicFilterType != "" {
		tc.TopicFilterType = strings.Clone(h.TopicFilterType)
	}
	tc.TopicSysFlag, tc.Order = h.TopicSysFlag, h.Order
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	// Timed from here on, refusals included, as AdminBrokerProcessor's finally does.
	defer func() { b.createTimes.topicDone(start, resp, compat.IsSystemTopic(topic)) }()
	if remark, ok := validateTopic(topic); !ok {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "topic update refused"), nil
	}
	if b.guardsSystemTopic(topic) {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, systemTopicConflict(topic), "topic update refused"), nil
	}
	if tc.Perm < 0 || tc.Perm >= 8 {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, fmt.Sprintf("perm %d is illegal", tc.Perm), "topic update refused"), nil
	}
	if remark, ok := checkQueueNums(tc.ReadQueueNums, tc.WriteQueueNums); !ok {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "topic update refused"), nil
	}
	mods, remark := parseAttrMods(h.Attributes)
	if remark != "" {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "topic update refused"), nil
	}
	old, exists := b.topics.Select(topic)
	if tc.Attributes, remark = alterTopicAttrs(!exists, old.Attributes, mods, b.conf().EnableMixedMessageType); remark != "" {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "topic update refused"), nil
	}
	b.topics.Update(tc)
	b.log.Info("topic updated", "topic", topic, "readQueueNums", tc.ReadQueueNums, "writeQueueNums", tc.WriteQueueNums,
		"perm", tc.Perm, "remote", c.RemoteAddr())
	// Java registers with the name servers before answering (registerIncrementBrokerData), so a client
	// that asks for the route right after `mqadmin updateTopic` finds the topic; the register loop alone
	// would leave a window where the route is unknown (the Go client's consumer Start then fails).
	// Only the changed topic goes, not the whole table.
	if err := b.registerChanged(ctx); err != nil {
		b.log.Warn("register broker after topic update", "topic", topic, "err", err)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// guardsSystemTopic reports whether an admin create, update or delete of
// topic is refused as a system topic (validateSystemTopicWhenUpdateTopic).
func (b *Broker) guardsSystemTopic(topic string) bool {
	return b.conf().ValidateSystemTopicWhenUpdateTopic && b.isSystemTopic(topic)
}

// systemTopicConflict is Java's remark for a system topic named by an admin
// create, update or delete.
func systemTopicConflict(topic string) string {
	return "The topic[" + topic + "] is conflict with system topic."
}

// handleDeleteTopicInBroker is DELETE_TOPIC_IN_BROKER: drop the config, the
// offsets and the store's queues.
func (b *Broker) handleDeleteTopicInBroker(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicOnlyRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topic := h.Topic
	if strings.TrimSpace(topic) == "" {
		return codec.NewResponse(req, codec.RespInvalidParameter, "The specified topic is blank."), nil
	}
	if b.guardsSystemTopic(topic) {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, systemTopicConflict(topic), "topic delete refused"), nil
	}
	topic = strings.Clone(topic)
	drop := []string{topic}
	// The POP retry topics of the groups that consumed it go with it
	// (clearRetryTopicWhenDeleteTopic, true by default): nothing else would
	// ever delete them.
	if b.conf().ClearRetryTopicWhenDeleteTopic {
		for _, g := range b.offsets.GroupsOfTopic(topic) {
			for _, rt := range pop.RetryTopics(topic, g) {
				if _, ok := b.topics.Select(rt); ok {
					drop = append(drop, rt)
				}
			}
		}
	}
	if tc, ok := b.topics.Select(topic); ok && isLiteTopic(tc) {
		b.cleanLiteOfParent(topic)
	}
	b.queuesMu.Lock()
	for _, t := range drop {
		b.mappings.Delete(t) // first: the deletion's registration must not carry it
		b.topics.Delete(t)
		b.offsets.DeleteTopic(t)
		b.pop.ForgetTopic(t)
		b.admin.stats.DeleteTopic(t) // onTopicDeleted (autoDeleteUnusedStats)
		b.events.forgetTopic(t)
	}
	b.store.DeleteTopics(drop)
	b.queuesMu.Unlock()
	// Outside queuesMu: the wheel's step holds its lock while it puts.
	for _, t := range drop {
		b.timer.ForgetTopic(t) // removeTimingCount
	}
	b.log.Info("topic deleted", "topic", topic, "retryTopics", drop[1:], "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleGetAllTopicConfig is GET_ALL_TOPIC_CONFIG (5.x: with the static
// topics' mappings).
func (b *Broker) handleGetAllTopicConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := codec.MarshalBody(b.topics.Snapshot())
	if err != nil {
		return nil, fmt.Errorf("encode topic configs: %w", err)
	}
	// Java's TopicConfigAndMappingSerializeWrapper: the static topics' mappings
	// too, which an rmqd slave copies (SyncFromMaster).
	body = b.mappings.AppendWrapperFields(body[:len(body)-1])
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = append(body, '}')
	return resp, nil
}

// handleGetTopicConfig is GET_TOPIC_CONFIG (TopicConfigAndQueueMapping: with
// the static topic's mapping detail when asked with lo=true).
func (b *Broker) handleGetTopicConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicOnlyRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	topic := h.Topic
	tc, ok := b.topics.Select(topic)
	if !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "No topic in this broker. topic: "+topic), nil
	}
	body, err := codec.MarshalBody(tc)
	if err != nil {
		return nil, fmt.Errorf("encode topic config: %w", err)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.staticTopicConfigBody(req, topic, body)
	return resp, nil
}

// handleGetAllSubscriptionGroupConfig is GET_ALL_SUBSCRIPTIONGROUP_CONFIG.
func (b *Broker) handleGetAllSubscriptionGroupConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := codec.MarshalBody(b.groups.Snapshot())
	if err != nil {
		return nil, fmt.Errorf("encode subscription groups: %w", err)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleUpdateAndCreateSubscriptionGroup is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
func (b *Broker) handleUpdateAndCreateSubscriptionGroup(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	start := time.Now()
	var sgc SubscriptionGroupConfig
	if err := codec.UnmarshalBody(req.Body, &sgc); err != nil || sgc.GroupName == "" {
		return codec.NewResponse(req, codec.RespSystemError, fmt.Sprintf("decode subscription group: %v", err)), nil
	}
	if remark, ok := checkGroupName(sgc.GroupName); !ok { // Java 5.3.3 takes any name here
		b.log.Warn("subscription group update refused", "remark", remark, "remote", c.RemoteAddr())
		return refuseName(req, remark), nil
	}
	// The group's retry topic is made with this many queues (Java checks nothing).
	if remark, ok := checkQueueNums(sgc.RetryQueueNums); !ok {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, "retryQueueNums: "+remark, "subscription group update refused"), nil
	}
	if remark := b.alterGroupAttrs(&sgc); remark != "" {
		return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "subscription group update refused"), nil
	}
	if err := b.groups.Update(sgc); err != nil {
		return nil, err
	}
	// Java times only a create that got this far (its refusals return before).
	b.createTimes.groupDone(start, true)
	b.log.Info("subscription group updated", "group", sgc.GroupName, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// alterGroupAttrs applies a group update's attributes modification to the
// stored group's, as Java's SubscriptionGroupManager does: no group attribute
// exists, so any is refused (Java answers SYSTEM_ERROR).
func (b *Broker) alterGroupAttrs(sgc *SubscriptionGroupConfig) string {
	old, exists := b.groups.Get(sgc.GroupName)
	attrs, remark := alterAttrs(groupAttrs, !exists, old.Attributes, attrModsOf(sgc.Attributes))
	if remark == "" {
		sgc.Attributes = attrs
	}
	return remark
}

// handleDeleteSubscriptionGroup is DELETE_SUBSCRIPTIONGROUP.
func (b *Broker) handleDeleteSubscriptionGroup(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.DeleteSubscriptionGroupRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	g := strings.Clone(h.GroupName)
	if err := b.groups.Delete(g); err != nil {
		return nil, err
	}
	if h.CleanOffset {
		b.offsets.DeleteGroup(g)
		b.pop.ForgetGroup(g)
	}
	b.admin.stats.DeleteGroup(g) // onGroupDeleted (autoDeleteUnusedStats)
	b.events.forgetGroup(g)
	b.log.Info("subscription group deleted", "group", g, "cleanOffset", h.CleanOffset, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// refuseAdmin answers an administrative request with code and remark and logs
// the refusal: admin requests are rare, so every refusal gets a line.
func (b *Broker) refuseAdmin(c remoting.Conn, req *codec.RemotingCommand, code int32, remark, what string) *codec.RemotingCommand {
	b.log.Warn(what, "remark", remark, "remote", c.RemoteAddr())
	return codec.NewResponse(req, code, remark)
}

// handleGetAllConsumerOffset is GET_ALL_CONSUMER_OFFSET (bare integer keys, as
// fastjson writes them).
func (b *Broker) handleGetAllConsumerOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.offsets.Encode()
	return resp, nil
}

// earliestMessageTime is the store time of the first commitlog record, 0 when
// the log is empty.
func (b *Broker) earliestMessageTime() int64 {
	min, max := b.store.MinPhyOffset(), b.store.MaxPhyOffset()
	if max <= min {
		return 0
	}
	m, err := b.store.LookMessageByOffset(min)
	if err != nil || m == nil {
		return 0
	}
	return m.StoreTimestamp
}

// handleGetAllDelayOffset is GET_ALL_DELAY_OFFSET: delayOffset.json's content.
func (b *Broker) handleGetAllDelayOffset(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.schedule.Encode()
	return resp, nil
}

// handleGetSubscriptionGroupConfig is GET_SUBSCRIPTIONGROUP_CONFIG. As Java's
// findSubscriptionGroupConfig it creates an unknown group when auto-creation
// is on: Apache's 5.5 proxy asks for a gRPC consumer's group before the
// consumer's first heartbeat and refuses the consumer when there is none.
func (b *Broker) handleGetSubscriptionGroupConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetSubscriptionGroupConfigRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	sgc, ok := b.groups.Find(h.Group)
	if !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "No group in this broker"), nil
	}
	body, err := codec.MarshalBody(sgc)
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleUpdateAndCreateTopicList is UPDATE_AND_CREATE_TOPIC_LIST (body
// {"topicConfigList":[TopicConfig,…]}).
func (b *Broker) handleUpdateAndCreateTopicList(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (resp *codec.RemotingCommand, _ error) {
	start := time.Now()
	var body struct {
		TopicConfigList []TopicConfig `json:"topicConfigList"`
	}
	if err := codec.UnmarshalBody(req.Body, &body); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode body: "+err.Error()), nil
	}
	defer func() {
		// Java labels the list by isSystemTopic of "t1;t2;...;": a system topic
		// only when the joined names still look like one.
		var names strings.Builder
		for _, tc := range body.TopicConfigList {
			names.WriteString(tc.TopicName)
			names.WriteByte(';')
		}
		b.createTimes.topicDone(start, resp, compat.IsSystemTopic(names.String()))
	}()
	for _, tc := range body.TopicConfigList {
		if remark, ok := validateTopic(tc.TopicName); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
		if b.guardsSystemTopic(tc.TopicName) {
			return codec.NewResponse(req, codec.RespInvalidParameter, systemTopicConflict(tc.TopicName)), nil
		}
		if tc.Perm < 0 || tc.Perm >= 8 {
			return codec.NewResponse(req, codec.RespInvalidParameter, fmt.Sprintf("perm %d is illegal", tc.Perm)), nil
		}
		if remark, ok := checkQueueNums(tc.ReadQueueNums, tc.WriteQueueNums); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
		}
	}
	// Every topic's attributes are checked before any topic is changed (Java
	// applies them one by one and keeps the ones before a refusal in memory).
	for i := range body.TopicConfigList {
		tc := &body.TopicConfigList[i]
		if tc.TopicFilterType == "" {
			tc.TopicFilterType = "SINGLE_TAG"
		}
		old, exists := b.topics.Select(tc.TopicName)
		var remark string
		if tc.Attributes, remark = alterTopicAttrs(!exists, old.Attributes, attrModsOf(tc.Attributes), b.conf().EnableMixedMessageType); remark != "" {
			return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "topic list update refused"), nil
		}
	}
	b.topics.Update(body.TopicConfigList...)
	// Registered before answering, as UPDATE_AND_CREATE_TOPIC is; only these topics.
	if err := b.registerChanged(ctx); err != nil {
		b.log.Warn("register broker after topic list update", "topics", len(body.TopicConfigList), "err", err)
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleUpdateAndCreateSubscriptionGroupList is
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (body {"groupConfigList":[…]}).
func (b *Broker) handleUpdateAndCreateSubscriptionGroupList(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	start := time.Now()
	var body struct {
		GroupConfigList []SubscriptionGroupConfig `json:"groupConfigList"`
	}
	if err := codec.UnmarshalBody(req.Body, &body); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode body: "+err.Error()), nil
	}
	for _, g := range body.GroupConfigList {
		if g.GroupName == "" {
			continue
		}
		if remark, ok := checkGroupName(g.GroupName); !ok {
			return refuseName(req, remark), nil
		}
		if remark, ok := checkQueueNums(g.RetryQueueNums); !ok {
			return codec.NewResponse(req, codec.RespInvalidParameter, "retryQueueNums: "+remark), nil
		}
	}
	named := slices.DeleteFunc(body.GroupConfigList, func(g SubscriptionGroupConfig) bool { return g.GroupName == "" })
	for i := range named {
		if remark := b.alterGroupAttrs(&named[i]); remark != "" {
			return b.refuseAdmin(c, req, codec.RespInvalidParameter, remark, "subscription group list update refused"), nil
		}
	}
	err := b.groups.Update(named...)
	b.createTimes.groupDone(start, err == nil)
	if err != nil {
		return nil, err
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

package auth

import (
	"fmt"
	"strings"

	"rmqd/codec"
	jacl "rmqd/compat/acl"
	jauth "rmqd/compat/auth"
	"rmqd/processor/acl"
	"rmqd/processor/pop"
)

// need is one authorization context: a resource and the actions wanted on it.
type need struct {
	res     jauth.Resource
	actions jauth.Action
}

// field is a header field that names a resource (@RocketMQResource).
type field struct {
	typ      jauth.ResourceType
	key      string
	splitter string
}

// action is a request header's @RocketMQAction: its actions, whether the
// resource is the cluster, and the fields naming resources.
type action struct {
	cluster bool
	actions jauth.Action
	fields  []field
}

// needs is DefaultAuthorizationContextBuilder.build for a remoting request:
// the resources a request touches and the actions it wants on each. Names
// alias the request's frame; use them only while the request is handled.
func needs(dst []need, req *codec.RemotingCommand, cluster string) ([]need, error) {
	if len(req.Ext) == 0 && !namesInBody(req.Code) {
		return dst, nil // Java builds no context; these name their resources in the body
	}
	get := func(k string) string { v, _ := req.Ext.Get(k); return v }
	add := func(r jauth.Resource, a jauth.Action) { dst = append(dst, need{res: r, actions: a}) }
	retry := jauth.IsRetryTopic
	switch req.Code {
	case codec.ReqSendMessage, codec.ReqSendMessageV2, codec.ReqSendBatchMessage,
		codec.ReqSendReplyMessage, codec.ReqSendReplyMessageV2:
		// The reply codes store into the header's topic as a send does;
		// Java 5.3 maps neither (rmqd is stricter).
		tk := "topic"
		if req.Code != codec.ReqSendMessage && req.Code != codec.ReqSendReplyMessage {
			tk = "b"
		}
		if t := get(tk); retry(t) {
			// The group whose retry topic is written, not the header's
			// producer group that 5.3.3 takes when it is set (stricter).
			add(jauth.Group(t), jauth.ActSub)
		} else {
			add(jauth.Topic(t), jauth.ActPub)
		}
	case codec.ReqRecallMessage:
		add(jauth.Topic(get("topic")), jauth.ActPub)
	case codec.ReqEndTransaction:
		if t := get("topic"); strings.TrimSpace(t) != "" {
			add(jauth.Topic(t), jauth.ActPub)
		}
	case codec.ReqConsumerSendMsgBack:
		add(jauth.Group(get("group")), jauth.ActSub)
	case codec.ReqPullMessage, codec.ReqLitePullMessage:
		if t := get("topic"); !retry(t) {
			add(jauth.Topic(t), jauth.ActSub)
		}
		add(jauth.Group(get("consumerGroup")), jauth.ActSub)
	case codec.ReqQueryMessage:
		add(jauth.Topic(get("topic")), jauth.ActSub|jauth.ActGet)
	case codec.ReqHeartBeat:
		var hb codec.HeartbeatData
		if err := codec.UnmarshalBody(req.Body, &hb); err != nil {
			return dst, fmt.Errorf("heartbeat body: %w", err)
		}
		for _, cd := range hb.ConsumerDataSet {
			add(jauth.Group(cd.GroupName), jauth.ActSub)
			for _, s := range cd.SubscriptionDataSet {
				if !retry(s.Topic) {
					add(jauth.Topic(s.Topic), jauth.ActSub)
				}
			}
		}
	case codec.ReqUnregisterClient:
		if g := get("consumerGroup"); strings.TrimSpace(g) != "" {
			add(jauth.Group(g), jauth.ActSub)
		}
	case codec.ReqGetConsumerListByGroup:
		add(jauth.Group(get("consumerGroup")), jauth.ActSub|jauth.ActGet)
	case codec.ReqQueryConsumerOffset, codec.ReqUpdateConsumerOffset:
		a := jauth.ActSub | jauth.ActGet
		if req.Code == codec.ReqUpdateConsumerOffset {
			a = jauth.ActSub | jauth.ActUpdate
		}
		if t := get("topic"); !retry(t) {
			add(jauth.Topic(t), a)
		}
		add(jauth.Group(get("consumerGroup")), a)
	case codec.ReqBatchAckMessage:
		// Java 5.3's header has no annotated resource: any user may ack
		// any group's messages. rmqd asks what ACK_MESSAGE asks, per entry.
		body, err := pop.DecodeBatchAckBody(req.Body)
		if err != nil {
			return dst, err
		}
		for _, a := range body.Acks {
			add(jauth.Group(a.ConsumerGroup), jauth.ActSub)
			switch {
			case jacl.IsRetryTopicOf(a.Topic, a.ConsumerGroup): // the group's own
			case retry(a.Topic):
				add(jauth.Group(a.Topic), jauth.ActSub)
			default:
				add(jauth.Topic(a.Topic), jauth.ActSub)
			}
		}
	case codec.ReqLiteSubscriptionCtl:
		// Java 5.5's header has no annotated resource: any user may change
		// anyone's lite subscriptions. rmqd asks Sub on each entry's group and topic.
		body, err := codec.DecodeLiteSubscriptionCtlBody(req.Body)
		if err != nil {
			return dst, err
		}
		for _, e := range body.SubscriptionSet {
			add(jauth.Group(e.Group), jauth.ActSub)
			add(jauth.Topic(e.Topic), jauth.ActSub)
		}
	case codec.ReqGetRouteinfoByTopic:
		if t := get("topic"); retry(t) {
			add(jauth.Group(t), jauth.ActSub|jauth.ActGet)
		} else {
			add(jauth.Topic(t), jauth.ActPub|jauth.ActSub|jauth.ActGet)
		}
	case codec.ReqSetMessageRequestMode:
		// Unmapped in 5.3.3 (any user may switch any group to pop):
		// rmqd asks Update on the body's group and topic.
		var body struct {
			ConsumerGroup string `json:"consumerGroup"`
			Topic         string `json:"topic"`
		}
		if err := codec.UnmarshalBody(req.Body, &body); err != nil {
			return dst, fmt.Errorf("request mode body: %w", err)
		}
		add(jauth.Group(body.ConsumerGroup), jauth.ActUpdate)
		if !retry(body.Topic) {
			add(jauth.Topic(body.Topic), jauth.ActUpdate)
		}
	case codec.ReqUpdateAndCreateTopicList:
		// 5.3.3's header names no topic (any user may create or rewrite
		// any topic): rmqd asks Create on each, as the single code does.
		var body struct {
			TopicConfigList []struct {
				TopicName string `json:"topicName"`
			} `json:"topicConfigList"`
		}
		if err := codec.UnmarshalBody(req.Body, &body); err != nil {
			return dst, fmt.Errorf("topic list body: %w", err)
		}
		for _, tc := range body.TopicConfigList {
			if retry(tc.TopicName) {
				add(jauth.Group(tc.TopicName), jauth.ActCreate) // as the annotated single code
			} else {
				add(jauth.Topic(tc.TopicName), jauth.ActCreate)
			}
		}
	case codec.ReqLockBatchMq, codec.ReqUnlockBatchMq:
		var body codec.LockBatchRequestBody
		if err := codec.UnmarshalBody(req.Body, &body); err != nil {
			return dst, fmt.Errorf("lock body: %w", err)
		}
		add(jauth.Group(body.ConsumerGroup), jauth.ActSub)
		for _, mq := range body.MQSet {
			if !retry(mq.Topic) {
				add(jauth.Topic(mq.Topic), jauth.ActSub)
			}
		}
	default:
		a, ok := actions[req.Code]
		if !ok {
			a, ok = stricter[req.Code]
		}
		if !ok {
			return dst, nil // no annotated header: Java builds no context
		}
		n := len(dst)
		cg, hasCG := req.Ext.Get("consumerGroup")
		hasCG = hasCG && acl.AcksInGroup(req.Code)
		ownRetry := func(t string) bool { return hasCG && jacl.IsRetryTopicOf(t, cg) }
		for _, f := range a.fields {
			v, has := req.Ext.Get(f.key)
			if !has {
				continue
			}
			vals := []string{v}
			if f.splitter != "" {
				vals = strings.FieldsFunc(v, func(r rune) bool { return strings.ContainsRune(f.splitter, r) })
			}
			for _, v := range vals {
				switch {
				case f.typ == jauth.TypeTopic && ownRetry(v):
					// A pop consumer's own retry topic (%RETRY%group+topic):
					// 5.3.3 asks a group named "group+topic", which no
					// literal grant matches; the group field covers it.
				case f.typ == jauth.TypeTopic && retry(v):
					add(jauth.Group(v), a.actions)
				default:
					add(jauth.Resource{Type: f.typ, Name: v, Pattern: jauth.PatLiteral}, a.actions)
				}
			}
		}
		if len(dst) == n && a.cluster {
			add(jauth.Cluster(cluster), a.actions)
		}
	}
	return dst, nil
}

// namesInBody reports the codes whose resources are named in the body, which
// are checked even when the header has no field at all.
func namesInBody(code int32) bool {
	return code == codec.ReqBatchAckMessage || code == codec.ReqSetMessageRequestMode || code == codec.ReqUpdateAndCreateTopicList ||
		code == codec.ReqLiteSubscriptionCtl
}

// stricter covers codes whose 5.3.3 request has no annotated header, so that
// Java lets any authenticated user run them: broker-wide changes are made to
// need the cluster resource. (rmqd is stricter than Java here on purpose.)
var stricter = map[int32]action{
	codec.ReqUpdateBrokerConfig:                   {cluster: true, actions: jauth.ActUpdate},
	codec.ReqGetBrokerConfig:                      {cluster: true, actions: jauth.ActGet},
	codec.ReqTriggerDeleteFiles:                   {cluster: true, actions: jauth.ActUpdate},
	codec.ReqUpdateAndCreateSubscriptiongroup:     {cluster: true, actions: jauth.ActUpdate},
	codec.ReqUpdateAndCreateSubscriptiongroupList: {cluster: true, actions: jauth.ActUpdate},
	codec.ReqCleanExpiredConsumequeue:             {cluster: true, actions: jauth.ActUpdate},
	codec.ReqCleanUnusedTopic:                     {cluster: true, actions: jauth.ActUpdate},
	codec.ReqDeleteExpiredCommitlog:               {cluster: true, actions: jauth.ActUpdate},
	codec.ReqUpdateColdDataFlowCtrConfig:          {cluster: true, actions: jauth.ActUpdate},
	codec.ReqRemoveColdDataFlowCtrConfig:          {cluster: true, actions: jauth.ActUpdate},
	codec.ReqGetColdDataFlowCtrInfo:               {cluster: true, actions: jauth.ActGet},
	codec.ReqSetCommitlogReadMode:                 {cluster: true, actions: jauth.ActUpdate},
	codec.ReqSwitchTimerEngine:                    {cluster: true, actions: jauth.ActUpdate}, // Java 5.4, no header
	// Java 5.5's lite admin codes (mqadmin getBrokerLiteInfo ... triggerLiteDispatch): no action.
	codec.ReqGetBrokerLiteInfo:   {cluster: true, actions: jauth.ActGet},
	codec.ReqGetParentTopicInfo:  {cluster: true, actions: jauth.ActGet},
	codec.ReqGetLiteTopicInfo:    {cluster: true, actions: jauth.ActGet},
	codec.ReqGetLiteClientInfo:   {cluster: true, actions: jauth.ActGet},
	codec.ReqGetLiteGroupInfo:    {cluster: true, actions: jauth.ActGet},
	codec.ReqTriggerLiteDispatch: {cluster: true, actions: jauth.ActUpdate},
	// Java 5.5's POP_LITE_MESSAGE: annotated resources but no action; rmqd asks what POP asks.
	codec.ReqPopLiteMessage: {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	// A static topic is created as UPDATE_AND_CREATE_TOPIC creates one (same
	// header, whose annotation names only that code).
	codec.ReqUpdateAndCreateStaticTopic: {cluster: false, actions: jauth.ActCreate, fields: []field{{jauth.TypeTopic, "topic", ""}}},
}

// actions is the @RocketMQAction / @RocketMQResource table of 5.3.3's
// request headers (derived from the Java sources).
var actions = map[int32]action{
	codec.ReqAckMessage:                      {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqAddBroker:                       {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAddWritePermOfBroker:            {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthCreateAcl:                   {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthCreateUser:                  {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthDeleteAcl:                   {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthDeleteUser:                  {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthGetAcl:                      {cluster: true, actions: jauth.ActGet},
	codec.ReqAuthGetUser:                     {cluster: true, actions: jauth.ActGet},
	codec.ReqAuthListAcl:                     {cluster: true, actions: jauth.ActGet},
	codec.ReqAuthListUser:                    {cluster: true, actions: jauth.ActGet},
	codec.ReqAuthUpdateAcl:                   {cluster: true, actions: jauth.ActUpdate},
	codec.ReqAuthUpdateUser:                  {cluster: true, actions: jauth.ActUpdate},
	codec.ReqBrokerHeartbeat:                 {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqChangeMessageInvisibletime:      {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqCheckRocksdbCqWriteProgress:     {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqCheckTransactionState:           {cluster: false, actions: jauth.ActPub, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqCleanBrokerData:                 {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqCloneGroupOffset:                {cluster: false, actions: jauth.ActUpdate, fields: []field{{jauth.TypeGroup, "destGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqConsumerSendMsgBack:             {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "group", ""}, {jauth.TypeTopic, "originTopic", ""}}},
	codec.ReqConsumeMessageDirectly:          {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqControllerAlterSyncStateSet:     {cluster: true, actions: jauth.ActUpdate},
	codec.ReqControllerApplyBrokerId:         {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqControllerElectMaster:           {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqControllerGetNextBrokerId:       {cluster: true, actions: jauth.ActGet, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqControllerGetReplicaInfo:        {cluster: true, actions: jauth.ActGet},
	codec.ReqControllerRegisterBroker:        {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqDeleteKvConfig:                  {cluster: true, actions: jauth.ActUpdate},
	codec.ReqDeleteSubscriptiongroup:         {cluster: false, actions: jauth.ActDelete, fields: []field{{jauth.TypeGroup, "groupName", ""}}},
	codec.ReqDeleteTopicInBroker:             {cluster: false, actions: jauth.ActDelete, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqDeleteTopicInNamesrv:            {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqEndTransaction:                  {cluster: false, actions: jauth.ActPub, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqExchangeBrokerHaInfo:            {cluster: true, actions: jauth.ActUpdate},
	codec.ReqExportRocksdbConfigToJson:       {cluster: true, actions: jauth.ActGet},
	codec.ReqGetAllProducerInfo:              {cluster: true, actions: jauth.ActGet},
	codec.ReqGetAllTopicConfig:               {cluster: false, actions: jauth.ActList},
	codec.ReqGetBrokerConsumeStats:           {cluster: true, actions: jauth.ActGet},
	codec.ReqGetBrokerMemberGroup:            {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqGetConsumerConnectionList:       {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqGetConsumerListByGroup:          {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqGetConsumerRunningInfo:          {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqGetConsumeStats:                 {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}, {jauth.TypeTopic, "topicList", ""}}},
	codec.ReqGetEarliestMsgStoretime:         {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqGetKvlistByNamespace:            {cluster: true, actions: jauth.ActGet},
	codec.ReqGetKvConfig:                     {cluster: true, actions: jauth.ActGet},
	codec.ReqGetMaxOffset:                    {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqGetMinOffset:                    {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqGetProducerConnectionList:       {cluster: true, actions: jauth.ActGet},
	codec.ReqGetRouteinfoByTopic:             {cluster: true, actions: jauth.ActGet},
	codec.ReqGetSubscriptiongroupConfig:      {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "group", ""}}},
	codec.ReqGetTopicsByCluster:              {cluster: false, actions: jauth.ActList},
	codec.ReqGetTopicConfig:                  {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqGetTopicStatsInfo:               {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqHeartBeat:                       {cluster: false, actions: jauth.ActPub | jauth.ActSub},
	codec.ReqInvokeBrokerToGetConsumerStatus: {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}, {jauth.TypeGroup, "group", ""}}},
	codec.ReqInvokeBrokerToResetOffset:       {cluster: false, actions: jauth.ActUpdate, fields: []field{{jauth.TypeGroup, "group", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqLockBatchMq:                     {cluster: false, actions: jauth.ActSub},
	codec.ReqNotification:                    {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqNotifyBrokerRoleChanged:         {cluster: true, actions: jauth.ActUpdate},
	codec.ReqNotifyConsumerIdsChanged:        {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqNotifyMinBrokerIdChange:         {cluster: true, actions: jauth.ActUpdate},
	codec.ReqPeekMessage:                     {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeTopic, "topic", ""}, {jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqPollingInfo:                     {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqPopMessage:                      {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqPullMessage:                     {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqPushReplyMessageToClient:        {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "producerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqPutKvConfig:                     {cluster: true, actions: jauth.ActUpdate},
	codec.ReqQueryConsumerOffset:             {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqQueryConsumeQueue:               {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}, {jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqQueryConsumeTimeSpan:            {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}, {jauth.TypeGroup, "group", ""}}},
	codec.ReqQueryCorrectionOffset:           {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "filterGroups", ","}, {jauth.TypeGroup, "compareGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqQueryDataVersion:                {cluster: true, actions: jauth.ActGet, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqQueryMessage:                    {cluster: false, actions: jauth.ActSub | jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqQuerySubscriptionByConsumer:     {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "group", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqQueryTopicsByConsumer:           {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeGroup, "group", ""}}},
	codec.ReqQueryTopicConsumeByWho:          {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqRecallMessage:                   {cluster: false, actions: jauth.ActPub, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqRegisterBroker:                  {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqRegisterTopicInNamesrv:          {cluster: true, actions: jauth.ActUpdate},
	codec.ReqRemoveBroker:                    {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "brokerClusterName", ""}}},
	codec.ReqResetMasterFlushOffset:          {cluster: true, actions: jauth.ActUpdate},
	codec.ReqResumeCheckHalfMessage:          {cluster: false, actions: jauth.ActUpdate, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqSearchOffsetByTimestamp:         {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqSendMessage:                     {cluster: false, actions: jauth.ActPub, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqSendMessageV2:                   {cluster: false, actions: jauth.ActPub, fields: []field{{jauth.TypeTopic, "b", ""}}},
	codec.ReqUnlockBatchMq:                   {cluster: false, actions: jauth.ActSub},
	codec.ReqUnregisterBroker:                {cluster: true, actions: jauth.ActUpdate, fields: []field{{jauth.TypeCluster, "clusterName", ""}}},
	codec.ReqUnregisterClient:                {cluster: false, actions: jauth.ActPub | jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}}},
	codec.ReqUpdateAndCreateTopic:            {cluster: false, actions: jauth.ActCreate, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqUpdateAndCreateTopicList:        {cluster: false, actions: jauth.ActCreate},
	codec.ReqUpdateAndGetGroupForbidden:      {cluster: false, actions: jauth.ActUpdate, fields: []field{{jauth.TypeGroup, "group", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqUpdateConsumerOffset:            {cluster: false, actions: jauth.ActSub, fields: []field{{jauth.TypeGroup, "consumerGroup", ""}, {jauth.TypeTopic, "topic", ""}}},
	codec.ReqViewBrokerStatsData:             {cluster: true, actions: jauth.ActGet},
	codec.ReqViewMessageById:                 {cluster: false, actions: jauth.ActGet, fields: []field{{jauth.TypeTopic, "topic", ""}}},
	codec.ReqWipeWritePermOfBroker:           {cluster: true, actions: jauth.ActUpdate},
}

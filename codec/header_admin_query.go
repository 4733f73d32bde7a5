package codec

// Request headers of the admin codes that look up or drop topics, groups,
// connections and stats (mqadmin, the dashboard), read by DecodeHeader. A
// field Java marks @CFNotNull is required here (see MissingFieldError); only
// the fields the broker reads are listed.

// TopicOnlyRequestHeader is the one-field header of DELETE_TOPIC_IN_BROKER,
// GET_TOPIC_CONFIG, GET_TOPIC_STATS_INFO and QUERY_TOPIC_CONSUME_BY_WHO (Java's
// DeleteTopic-, GetTopicConfig-, GetTopicStatsInfo- and
// QueryTopicConsumeByWhoRequestHeader).
type TopicOnlyRequestHeader struct {
	Topic string `ext:"topic,required"`
}

// DeleteSubscriptionGroupRequestHeader is DELETE_SUBSCRIPTIONGROUP's header.
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string `ext:"groupName,required"`
	CleanOffset bool   `ext:"cleanOffset"`
}

// GetSubscriptionGroupConfigRequestHeader is GET_SUBSCRIPTIONGROUP_CONFIG's header.
type GetSubscriptionGroupConfigRequestHeader struct {
	Group string `ext:"group,required"`
}

// GetConsumeStatsRequestHeader is GET_CONSUME_STATS's header; topicList is
// topics joined by ';', read when topic is empty.
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	Topic         string `ext:"topic"`
	TopicList     string `ext:"topicList"`
}

// ConsumerGroupRequestHeader is the one-field header of
// GET_CONSUMER_CONNECTION_LIST and GET_CONSUMER_LIST_BY_GROUP (Java's
// GetConsumerConnectionList- and GetConsumerListByGroupRequestHeader).
type ConsumerGroupRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
}

// GetProducerConnectionListRequestHeader is GET_PRODUCER_CONNECTION_LIST's header.
type GetProducerConnectionListRequestHeader struct {
	ProducerGroup string `ext:"producerGroup,required"`
}

// GetConsumerRunningInfoRequestHeader is GET_CONSUMER_RUNNING_INFO's header
// (jstackEnable goes on to the client with the rest of the request).
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	ClientID      string `ext:"clientId,required"`
}

// ConsumeMessageDirectlyRequestHeader is CONSUME_MESSAGE_DIRECTLY's header
// (Java's ConsumeMessageDirectlyResultRequestHeader: clientId and msgId are
// nullable there too).
type ConsumeMessageDirectlyRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,required"`
	ClientID      string `ext:"clientId"`
	MsgID         string `ext:"msgId"`
}

// QuerySubscriptionByConsumerRequestHeader is QUERY_SUBSCRIPTION_BY_CONSUMER's
// header.
type QuerySubscriptionByConsumerRequestHeader struct {
	Group string `ext:"group,required"`
	Topic string `ext:"topic"`
}

// UnregisterClientRequestHeader is UNREGISTER_CLIENT's header. Java's clientID
// is @CFNotNull but not required here: the broker unregisters by connection,
// never reads it, and Java (which only logs the missing field) does the same.
type UnregisterClientRequestHeader struct {
	ProducerGroup string `ext:"producerGroup"`
	ConsumerGroup string `ext:"consumerGroup"`
}

// ViewBrokerStatsDataRequestHeader is VIEW_BROKER_STATS_DATA's header.
type ViewBrokerStatsDataRequestHeader struct {
	StatsName string `ext:"statsName,required"`
	StatsKey  string `ext:"statsKey,required"`
}

// UpdateGroupForbiddenRequestHeader is UPDATE_AND_GET_GROUP_FORBIDDEN's header:
// readable absent (nil) only reads the group's ban on topic.
type UpdateGroupForbiddenRequestHeader struct {
	Group    string `ext:"group,required"`
	Topic    string `ext:"topic,required"`
	Readable *bool  `ext:"readable"`
}

package processor

import (
	"strings"

	"rmqd/codec"
	"rmqd/processor/filter"
	"rmqd/store"
)

// retryFilter is Java's ExpressionForRetryMessageFilter (filterSupportRetry):
// a SQL92 subscription of a %RETRY% topic judges each retry message by the
// group's SQL92 subscription of the message's original topic (RETRY_TOPIC),
// so a consumer gets back only retries its filter wants. A message with no
// such subscription passes, as in Java.
type retryFilter struct {
	*filter.Expression // the retry subscription's own: tags code and type
	b                  *Broker
	group              string
}

// newPullFilter is newMessageFilter for PULL_MESSAGE, wrapped in a retryFilter
// when filterSupportRetry applies to sub (Java's pull only: POP judges its
// retry topics by the expression it is given).
func (b *Broker) newPullFilter(sub *codec.SubscriptionData) (store.MessageFilter, error) {
	f, err := b.newMessageFilter(sub)
	if err != nil || !b.conf().FilterSupportRetry || isTagType(sub.ExpressionType) ||
		!strings.HasPrefix(sub.Topic, RetryGroupTopicPrefix) {
		return f, err
	}
	e, ok := f.(*filter.Expression)
	if !ok {
		return f, nil
	}
	return &retryFilter{Expression: e, b: b, group: strings.Clone(strings.TrimPrefix(sub.Topic, RetryGroupTopicPrefix))}, nil
}

// MatchRecord evaluates the original topic's filter on the record's properties.
func (r *retryFilter) MatchRecord(record []byte) bool {
	props, ok := filter.RecordProperties(record)
	if !ok {
		return false
	}
	return r.MatchEncodedProperties(props)
}

// MatchEncodedProperties is MatchRecord for an arrival notice's properties.
func (r *retryFilter) MatchEncodedProperties(props string) bool {
	topic, _ := codec.PropertyValue(props, codec.PropRetryTopic)
	sub, _, found, _ := r.b.consumers.Subscription(r.group, topic)
	if !found || isTagType(sub.ExpressionType) {
		return true // Java: no filter data for the real topic
	}
	e, err := r.b.filters.compile(sub.ExpressionType, sub.SubString)
	if err != nil {
		return true
	}
	return e.MatchEncodedProperties(props)
}

package processor

import (
	"strings"
	"sync"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/filter"
	"rmqd/store"
)

// This file adapts subscriptions to the store's MessageFilter through
// processor/filter (tags by hash, SQL92 on properties).

const (
	exprTag   = filter.TypeTag
	exprSQL92 = filter.TypeSQL92
	subAll    = "*"
)

// isTagType reports whether an expression type means tag filtering (empty is TAG).
func isTagType(t string) bool { return t == "" || t == exprTag }

// filterCache keeps compiled expressions: a consumer pulls the same
// subscription over and over, and SQL92 parsing is not free.
type filterCache struct {
	mu sync.RWMutex
	m  map[[2]string]*filter.Expression
}

const filterCacheMax = 4096

func (c *filterCache) compile(typ, expr string) (*filter.Expression, error) {
	k := [2]string{typ, expr}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return e, nil
	}
	e, err := filter.Compile(typ, expr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= filterCacheMax {
		c.m = map[[2]string]*filter.Expression{}
	}
	c.m[[2]string{strings.Clone(typ), strings.Clone(expr)}] = e
	c.mu.Unlock()
	return e, nil
}

// newMessageFilter builds the store filter for a subscription. SQL92 needs
// enablePropertyFilter.
func (b *Broker) newMessageFilter(sub *codec.SubscriptionData) (store.MessageFilter, error) {
	typ := sub.ExpressionType
	if typ == "" {
		typ = exprTag
	}
	expr := sub.SubString
	if typ == exprTag && expr == "" {
		expr = subAll
	}
	return b.filters.compile(typ, expr)
}

// propsMatcher judges a message by its encoded properties, as long polling
// does on arrival notices. Every compiled filter has it (a tag one always
// matches), so having it does not mean reading properties: see
// evaluatesProperties.
type propsMatcher interface {
	MatchEncodedProperties(props string) bool
}

// evaluatesProperties reports a filter that judges messages by their
// properties (SQL92). Every subscription compiles to a *filter.Expression,
// tag ones included, so implementing propsMatcher does not tell.
func evaluatesProperties(f store.MessageFilter) bool {
	if _, ok := f.(*retryFilter); ok {
		return true
	}
	e, ok := f.(*filter.Expression)
	return ok && e.Type() == exprSQL92
}

// parseTagSubscription is FilterAPI.buildSubscriptionData for TAG expressions:
// tags split on "||", trimmed, hashed with String.hashCode.
func parseTagSubscription(topic, expr string) codec.SubscriptionData {
	sd := codec.SubscriptionData{Topic: topic, SubString: expr, ExpressionType: exprTag, TagsSet: []string{}, CodeSet: codec.CodeSet{}}
	tags, codes, all := filter.ParseTags(expr)
	if all {
		sd.SubString = subAll
		return sd
	}
	sd.TagsSet = append(sd.TagsSet, tags...)
	sd.CodeSet = append(sd.CodeSet, codes...)
	return sd
}

// tagsCodeOf is the consume-queue tags code of a TAGS value (String.hashCode).
func tagsCodeOf(tags string) int64 {
	if tags == "" {
		return 0
	}
	return int64(compat.JavaStringHash(tags))
}

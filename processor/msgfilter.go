package processor

import (
	"errors"
	"strings"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/store"
)

// This file is the adapter between pull subscriptions and message filtering.
// TAG filtering is done here; SQL92 is delegated to processor/filter once that
// package lands (newMessageFilter is the single place to point at it).

// errSQL92Unsupported is returned until the SQL92 filter is wired.
var errSQL92Unsupported = errors.New("the broker does not support consumer to filter message by SQL92")

const (
	exprTag   = "TAG"
	exprSQL92 = "SQL92"
	subAll    = "*"
)

// isTagType reports whether an expression type means tag filtering (empty is TAG).
func isTagType(t string) bool { return t == "" || strings.EqualFold(t, exprTag) }

// tagFilter matches consume-queue tag hashes against a subscription's code set.
// Java's ExpressionMessageFilter does the same; the client re-checks the exact
// tag string.
type tagFilter struct {
	all   bool
	codes []int32
}

func (f *tagFilter) MatchTagsCode(tagsCode int64) bool {
	if f.all {
		return true
	}
	c := int32(tagsCode)
	for _, x := range f.codes {
		if x == c {
			return true
		}
	}
	return false
}

func (f *tagFilter) MatchRecord([]byte) bool { return true }

// newMessageFilter builds the store filter for a subscription.
func newMessageFilter(sub *codec.SubscriptionData, enablePropertyFilter bool) (store.MessageFilter, error) {
	if !isTagType(sub.ExpressionType) {
		return nil, errSQL92Unsupported
	}
	if sub.SubString == "" || sub.SubString == subAll || len(sub.CodeSet) == 0 {
		return &tagFilter{all: true}, nil
	}
	return &tagFilter{codes: sub.CodeSet}, nil
}

// parseTagSubscription is FilterAPI.buildSubscriptionData for TAG expressions:
// tags split on "||", trimmed, hashed with String.hashCode.
func parseTagSubscription(topic, expr string) codec.SubscriptionData {
	sd := codec.SubscriptionData{Topic: topic, SubString: expr, ExpressionType: exprTag, TagsSet: []string{}, CodeSet: codec.CodeSet{}}
	if expr == "" || strings.TrimSpace(expr) == subAll {
		sd.SubString = subAll
		return sd
	}
	for _, t := range strings.Split(expr, "||") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		sd.TagsSet = append(sd.TagsSet, t)
		sd.CodeSet = append(sd.CodeSet, compat.JavaStringHash(t))
	}
	return sd
}

// tagsCodeOf is the consume-queue tags code of a TAGS value (String.hashCode).
func tagsCodeOf(tags string) int64 {
	if tags == "" {
		return 0
	}
	return int64(compat.JavaStringHash(tags))
}

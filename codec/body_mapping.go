package codec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
)

// MaxMappingQueues bounds a static-topic mapping's currIdMap: one entry per
// logical queue the broker hosts, so no more than a topic's queue count may
// reach (compat.MaxQueueNums, which codec does not import).
const MaxMappingQueues = 65535

// MetadataScopeGlobal is MixAll.METADATA_SCOPE_GLOBAL, the scope a mapping
// has when its JSON names none.
const MetadataScopeGlobal = "__global__"

// TopicQueueMappingInfo is Java's TopicQueueMappingInfo: what a 5.x broker
// registers for each static topic it hosts and what GET_ROUTEINFO_BY_TOPIC
// returns in topicQueueMappingByBroker. Only these fields are kept: a mapping is
// decoded into them and written again, never stored as the broker sent it.
//
// A string field that was null (or empty) is left out when written, as fastjson
// leaves out null; CurrIDMap nil (null) is left out as well, and a missing
// currIdMap reads as empty, Java's field initialiser.
type TopicQueueMappingInfo struct {
	Topic       string
	Scope       string
	TotalQueues int32
	Bname       string
	Epoch       int64
	Dirty       bool
	CurrIDMap   map[int32]int32 // logical queue id → physical queue id
}

// AppendJSON appends the mapping as fastjson writes it for GET_ROUTEINFO_BY_TOPIC
// (properties sorted, currIdMap keys quoted and in numeric order):
// {"bname":"b","currIdMap":{"0":0},"dirty":false,"epoch":1,"scope":"__global__","topic":"T","totalQueues":2}.
func (t *TopicQueueMappingInfo) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if t.Bname != "" {
		dst = append(dst, `"bname":`...)
		dst = AppendJSONString(dst, t.Bname)
		dst = append(dst, ',')
	}
	if t.CurrIDMap != nil {
		dst = append(dst, `"currIdMap":{`...)
		keys := SortedKeys(t.CurrIDMap)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = strconv.AppendInt(dst, int64(k), 10)
			dst = append(dst, '"', ':')
			dst = strconv.AppendInt(dst, int64(t.CurrIDMap[k]), 10)
		}
		dst = append(dst, `},`...)
	}
	dst = append(dst, `"dirty":`...)
	dst = strconv.AppendBool(dst, t.Dirty)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendInt(dst, t.Epoch, 10)
	if t.Scope != "" {
		dst = append(dst, `,"scope":`...)
		dst = AppendJSONString(dst, t.Scope)
	}
	if t.Topic != "" {
		dst = append(dst, `,"topic":`...)
		dst = AppendJSONString(dst, t.Topic)
	}
	dst = append(dst, `,"totalQueues":`...)
	dst = strconv.AppendInt(dst, int64(t.TotalQueues), 10)
	return append(dst, '}')
}

// Clone returns a deep copy that shares no memory with t (strings included).
func (t *TopicQueueMappingInfo) Clone() *TopicQueueMappingInfo {
	c := *t
	c.Topic, c.Scope, c.Bname = strings.Clone(t.Topic), strings.Clone(t.Scope), strings.Clone(t.Bname)
	if t.CurrIDMap != nil {
		c.CurrIDMap = make(map[int32]int32, len(t.CurrIDMap))
		for k, v := range t.CurrIDMap {
			c.CurrIDMap[k] = v
		}
	}
	return &c
}

// maxMappingString bounds the topic, scope and bname of a mapping. Java
// limits topic names to 127 characters and broker names are shorter still; a
// longer string is no mapping a broker wrote.
const maxMappingString = 1024

// scopeJSON tells a missing scope (Java's initialiser, "__global__") from a null
// one (left out when written).
type scopeJSON struct {
	s   string
	set bool
}

func (v *scopeJSON) UnmarshalJSON(b []byte) error {
	v.set = true
	return (*jsonString)(&v.s).UnmarshalJSON(b)
}

// currIDMapJSON reads currIdMap entry by entry, so a map longer than
// MaxMappingQueues fails before it is built. m stays nil for null.
type currIDMapJSON struct {
	m   map[int32]int32
	set bool
}

var errCurrIDMapTooLarge = fmt.Errorf("currIdMap: more than %d entries", MaxMappingQueues)

func (c *currIDMapJSON) UnmarshalJSON(b []byte) error {
	c.set = true
	it := jsoniter.ParseBytes(bodyJSON, b)
	if it.WhatIsNext() == jsoniter.NilValue {
		return nil
	}
	c.m = map[int32]int32{}
	var err error
	it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		if len(c.m) >= MaxMappingQueues {
			err = errCurrIDMapTooLarge
			return false
		}
		k, kerr := strconv.ParseInt(key, 10, 32)
		if kerr != nil {
			err = fmt.Errorf("currIdMap: key %.20q is not an int", key)
			return false
		}
		var v *jsonInt32 // Java's ConcurrentHashMap takes no null value
		if it.ReadVal(&v); it.Error != nil {
			return false
		}
		if v == nil {
			err = fmt.Errorf("currIdMap: null value for %d", k)
			return false
		}
		c.m[int32(k)] = int32(*v)
		return true
	})
	if err == nil && it.Error != nil {
		err = fmt.Errorf("currIdMap: %w", it.Error)
	}
	return err
}

// DecodeTopicQueueMappingInfo parses one mapping as fastjson would into Java's
// fields (other properties are dropped), with currIdMap at most
// MaxMappingQueues entries and topic, scope and bname at most 1 KiB each.
func DecodeTopicQueueMappingInfo(b []byte) (*TopicQueueMappingInfo, error) {
	var j struct {
		Topic       jsonString    `json:"topic"`
		Scope       scopeJSON     `json:"scope"`
		TotalQueues jsonInt32     `json:"totalQueues"`
		Bname       jsonString    `json:"bname"`
		Epoch       jsonInt64     `json:"epoch"`
		Dirty       jsonBool      `json:"dirty"`
		CurrIDMap   currIDMapJSON `json:"currIdMap"`
	}
	if err := UnmarshalBody(b, &j); err != nil {
		return nil, fmt.Errorf("TopicQueueMappingInfo: %w", err)
	}
	info := &TopicQueueMappingInfo{Topic: string(j.Topic), Scope: MetadataScopeGlobal,
		TotalQueues: int32(j.TotalQueues), Bname: string(j.Bname), Epoch: int64(j.Epoch),
		Dirty: bool(j.Dirty), CurrIDMap: map[int32]int32{}}
	if j.Scope.set {
		info.Scope = j.Scope.s
	}
	if j.CurrIDMap.set {
		info.CurrIDMap = j.CurrIDMap.m
	}
	for _, s := range []string{info.Topic, info.Scope, info.Bname} {
		if len(s) > maxMappingString {
			return nil, errors.New("TopicQueueMappingInfo: topic, scope or bname longer than 1 KiB")
		}
	}
	return info, nil
}

// UnmarshalJSON is DecodeTopicQueueMappingInfo.
func (t *TopicQueueMappingInfo) UnmarshalJSON(b []byte) error {
	info, err := DecodeTopicQueueMappingInfo(b)
	if err != nil {
		return err
	}
	*t = *info
	return nil
}

// appendMappingInfoMap appends topic → mapping, topics sorted.
func appendMappingInfoMap(dst []byte, m map[string]*TopicQueueMappingInfo) []byte {
	dst = append(dst, '{')
	keys := SortedKeys(m)
	for i, topic := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONKey(dst, topic)
		dst = m[topic].AppendJSON(dst)
	}
	return append(dst, '}')
}

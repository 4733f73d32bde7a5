package codec

import (
	"fmt"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
)

// MaxMappingItems bounds the items of one logical queue: each remapping of a
// queue adds one (its gen), and Java's clean service drops the expired ones, so
// a list this long is no mapping mqadmin wrote.
const MaxMappingItems = 256

// LogicQueueMappingItem is Java's LogicQueueMappingItem: one stretch of a
// logical queue, held by physical queue QueueID of broker Bname from logical
// offset LogicOffset (-1 while undecided) on.
type LogicQueueMappingItem struct {
	Gen         int32
	QueueID     int32
	Bname       string
	LogicOffset int64
	StartOffset int64
	EndOffset   int64 // -1: open (the leader's)
	TimeOfStart int64
	TimeOfEnd   int64
}

// TopicQueueMappingDetail is Java's TopicQueueMappingDetail: a broker's
// mapping of a static topic, with the items of every logical queue it hosts
// (hostedQueues, logical id → items, the last one the leader). It is what
// UPDATE_AND_CREATE_STATIC_TOPIC carries, GET_TOPIC_CONFIG answers and
// topicQueueMapping.json keeps.
type TopicQueueMappingDetail struct {
	TopicQueueMappingInfo
	HostedQueues map[int32][]LogicQueueMappingItem
}

// Clone returns a deep copy that shares no memory with d.
func (d *TopicQueueMappingDetail) Clone() *TopicQueueMappingDetail {
	c := &TopicQueueMappingDetail{TopicQueueMappingInfo: *d.TopicQueueMappingInfo.Clone()}
	if d.HostedQueues != nil {
		c.HostedQueues = make(map[int32][]LogicQueueMappingItem, len(d.HostedQueues))
		for k, items := range d.HostedQueues {
			cp := make([]LogicQueueMappingItem, len(items))
			for i, it := range items {
				it.Bname = strings.Clone(it.Bname)
				cp[i] = it
			}
			c.HostedQueues[k] = cp
		}
	}
	return c
}

// MappingInfo is Java's cloneAsMappingInfo: what the broker registers. The
// scope is left at its default and currIdMap holds the queues whose leader is
// this broker (logical id → physical id).
func (d *TopicQueueMappingDetail) MappingInfo() *TopicQueueMappingInfo {
	info := &TopicQueueMappingInfo{Topic: d.Topic, Scope: MetadataScopeGlobal, TotalQueues: d.TotalQueues,
		Bname: d.Bname, Epoch: d.Epoch, CurrIDMap: make(map[int32]int32, len(d.HostedQueues))}
	for id, items := range d.HostedQueues {
		if n := len(items); n > 0 && items[n-1].Bname == d.Bname {
			info.CurrIDMap[id] = items[n-1].QueueID
		}
	}
	return info
}

// AppendJSON appends the detail as fastjson's default toJSONString writes it
// (properties sorted, Integer map keys bare): the form of Java's request
// bodies, GET_TOPIC_CONFIG answers and topicQueueMapping.json.
func (d *TopicQueueMappingDetail) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if d.Bname != "" {
		dst = append(dst, `"bname":`...)
		dst = AppendJSONString(dst, d.Bname)
		dst = append(dst, ',')
	}
	if d.CurrIDMap != nil {
		dst = append(dst, `"currIdMap":{`...)
		for i, k := range SortedKeys(d.CurrIDMap) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(k), 10)
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, int64(d.CurrIDMap[k]), 10)
		}
		dst = append(dst, `},`...)
	}
	dst = append(dst, `"dirty":`...)
	dst = strconv.AppendBool(dst, d.Dirty)
	dst = append(dst, `,"epoch":`...)
	dst = strconv.AppendInt(dst, d.Epoch, 10)
	if d.HostedQueues != nil {
		dst = append(dst, `,"hostedQueues":{`...)
		for i, k := range SortedKeys(d.HostedQueues) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, int64(k), 10)
			dst = append(dst, ':', '[')
			for j, it := range d.HostedQueues[k] {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = it.AppendJSON(dst)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	if d.Scope != "" {
		dst = append(dst, `,"scope":`...)
		dst = AppendJSONString(dst, d.Scope)
	}
	if d.Topic != "" {
		dst = append(dst, `,"topic":`...)
		dst = AppendJSONString(dst, d.Topic)
	}
	dst = append(dst, `,"totalQueues":`...)
	dst = strconv.AppendInt(dst, int64(d.TotalQueues), 10)
	return append(dst, '}')
}

// AppendJSON appends the item with fastjson's sorted properties.
func (it *LogicQueueMappingItem) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if it.Bname != "" {
		dst = append(dst, `"bname":`...)
		dst = AppendJSONString(dst, it.Bname)
		dst = append(dst, ',')
	}
	dst = append(dst, `"endOffset":`...)
	dst = strconv.AppendInt(dst, it.EndOffset, 10)
	dst = append(dst, `,"gen":`...)
	dst = strconv.AppendInt(dst, int64(it.Gen), 10)
	dst = append(dst, `,"logicOffset":`...)
	dst = strconv.AppendInt(dst, it.LogicOffset, 10)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(it.QueueID), 10)
	dst = append(dst, `,"startOffset":`...)
	dst = strconv.AppendInt(dst, it.StartOffset, 10)
	dst = append(dst, `,"timeOfEnd":`...)
	dst = strconv.AppendInt(dst, it.TimeOfEnd, 10)
	dst = append(dst, `,"timeOfStart":`...)
	dst = strconv.AppendInt(dst, it.TimeOfStart, 10)
	return append(dst, '}')
}

// hostedQueuesJSON reads hostedQueues entry by entry, so no more than
// MaxMappingQueues lists of at most MaxMappingItems items are built.
type hostedQueuesJSON struct {
	m map[int32][]LogicQueueMappingItem
}

type itemJSON struct {
	Gen         jsonInt32  `json:"gen"`
	QueueID     jsonInt32  `json:"queueId"`
	Bname       jsonString `json:"bname"`
	LogicOffset jsonInt64  `json:"logicOffset"`
	StartOffset jsonInt64  `json:"startOffset"`
	EndOffset   *jsonInt64 `json:"endOffset"`
	TimeOfStart *jsonInt64 `json:"timeOfStart"`
	TimeOfEnd   *jsonInt64 `json:"timeOfEnd"`
}

// orMinusOne is a field whose Java initialiser is -1.
func orMinusOne(v *jsonInt64) int64 {
	if v == nil {
		return -1
	}
	return int64(*v)
}

func (h *hostedQueuesJSON) UnmarshalJSON(b []byte) error {
	it := jsoniter.ParseBytes(bodyJSON, b)
	if it.WhatIsNext() == jsoniter.NilValue {
		return nil
	}
	h.m = map[int32][]LogicQueueMappingItem{}
	var err error
	it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		if len(h.m) >= MaxMappingQueues {
			err = fmt.Errorf("hostedQueues: more than %d entries", MaxMappingQueues)
			return false
		}
		k, kerr := strconv.ParseInt(key, 10, 32)
		if kerr != nil {
			err = fmt.Errorf("hostedQueues: key %.20q is not an int", key)
			return false
		}
		var items []LogicQueueMappingItem
		it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			if len(items) >= MaxMappingItems {
				err = fmt.Errorf("hostedQueues: queue %d has more than %d items", k, MaxMappingItems)
				return false
			}
			var j *itemJSON
			if it.ReadVal(&j); it.Error != nil {
				return false
			}
			if j == nil {
				err = fmt.Errorf("hostedQueues: null item in queue %d", k)
				return false
			}
			if len(j.Bname) > maxMappingString {
				err = fmt.Errorf("hostedQueues: bname longer than 1 KiB")
				return false
			}
			items = append(items, LogicQueueMappingItem{Gen: int32(j.Gen), QueueID: int32(j.QueueID),
				Bname: string(j.Bname), LogicOffset: int64(j.LogicOffset), StartOffset: int64(j.StartOffset),
				EndOffset: orMinusOne(j.EndOffset), TimeOfStart: orMinusOne(j.TimeOfStart), TimeOfEnd: orMinusOne(j.TimeOfEnd)})
			return true
		})
		if err != nil || it.Error != nil {
			return false
		}
		if items == nil {
			items = []LogicQueueMappingItem{}
		}
		h.m[int32(k)] = items
		return true
	})
	if err == nil && it.Error != nil {
		err = fmt.Errorf("hostedQueues: %w", it.Error)
	}
	return err
}

// DecodeTopicQueueMappingDetail parses a detail as fastjson would (bare or
// quoted keys), bounded as DecodeTopicQueueMappingInfo and by MaxMappingQueues
// hosted queues of at most MaxMappingItems items. A missing or null
// hostedQueues is empty (Java's initialiser; null would fail there later).
func DecodeTopicQueueMappingDetail(b []byte) (*TopicQueueMappingDetail, error) {
	info, err := DecodeTopicQueueMappingInfo(b)
	if err != nil {
		return nil, fmt.Errorf("TopicQueueMappingDetail: %w", err)
	}
	var j struct {
		HostedQueues hostedQueuesJSON `json:"hostedQueues"`
	}
	if err := UnmarshalBody(b, &j); err != nil {
		return nil, fmt.Errorf("TopicQueueMappingDetail: %w", err)
	}
	d := &TopicQueueMappingDetail{TopicQueueMappingInfo: *info, HostedQueues: map[int32][]LogicQueueMappingItem{}}
	if j.HostedQueues.m != nil {
		d.HostedQueues = j.HostedQueues.m
	}
	return d, nil
}

// DecodeTopicConfigMappingDetail reads the mappingDetail of a GET_TOPIC_CONFIG
// answer (Java's TopicConfigAndQueueMapping, asked with lo=true): nil when
// the topic is not static there.
func DecodeTopicConfigMappingDetail(b []byte) (*TopicQueueMappingDetail, error) {
	var j struct {
		MappingDetail jsoniter.RawMessage `json:"mappingDetail"`
	}
	if err := UnmarshalBody(b, &j); err != nil {
		return nil, fmt.Errorf("TopicConfigAndQueueMapping: %w", err)
	}
	if len(j.MappingDetail) == 0 || string(j.MappingDetail) == "null" {
		return nil, nil
	}
	return DecodeTopicQueueMappingDetail(j.MappingDetail)
}

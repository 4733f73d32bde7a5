package codec

import (
	"fmt"
	"strconv"
)

// Bodies shared by the name server and the broker. Each has AppendJSON, writing
// exactly what fastjson writes for the Java class (properties sorted, nulls
// omitted, collections never null, Long map keys quoted), and a Decode function
// that also accepts fastjson's non-standard output (bare numeric keys) through
// StrictJSON.

// DataVersion is Java's DataVersion: a broker's topic-config version. The name
// server compares all three fields for equality.
//
// The JSON tags (and the fields in fastjson's alphabetical order) let a broker
// persist it with encoding/json as Java's config files hold it.
type DataVersion struct {
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // ms
}

// Next advances the version as DataVersion.nextVersion does.
func (v *DataVersion) Next(nowMillis int64) {
	v.Timestamp = nowMillis
	v.StateVersion = 0
	v.Counter++
}

// AppendJSON appends {"counter":…,"stateVersion":…,"timestamp":…}.
func (v DataVersion) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"counter":`...)
	dst = strconv.AppendInt(dst, v.Counter, 10)
	dst = append(dst, `,"stateVersion":`...)
	dst = strconv.AppendInt(dst, v.StateVersion, 10)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, v.Timestamp, 10)
	return append(dst, '}')
}

type dataVersionJSON struct {
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"`
}

func (j dataVersionJSON) value() DataVersion {
	return DataVersion(j)
}

// DecodeDataVersion parses a DataVersion body (QUERY_DATA_VERSION).
func DecodeDataVersion(b []byte) (DataVersion, error) {
	var j dataVersionJSON
	if err := decodeBodyJSON(b, &j, "DataVersion"); err != nil {
		return DataVersion{}, err
	}
	return j.value(), nil
}

// Topic permission bits (PermName) and system flags (TopicSysFlag).
const (
	PermPriority int32 = 1 << 3
	PermRead     int32 = 1 << 2
	PermWrite    int32 = 1 << 1
	PermInherit  int32 = 1 << 0

	TopicSysFlagUnit    int32 = 1 << 0
	TopicSysFlagUnitSub int32 = 1 << 1
)

// Topic filter types (TopicFilterType enum names).
const (
	TopicFilterSingleTag = "SINGLE_TAG"
	TopicFilterMultiTag  = "MULTI_TAG"
)

// TopicConfig is Java's TopicConfig as brokers persist and register it. The
// fields are in fastjson's alphabetical order with their JSON names, so
// encoding/json writes what Java writes (the broker's topics.json); AppendJSON is
// the allocation-free form for bodies.
type TopicConfig struct {
	Attributes      map[string]string `json:"attributes"`
	Order           bool              `json:"order"`
	Perm            int32             `json:"perm"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	TopicFilterType string            `json:"topicFilterType"` // TopicFilterSingleTag or TopicFilterMultiTag
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
}

// NewTopicConfig returns a config with Java's defaults: 16 read and write queues,
// perm read|write, SINGLE_TAG.
func NewTopicConfig(name string) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: 16, WriteQueueNums: 16,
		Perm: PermRead | PermWrite, TopicFilterType: TopicFilterSingleTag}
}

// AppendJSON appends the fastjson form:
// {"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}
func (t *TopicConfig) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"attributes":`...)
	dst = AppendJSONStringMap(dst, t.Attributes)
	dst = append(dst, `,"order":`...)
	dst = strconv.AppendBool(dst, t.Order)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(t.Perm), 10)
	dst = append(dst, `,"readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(t.ReadQueueNums), 10)
	dst = append(dst, `,"topicFilterType":`...)
	dst = AppendJSONString(dst, t.filterType())
	dst = append(dst, `,"topicName":`...)
	dst = AppendJSONString(dst, t.TopicName)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(t.TopicSysFlag), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(t.WriteQueueNums), 10)
	return append(dst, '}')
}

func (t *TopicConfig) filterType() string {
	if t.TopicFilterType == "" {
		return TopicFilterSingleTag
	}
	return t.TopicFilterType
}

// filterTypeJSON accepts the enum by name or by ordinal, as fastjson does.
type filterTypeJSON string

func (f *filterTypeJSON) UnmarshalJSON(b []byte) error {
	switch s := string(b); s {
	case "0":
		*f = TopicFilterSingleTag
	case "1":
		*f = TopicFilterMultiTag
	case "null":
	default:
		var name string
		if err := UnmarshalBody(b, &name); err != nil {
			return fmt.Errorf("topicFilterType: %w", err)
		}
		if name != TopicFilterSingleTag && name != TopicFilterMultiTag {
			return fmt.Errorf("topicFilterType: unknown %q", name)
		}
		*f = filterTypeJSON(name)
	}
	return nil
}

type topicConfigJSON struct {
	Attributes      map[string]string `json:"attributes"`
	Order           bool              `json:"order"`
	Perm            *int32            `json:"perm"`
	ReadQueueNums   *int32            `json:"readQueueNums"`
	TopicFilterType filterTypeJSON    `json:"topicFilterType"`
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	WriteQueueNums  *int32            `json:"writeQueueNums"`
}

// value applies Java's field defaults to properties the JSON left out.
func (j *topicConfigJSON) value() TopicConfig {
	t := NewTopicConfig(j.TopicName)
	if j.ReadQueueNums != nil {
		t.ReadQueueNums = *j.ReadQueueNums
	}
	if j.WriteQueueNums != nil {
		t.WriteQueueNums = *j.WriteQueueNums
	}
	if j.Perm != nil {
		t.Perm = *j.Perm
	}
	if j.TopicFilterType != "" {
		t.TopicFilterType = string(j.TopicFilterType)
	}
	t.TopicSysFlag = j.TopicSysFlag
	t.Order = j.Order
	t.Attributes = j.Attributes
	return t
}

// TopicConfigSerializeWrapper is the topic table a broker registers: its
// TopicConfigAndMappingSerializeWrapper in 5.x. Static-topic mappings (keyed by
// topic) are read into TopicQueueMappingInfo's fields only.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]*TopicConfig
	DataVersion      DataVersion
	// 5.x additions, written only when set.
	MappingDataVersion       *DataVersion
	TopicQueueMappingInfoMap map[string]*TopicQueueMappingInfo
}

// AppendJSON appends the fastjson form of the wrapper; topics in name order.
func (w *TopicConfigSerializeWrapper) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"dataVersion":`...)
	dst = w.DataVersion.AppendJSON(dst)
	if w.MappingDataVersion != nil {
		dst = append(dst, `,"mappingDataVersion":`...)
		dst = w.MappingDataVersion.AppendJSON(dst)
	}
	dst = append(dst, `,"topicConfigTable":{`...)
	for i, name := range SortedKeys(w.TopicConfigTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONKey(dst, name)
		dst = w.TopicConfigTable[name].AppendJSON(dst)
	}
	dst = append(dst, '}')
	if w.MappingDataVersion != nil || w.TopicQueueMappingInfoMap != nil {
		dst = append(dst, `,"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":`...)
		dst = appendMappingInfoMap(dst, w.TopicQueueMappingInfoMap)
	}
	return append(dst, '}')
}

type topicConfigWrapperJSON struct {
	DataVersion              *dataVersionJSON                  `json:"dataVersion"`
	MappingDataVersion       *dataVersionJSON                  `json:"mappingDataVersion"`
	TopicConfigTable         map[string]*topicConfigJSON       `json:"topicConfigTable"`
	TopicQueueMappingInfoMap map[string]*TopicQueueMappingInfo `json:"topicQueueMappingInfoMap"`
}

func (j *topicConfigWrapperJSON) value() TopicConfigSerializeWrapper {
	w := TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]*TopicConfig, len(j.TopicConfigTable))}
	if j.DataVersion != nil {
		w.DataVersion = j.DataVersion.value()
	}
	if j.MappingDataVersion != nil {
		v := j.MappingDataVersion.value()
		w.MappingDataVersion = &v
	}
	for name, tc := range j.TopicConfigTable {
		if tc == nil {
			continue
		}
		v := tc.value()
		if v.TopicName == "" {
			v.TopicName = name
		}
		w.TopicConfigTable[name] = &v
	}
	for topic, info := range j.TopicQueueMappingInfoMap {
		if info == nil {
			continue // Java's map takes no null value
		}
		if w.TopicQueueMappingInfoMap == nil {
			w.TopicQueueMappingInfoMap = make(map[string]*TopicQueueMappingInfo, len(j.TopicQueueMappingInfoMap))
		}
		w.TopicQueueMappingInfoMap[topic] = info
	}
	return w
}

// DecodeTopicConfigSerializeWrapper parses a wrapper (brokers older than 3.0.11
// registered it as the whole body; GET_ALL_TOPIC_CONFIG answers with it).
func DecodeTopicConfigSerializeWrapper(b []byte) (*TopicConfigSerializeWrapper, error) {
	var j topicConfigWrapperJSON
	if err := decodeBodyJSON(b, &j, "TopicConfigSerializeWrapper"); err != nil {
		return nil, err
	}
	w := j.value()
	return &w, nil
}

// KVTable is Java's KVTable: {"table":{"k":"v"}}.
type KVTable struct {
	Table map[string]string
}

// AppendJSON appends {"table":{…}} with keys sorted.
func (t *KVTable) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"table":`...)
	dst = AppendJSONStringMap(dst, t.Table)
	return append(dst, '}')
}

// DecodeKVTable parses a KVTable body.
func DecodeKVTable(b []byte) (*KVTable, error) {
	var j struct {
		Table map[string]string `json:"table"`
	}
	if err := decodeBodyJSON(b, &j, "KVTable"); err != nil {
		return nil, err
	}
	if j.Table == nil {
		j.Table = map[string]string{}
	}
	return &KVTable{Table: j.Table}, nil
}

// TopicList is Java's TopicList: {"brokerAddr":"…","topicList":[…]}; brokerAddr
// only for the system-topic list.
type TopicList struct {
	TopicList  []string
	BrokerAddr string
}

// AppendJSON appends the fastjson form; an empty list is [].
func (l *TopicList) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if l.BrokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = AppendJSONString(dst, l.BrokerAddr)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	dst = AppendJSONStringSlice(dst, l.TopicList)
	return append(dst, '}')
}

// DecodeTopicList parses a TopicList body.
func DecodeTopicList(b []byte) (*TopicList, error) {
	var j struct {
		TopicList  []string `json:"topicList"`
		BrokerAddr string   `json:"brokerAddr"`
	}
	if err := decodeBodyJSON(b, &j, "TopicList"); err != nil {
		return nil, err
	}
	return &TopicList{TopicList: j.TopicList, BrokerAddr: j.BrokerAddr}, nil
}

// decodeBodyJSON normalises fastjson output to JSON and decodes it into v.
func decodeBodyJSON(b []byte, v any, what string) error {
	strict, err := StrictJSON(b)
	if err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	if err := UnmarshalBody(strict, v); err != nil {
		return fmt.Errorf("decode %s: %w", what, err)
	}
	return nil
}

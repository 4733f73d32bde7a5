package codec

import (
	"strconv"
)

// QueueData is one broker's queues of a topic in route data.
type QueueData struct {
	BrokerName     string
	ReadQueueNums  int32
	WriteQueueNums int32
	Perm           int32
	TopicSysFlag   int32
}

// AppendJSON appends {"brokerName":…,"perm":…,"readQueueNums":…,"topicSysFlag":…,"writeQueueNums":…}.
func (q *QueueData) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = AppendJSONString(dst, q.BrokerName)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(q.Perm), 10)
	dst = append(dst, `,"readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.ReadQueueNums), 10)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(q.TopicSysFlag), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.WriteQueueNums), 10)
	return append(dst, '}')
}

// MasterID is the broker id of a master (MixAll.MASTER_ID).
const MasterID int64 = 0

// BrokerData is one broker name (a master and its slaves) in route and cluster data.
type BrokerData struct {
	Cluster            string
	BrokerName         string
	BrokerAddrs        map[int64]string // broker id → ip:port
	ZoneName           string           // written only when set
	EnableActingMaster bool
}

// AppendJSON appends the fastjson form with brokerAddrs always present and its
// keys quoted ({"0":"ip:port"}): the Go client panics on a missing brokerAddrs
// and strict parsers refuse bare numeric keys.
func (b *BrokerData) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerAddrs":`...)
	dst = AppendJSONLongKeyMap(dst, b.BrokerAddrs, AppendJSONString)
	dst = append(dst, `,"brokerName":`...)
	dst = AppendJSONString(dst, b.BrokerName)
	dst = append(dst, `,"cluster":`...)
	dst = AppendJSONString(dst, b.Cluster)
	dst = append(dst, `,"enableActingMaster":`...)
	dst = strconv.AppendBool(dst, b.EnableActingMaster)
	if b.ZoneName != "" {
		dst = append(dst, `,"zoneName":`...)
		dst = AppendJSONString(dst, b.ZoneName)
	}
	return append(dst, '}')
}

// Clone returns a deep copy.
func (b *BrokerData) Clone() *BrokerData {
	c := *b
	c.BrokerAddrs = make(map[int64]string, len(b.BrokerAddrs))
	for id, addr := range b.BrokerAddrs {
		c.BrokerAddrs[id] = addr
	}
	return &c
}

type brokerDataJSON struct {
	Cluster            string           `json:"cluster"`
	BrokerName         string           `json:"brokerName"`
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	ZoneName           string           `json:"zoneName"`
	EnableActingMaster bool             `json:"enableActingMaster"`
}

func (j *brokerDataJSON) value() *BrokerData {
	b := BrokerData(*j)
	if b.BrokerAddrs == nil {
		b.BrokerAddrs = map[int64]string{}
	}
	return &b
}

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC body.
type TopicRouteData struct {
	OrderTopicConf    string // written only when set
	QueueDatas        []QueueData
	BrokerDatas       []*BrokerData
	FilterServerTable map[string][]string // broker addr → filter servers; {} when empty
	// TopicQueueMappingByBroker is a static topic's mapping of each broker
	// (5.x), written only when set.
	TopicQueueMappingByBroker map[string]*TopicQueueMappingInfo
}

// AppendJSON appends the route as the Java name server writes it for clients
// (BrowserCompatible + MapSortField): quoted broker ids, sorted map keys, every
// collection present.
func (r *TopicRouteData) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerDatas":[`...)
	for i, b := range r.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.AppendJSON(dst)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	if len(r.FilterServerTable) > 0 {
		for i, addr := range SortedKeys(r.FilterServerTable) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONKey(dst, addr)
			dst = AppendJSONStringSlice(dst, r.FilterServerTable[addr])
		}
	}
	dst = append(dst, '}')
	if r.OrderTopicConf != "" {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = AppendJSONString(dst, r.OrderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i := range r.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = r.QueueDatas[i].AppendJSON(dst)
	}
	dst = append(dst, ']')
	if len(r.TopicQueueMappingByBroker) > 0 {
		dst = append(dst, `,"topicQueueMappingByBroker":`...)
		dst = appendMappingInfoMap(dst, r.TopicQueueMappingByBroker)
	}
	return append(dst, '}')
}

// DecodeTopicRouteData parses route data in either fastjson form (bare or quoted
// broker ids). Also the REGISTER_TOPIC_IN_NAMESRV body.
func DecodeTopicRouteData(b []byte) (*TopicRouteData, error) {
	var j struct {
		OrderTopicConf string `json:"orderTopicConf"`
		QueueDatas     []struct {
			BrokerName     string `json:"brokerName"`
			ReadQueueNums  int32  `json:"readQueueNums"`
			WriteQueueNums int32  `json:"writeQueueNums"`
			Perm           int32  `json:"perm"`
			TopicSysFlag   int32  `json:"topicSysFlag"`
		} `json:"queueDatas"`
		BrokerDatas       []*brokerDataJSON                 `json:"brokerDatas"`
		FilterServerTable map[string][]string               `json:"filterServerTable"`
		MappingByBroker   map[string]*TopicQueueMappingInfo `json:"topicQueueMappingByBroker"`
	}
	if err := decodeBodyJSON(b, &j, "TopicRouteData"); err != nil {
		return nil, err
	}
	for name, info := range j.MappingByBroker {
		if info == nil {
			delete(j.MappingByBroker, name)
		}
	}
	r := &TopicRouteData{OrderTopicConf: j.OrderTopicConf, FilterServerTable: j.FilterServerTable,
		TopicQueueMappingByBroker: j.MappingByBroker,
		QueueDatas:                make([]QueueData, 0, len(j.QueueDatas)), BrokerDatas: make([]*BrokerData, 0, len(j.BrokerDatas))}
	for _, q := range j.QueueDatas {
		r.QueueDatas = append(r.QueueDatas, QueueData(q))
	}
	for _, bd := range j.BrokerDatas {
		if bd != nil {
			r.BrokerDatas = append(r.BrokerDatas, bd.value())
		}
	}
	return r, nil
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO body.
type ClusterInfo struct {
	BrokerAddrTable  map[string]*BrokerData // broker name → data
	ClusterAddrTable map[string][]string    // cluster → broker names
}

// AppendJSON appends {"brokerAddrTable":{…},"clusterAddrTable":{…}} with sorted
// keys and quoted broker ids (Java writes them bare here; quoted is what every
// client parses, see §6.1 of the protocol notes).
func (c *ClusterInfo) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"brokerAddrTable":{`...)
	for i, name := range SortedKeys(c.BrokerAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONKey(dst, name)
		dst = c.BrokerAddrTable[name].AppendJSON(dst)
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, cluster := range SortedKeys(c.ClusterAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONKey(dst, cluster)
		dst = AppendJSONStringSlice(dst, c.ClusterAddrTable[cluster])
	}
	return append(dst, "}}"...)
}

// DecodeClusterInfo parses a ClusterInfo body, including the bare-key form a Java
// name server sends.
func DecodeClusterInfo(b []byte) (*ClusterInfo, error) {
	var j struct {
		BrokerAddrTable  map[string]*brokerDataJSON `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string        `json:"clusterAddrTable"`
	}
	if err := decodeBodyJSON(b, &j, "ClusterInfo"); err != nil {
		return nil, err
	}
	c := &ClusterInfo{BrokerAddrTable: make(map[string]*BrokerData, len(j.BrokerAddrTable)),
		ClusterAddrTable: j.ClusterAddrTable}
	if c.ClusterAddrTable == nil {
		c.ClusterAddrTable = map[string][]string{}
	}
	for name, bd := range j.BrokerAddrTable {
		if bd != nil {
			c.BrokerAddrTable[name] = bd.value()
		}
	}
	return c, nil
}

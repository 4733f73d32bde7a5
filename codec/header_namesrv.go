package codec

// Typed headers of name-server requests and responses
// (remoting/…/protocol/header/namesrv). Decode reads a request's ExtFields with
// Java's rules: a missing or unparsable @CFNotNull field is a *MissingFieldError
// ("the custom field <x> is null", what the 5.x name server answers), an
// unparsable optional field stays zero. WriteExt writes the fields a Java peer
// reads, skipping empty optional strings as Java skips nulls.

// requireInt64NN reads a @CFNotNull long: Java leaves an unparsable value null and
// then reports the field as null.
func requireInt64NN(ext ExtFields, key string) (int64, error) {
	v, ok, err := ext.GetInt64(key)
	if !ok || err != nil {
		return 0, MissingField(key)
	}
	return v, nil
}

func requireStrings(ext ExtFields, keys []string, dsts ...*string) error {
	for i, k := range keys {
		v, err := ext.Require(k)
		if err != nil {
			return err
		}
		*dsts[i] = v
	}
	return nil
}

// ZoneNameExtKey is the plain ext field carrying a broker's zone (MixAll.ZONE_NAME).
const ZoneNameExtKey = "__ZONE_NAME"

// ZoneModeExtKey is the plain ext field a client in zone mode sets to "true"
// on its requests (MixAll.ZONE_MODE), with its zone in ZoneNameExtKey.
const ZoneModeExtKey = "__ZONE_MODE"

// RegisterBrokerRequestHeader is REGISTER_BROKER's header.
type RegisterBrokerRequestHeader struct {
	BrokerName             string
	BrokerAddr             string
	ClusterName            string
	HaServerAddr           string
	BrokerID               int64
	HeartbeatTimeoutMillis int64 // 0: absent (the name server's default applies)
	EnableActingMaster     bool
	Compressed             bool
	BodyCrc32              int32 // 0: not checked
	ZoneName               string
}

// Decode reads the header from a request's ext fields.
func (h *RegisterBrokerRequestHeader) Decode(ext ExtFields) error {
	*h = RegisterBrokerRequestHeader{}
	if err := requireStrings(ext, []string{"brokerName", "brokerAddr", "clusterName", "haServerAddr"},
		&h.BrokerName, &h.BrokerAddr, &h.ClusterName, &h.HaServerAddr); err != nil {
		return err
	}
	var err error
	if h.BrokerID, err = requireInt64NN(ext, "brokerId"); err != nil {
		return err
	}
	h.HeartbeatTimeoutMillis, _, _ = ext.GetInt64("heartbeatTimeoutMillis")
	h.EnableActingMaster, _ = ext.GetBool("enableActingMaster")
	h.Compressed, _ = ext.GetBool("compressed")
	h.BodyCrc32, _, _ = ext.GetInt32("bodyCrc32")
	h.ZoneName, _ = ext.Get(ZoneNameExtKey)
	return nil
}

// WriteExt writes the header as a Java broker sends it.
func (h *RegisterBrokerRequestHeader) WriteExt(w *ExtWriter) {
	w.String("brokerName", h.BrokerName)
	w.String("brokerAddr", h.BrokerAddr)
	w.String("clusterName", h.ClusterName)
	w.String("haServerAddr", h.HaServerAddr)
	w.Int64("brokerId", h.BrokerID)
	if h.HeartbeatTimeoutMillis > 0 {
		w.Int64("heartbeatTimeoutMillis", h.HeartbeatTimeoutMillis)
	}
	w.Bool("enableActingMaster", h.EnableActingMaster)
	w.Bool("compressed", h.Compressed)
	w.Int32("bodyCrc32", h.BodyCrc32)
	w.StringIfSet(ZoneNameExtKey, h.ZoneName)
}

// RegisterBrokerResponseHeader is REGISTER_BROKER's response header; both fields
// are set only for a slave whose master is registered.
type RegisterBrokerResponseHeader struct {
	HaServerAddr string
	MasterAddr   string
}

// WriteExt writes the set fields.
func (h *RegisterBrokerResponseHeader) WriteExt(w *ExtWriter) {
	w.StringIfSet("haServerAddr", h.HaServerAddr)
	w.StringIfSet("masterAddr", h.MasterAddr)
}

// Decode reads the response header.
func (h *RegisterBrokerResponseHeader) Decode(ext ExtFields) {
	h.HaServerAddr, _ = ext.Get("haServerAddr")
	h.MasterAddr, _ = ext.Get("masterAddr")
}

// BrokerIdentityHeader is the header of UNREGISTER_BROKER
// (UnRegisterBrokerRequestHeader) and QUERY_DATA_VERSION
// (QueryDataVersionRequestHeader): four @CFNotNull fields.
type BrokerIdentityHeader struct {
	BrokerName  string
	BrokerAddr  string
	ClusterName string
	BrokerID    int64
}

// Decode reads the header from a request's ext fields.
func (h *BrokerIdentityHeader) Decode(ext ExtFields) error {
	*h = BrokerIdentityHeader{}
	if err := requireStrings(ext, []string{"brokerName", "brokerAddr", "clusterName"},
		&h.BrokerName, &h.BrokerAddr, &h.ClusterName); err != nil {
		return err
	}
	var err error
	h.BrokerID, err = requireInt64NN(ext, "brokerId")
	return err
}

// WriteExt writes all four fields.
func (h *BrokerIdentityHeader) WriteExt(w *ExtWriter) {
	w.String("brokerName", h.BrokerName)
	w.String("brokerAddr", h.BrokerAddr)
	w.String("clusterName", h.ClusterName)
	w.Int64("brokerId", h.BrokerID)
}

// QueryDataVersionResponseHeader is QUERY_DATA_VERSION's response header.
type QueryDataVersionResponseHeader struct {
	Changed bool
}

// WriteExt writes "changed" (@CFNotNull: always present).
func (h *QueryDataVersionResponseHeader) WriteExt(w *ExtWriter) { w.Bool("changed", h.Changed) }

// BrokerHeartbeatRequestHeader is BROKER_HEARTBEAT's header (5.x). Only the three
// names are required; the controller-mode fields are optional and unused here.
type BrokerHeartbeatRequestHeader struct {
	ClusterName           string
	BrokerAddr            string
	BrokerName            string
	BrokerID              int64
	HasBrokerID           bool
	HeartbeatTimeoutMills int64 // Java's spelling of the key: heartbeatTimeoutMills
}

// Decode reads the header from a request's ext fields.
func (h *BrokerHeartbeatRequestHeader) Decode(ext ExtFields) error {
	*h = BrokerHeartbeatRequestHeader{}
	if err := requireStrings(ext, []string{"clusterName", "brokerAddr", "brokerName"},
		&h.ClusterName, &h.BrokerAddr, &h.BrokerName); err != nil {
		return err
	}
	var err error
	h.BrokerID, h.HasBrokerID, err = ext.GetInt64("brokerId")
	if err != nil {
		h.BrokerID, h.HasBrokerID = 0, false
	}
	h.HeartbeatTimeoutMills, _, _ = ext.GetInt64("heartbeatTimeoutMills")
	return nil
}

// WriteExt writes the header as a Java broker sends it.
func (h *BrokerHeartbeatRequestHeader) WriteExt(w *ExtWriter) {
	w.String("clusterName", h.ClusterName)
	w.String("brokerAddr", h.BrokerAddr)
	w.String("brokerName", h.BrokerName)
	if h.HasBrokerID {
		w.Int64("brokerId", h.BrokerID)
	}
	if h.HeartbeatTimeoutMills > 0 {
		w.Int64("heartbeatTimeoutMills", h.HeartbeatTimeoutMills)
	}
}

// GetRouteInfoRequestHeader is GET_ROUTEINFO_BY_TOPIC's header.
type GetRouteInfoRequestHeader struct {
	Topic                  string
	AcceptStandardJSONOnly bool
}

// Decode reads the header from a request's ext fields.
func (h *GetRouteInfoRequestHeader) Decode(ext ExtFields) error {
	var err error
	h.Topic, err = ext.Require("topic")
	h.AcceptStandardJSONOnly, _ = ext.GetBool("acceptStandardJsonOnly")
	return err
}

// WriteExt writes the topic.
func (h *GetRouteInfoRequestHeader) WriteExt(w *ExtWriter) {
	w.String("topic", h.Topic)
	if h.AcceptStandardJSONOnly {
		w.Bool("acceptStandardJsonOnly", true)
	}
}

// TopicHeader is the header of REGISTER_TOPIC_IN_NAMESRV (RegisterTopicRequestHeader)
// and DELETE_TOPIC_IN_NAMESRV (DeleteTopicFromNamesrvRequestHeader, which adds an
// optional cluster).
type TopicHeader struct {
	Topic       string
	ClusterName string
}

// Decode reads the header from a request's ext fields.
func (h *TopicHeader) Decode(ext ExtFields) error {
	var err error
	h.Topic, err = ext.Require("topic")
	h.ClusterName, _ = ext.Get("clusterName")
	return err
}

// WriteExt writes the topic and, when set, the cluster.
func (h *TopicHeader) WriteExt(w *ExtWriter) {
	w.String("topic", h.Topic)
	w.StringIfSet("clusterName", h.ClusterName)
}

// GetTopicsByClusterRequestHeader is GET_TOPICS_BY_CLUSTER's header.
type GetTopicsByClusterRequestHeader struct {
	Cluster string
}

// Decode reads the header from a request's ext fields.
func (h *GetTopicsByClusterRequestHeader) Decode(ext ExtFields) error {
	var err error
	h.Cluster, err = ext.Require("cluster")
	return err
}

// WriteExt writes the cluster.
func (h *GetTopicsByClusterRequestHeader) WriteExt(w *ExtWriter) { w.String("cluster", h.Cluster) }

// BrokerNameHeader is the header of WIPE_WRITE_PERM_OF_BROKER and
// ADD_WRITE_PERM_OF_BROKER.
type BrokerNameHeader struct {
	BrokerName string
}

// Decode reads the header from a request's ext fields.
func (h *BrokerNameHeader) Decode(ext ExtFields) error {
	var err error
	h.BrokerName, err = ext.Require("brokerName")
	return err
}

// WriteExt writes the broker name.
func (h *BrokerNameHeader) WriteExt(w *ExtWriter) { w.String("brokerName", h.BrokerName) }

// GetBrokerMemberGroupRequestHeader is GET_BROKER_MEMBER_GROUP's header, read
// by DecodeHeader (the code is rare: no hand-written decoder).
type GetBrokerMemberGroupRequestHeader struct {
	ClusterName string `ext:"clusterName,required"`
	BrokerName  string `ext:"brokerName,required"`
}

// WipeWritePermOfBrokerResponseHeader answers WIPE_WRITE_PERM_OF_BROKER.
type WipeWritePermOfBrokerResponseHeader struct {
	WipeTopicCount int32
}

// WriteExt writes wipeTopicCount.
func (h *WipeWritePermOfBrokerResponseHeader) WriteExt(w *ExtWriter) {
	w.Int32("wipeTopicCount", h.WipeTopicCount)
}

// AddWritePermOfBrokerResponseHeader answers ADD_WRITE_PERM_OF_BROKER.
type AddWritePermOfBrokerResponseHeader struct {
	AddTopicCount int32
}

// WriteExt writes addTopicCount.
func (h *AddWritePermOfBrokerResponseHeader) WriteExt(w *ExtWriter) {
	w.Int32("addTopicCount", h.AddTopicCount)
}

// KVConfigHeader is the header of the KV requests: PUT_KV_CONFIG (all three
// required), GET_KV_CONFIG and DELETE_KV_CONFIG (namespace and key) and
// GET_KVLIST_BY_NAMESPACE (namespace only).
type KVConfigHeader struct {
	Namespace string
	Key       string
	Value     string
}

// DecodePut reads a PUT_KV_CONFIG header.
func (h *KVConfigHeader) DecodePut(ext ExtFields) error {
	return requireStrings(ext, []string{"namespace", "key", "value"}, &h.Namespace, &h.Key, &h.Value)
}

// DecodeKey reads a GET_KV_CONFIG or DELETE_KV_CONFIG header.
func (h *KVConfigHeader) DecodeKey(ext ExtFields) error {
	return requireStrings(ext, []string{"namespace", "key"}, &h.Namespace, &h.Key)
}

// DecodeNamespace reads a GET_KVLIST_BY_NAMESPACE header.
func (h *KVConfigHeader) DecodeNamespace(ext ExtFields) error {
	return requireStrings(ext, []string{"namespace"}, &h.Namespace)
}

// WriteExt writes the set fields.
func (h *KVConfigHeader) WriteExt(w *ExtWriter) {
	w.StringIfSet("namespace", h.Namespace)
	w.StringIfSet("key", h.Key)
	w.StringIfSet("value", h.Value)
}

// GetKVConfigResponseHeader answers GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string
}

// WriteExt writes the value (present even when empty: the key exists).
func (h *GetKVConfigResponseHeader) WriteExt(w *ExtWriter) { w.String("value", h.Value) }

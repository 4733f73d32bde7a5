package namesrv

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// ProcessRequest implements remoting.Processor: one case per request code of
// Java's DefaultRequestProcessor and ClientRequestProcessor.
func (ns *NameServer) ProcessRequest(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	switch req.Code {
	case codec.ReqGetRouteinfoByTopic:
		return ns.getRouteInfoByTopic(req)
	case codec.ReqRegisterBroker:
		return ns.registerBroker(c, req)
	case codec.ReqUnregisterBroker:
		return ns.unregisterBroker(req)
	case codec.ReqQueryDataVersion:
		return ns.queryDataVersion(req)
	case codec.ReqBrokerHeartbeat:
		return ns.brokerHeartbeat(req)
	case codec.ReqGetBrokerMemberGroup:
		return ns.getBrokerMemberGroup(req)
	case codec.ReqGetBrokerClusterInfo:
		return ns.getBrokerClusterInfo(req)
	case codec.ReqGetAllTopicListFromNameserver:
		return ns.getAllTopicListFromNameserver(req)
	case codec.ReqGetTopicsByCluster:
		return ns.getTopicsByCluster(req)
	case codec.ReqGetSystemTopicListFromNs:
		return ns.getSystemTopicListFromNs(req)
	case codec.ReqGetUnitTopicList:
		return ns.getUnitTopicList(req)
	case codec.ReqGetHasUnitSubTopicList:
		return ns.getHasUnitSubTopicList(req)
	case codec.ReqGetHasUnitSubUnunitTopicList:
		return ns.getHasUnitSubUnUnitTopicList(req)
	case codec.ReqDeleteTopicInNamesrv:
		return ns.deleteTopicInNamesrv(req)
	case codec.ReqRegisterTopicInNamesrv:
		return ns.registerTopicInNamesrv(req)
	case codec.ReqWipeWritePermOfBroker:
		return ns.wipeWritePermOfBroker(req)
	case codec.ReqAddWritePermOfBroker:
		return ns.addWritePermOfBroker(req)
	case codec.ReqPutKvConfig:
		return ns.putKVConfig(req)
	case codec.ReqGetKvConfig:
		return ns.getKVConfig(req)
	case codec.ReqDeleteKvConfig:
		return ns.deleteKVConfig(req)
	case codec.ReqGetKvlistByNamespace:
		return ns.getKVListByNamespace(req)
	case codec.ReqGetNamesrvConfig:
		return ns.getNamesrvConfig(req)
	case codec.ReqUpdateNamesrvConfig:
		return ns.updateNamesrvConfig(req)
	default:
		return codec.NewResponse(req, codec.RespRequestCodeNotSupported,
			" request type "+strconv.Itoa(int(req.Code))+" not supported"), nil
	}
}

func success(req *codec.RemotingCommand) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespSuccess, "")
}

// faqSuffix is FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL) as 5.3.3 appends it.
const faqSuffix = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

// GET_ROUTEINFO_BY_TOPIC: the topic's route, or
// TOPIC_NOT_EXIST. Every client gets the standard-JSON form Java sends to
// clients >= V4_9_4 (quoted broker ids), which the older ones parse too.
func (ns *NameServer) getRouteInfoByTopic(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetRouteInfoRequestHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	cfg := ns.cfg.Load()
	if cfg.NeedWaitForService && cfg.now().Sub(ns.started) < compat.Seconds(int64(cfg.WaitSecondsForService)) {
		return codec.NewResponse(req, codec.RespSystemError, "name server not ready"), nil
	}
	var orderConf string
	if cfg.OrderMessageEnable {
		orderConf, _ = ns.kv.Get(NamespaceOrderTopicConfig, h.Topic)
	}
	bp := ns.routeBufs.Get().(*[]byte)
	body, ok := ns.routes.AppendTopicRouteJSON((*bp)[:0], h.Topic, orderConf, clientZone(req.Ext))
	if !ok {
		ns.routeBufs.Put(bp)
		return codec.NewResponse(req, codec.RespTopicNotExist,
			"No topic route info in name server for the topic: "+h.Topic+faqSuffix), nil
	}
	resp := success(req)
	resp.Body = bytes.Clone(body)
	if cap(body) <= 64<<10 { // keep the pool from holding huge buffers
		*bp = body[:0]
		ns.routeBufs.Put(bp)
	}
	return resp, nil
}

// clientZone is the zone whose brokers a route lookup is narrowed to: the
// client's __ZONE_NAME when it also sent __ZONE_MODE=true (Java's
// ZoneRouteRPCHook: Boolean.parseBoolean, and a blank zone means none).
func clientZone(ext codec.ExtFields) string {
	if mode, _ := ext.Get(codec.ZoneModeExtKey); !strings.EqualFold(mode, "true") {
		return ""
	}
	zone, _ := ext.Get(codec.ZoneNameExtKey)
	if strings.TrimSpace(zone) == "" {
		return ""
	}
	return zone
}

// REGISTER_BROKER: check the body CRC, decode the body (plain
// or compressed; a bare TopicConfigSerializeWrapper from brokers older than
// V3_0_11), record the broker, answer the master's addresses to a slave and, if
// configured, the ORDER_TOPIC_CONFIG namespace as body.
func (ns *NameServer) registerBroker(c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.RegisterBrokerRequestHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	if h.BodyCrc32 != 0 && int32(crc32.ChecksumIEEE(req.Body)&0x7FFFFFFF) != h.BodyCrc32 {
		ns.log.Warn("register broker: crc32 not match", "brokerAddr", h.BrokerAddr, "remote", remoteAddr(c))
		return codec.NewResponse(req, codec.RespSystemError, "crc32 not match"), nil
	}
	reg := BrokerRegistration{ClusterName: h.ClusterName, BrokerAddr: h.BrokerAddr, BrokerName: h.BrokerName,
		BrokerID: h.BrokerID, HaServerAddr: h.HaServerAddr, ZoneName: h.ZoneName,
		HeartbeatTimeoutMillis: h.HeartbeatTimeoutMillis, Conn: c}
	if _, set := req.Ext.Get("enableActingMaster"); set {
		v := h.EnableActingMaster
		reg.EnableActingMaster = &v
	}
	if req.Version >= codec.VersionV3_0_11 {
		body, err := codec.DecodeRegisterBrokerBody(req.Body, h.Compressed, req.Version)
		if err != nil {
			return nil, err
		}
		reg.Topics = &body.TopicConfigSerializeWrapper
		reg.FilterServerList = body.FilterServerList
	} else if len(req.Body) > 0 {
		w, err := codec.DecodeTopicConfigSerializeWrapper(req.Body)
		if err != nil {
			return nil, err
		}
		reg.Topics = w
	}
	res, ok := ns.routes.RegisterBroker(&reg)
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, "register broker failed"), nil
	}
	resp := success(req)
	resp.CustomHeader = &codec.RegisterBrokerResponseHeader{HaServerAddr: res.HaServerAddr, MasterAddr: res.MasterAddr}
	if ns.cfg.Load().ReturnOrderTopicConfigToBroker {
		body, size, ok := ns.kv.AppendNamespaceJSON(nil, NamespaceOrderTopicConfig, maxOrderConfBody)
		switch {
		case ok && size > maxOrderConfBody:
			ns.warnOrderConfTooBig(size)
		case ok:
			resp.Body = body
		}
	}
	return resp, nil
}

// maxOrderConfBody bounds the ORDER_TOPIC_CONFIG body of a REGISTER_BROKER
// answer: a namespace at MaxKVNamespaceSize. A bigger one (only a kvConfig.json
// loaded from disk can hold one) is left out; a broker takes an answer with no
// body as "no order topics" (Java's BrokerOuterAPI decodes the KVTable only
// when there is a body, and updateOrderTopicConfig ignores null), where an
// answer above the frame limit failed every registration.
const maxOrderConfBody = MaxKVNamespaceSize + kvTableBodyOverhead

// warnOrderConfTooBig logs, at most once a minute, that registration answers
// leave out the order-topic config.
func (ns *NameServer) warnOrderConfTooBig(size int) {
	now := time.Now().UnixNano()
	last := ns.orderConfWarned.Load()
	if now-last < int64(time.Minute) || !ns.orderConfWarned.CompareAndSwap(last, now) {
		return
	}
	ns.log.Warn("register broker: ORDER_TOPIC_CONFIG left out of the answer, it is too large; delete keys from it",
		"bytes", size, "max", maxOrderConfBody)
}

func remoteAddr(c remoting.Conn) string {
	if c == nil || c.RemoteAddr() == nil {
		return ""
	}
	return c.RemoteAddr().String()
}

// UNREGISTER_BROKER: remove one broker instance now (Java
// queues it to a batch service and answers at once; the outcome is the same).
func (ns *NameServer) unregisterBroker(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.BrokerIdentityHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	ns.routes.UnregisterBrokers(UnregisterRequest{ClusterName: strings.Clone(h.ClusterName),
		BrokerAddr: strings.Clone(h.BrokerAddr), BrokerName: strings.Clone(h.BrokerName), BrokerID: h.BrokerID})
	return success(req), nil
}

// QUERY_DATA_VERSION: tell a broker whether its DataVersion
// differs from the one recorded (it re-registers then), refresh its liveness and
// return the recorded version.
func (ns *NameServer) queryDataVersion(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.BrokerIdentityHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	var (
		dv     codec.DataVersion
		hasDV  bool
		err    error
		resp   = success(req)
		header codec.QueryDataVersionResponseHeader
	)
	if len(req.Body) > 0 {
		if dv, err = codec.DecodeDataVersion(req.Body); err != nil {
			return nil, err
		}
		hasDV = true
	}
	prev, known := ns.routes.QueryBrokerTopicConfig(h.ClusterName, h.BrokerAddr)
	header.Changed = !known || !hasDV || prev != dv
	ns.routes.UpdateBrokerInfoUpdateTimestamp(h.ClusterName, h.BrokerAddr)
	if known {
		resp.Body = prev.AppendJSON(nil)
	}
	resp.CustomHeader = &header
	return resp, nil
}

// BROKER_HEARTBEAT (5.x): refresh liveness only.
func (ns *NameServer) brokerHeartbeat(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.BrokerHeartbeatRequestHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	ns.routes.UpdateBrokerInfoUpdateTimestamp(h.ClusterName, h.BrokerAddr)
	return success(req), nil
}

// GET_BROKER_MEMBER_GROUP (5.x acting-master brokers):
// the ids and addresses registered under a broker name.
func (ns *NameServer) getBrokerMemberGroup(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.GetBrokerMemberGroupRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return nil, err
	}
	cluster, brokerName := h.ClusterName, h.BrokerName
	b := []byte(`{"brokerMemberGroup":{"brokerAddrs":`)
	b = codec.AppendJSONLongKeyMap(b, ns.routes.BrokerAddrs(brokerName), codec.AppendJSONString)
	b = append(b, `,"brokerName":`...)
	b = codec.AppendJSONString(b, brokerName)
	b = append(b, `,"cluster":`...)
	b = codec.AppendJSONString(b, cluster)
	resp := success(req)
	resp.Body = append(b, "}}"...)
	return resp, nil
}

// GET_BROKER_CLUSTER_INFO: the broker and cluster tables.
func (ns *NameServer) getBrokerClusterInfo(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := success(req)
	resp.Body = ns.routes.ClusterInfo().AppendJSON(nil)
	return resp, nil
}

func topicListResponse(req *codec.RemotingCommand, l *codec.TopicList) *codec.RemotingCommand {
	resp := success(req)
	resp.Body = l.AppendJSON(nil)
	return resp
}

func disabled(req *codec.RemotingCommand) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.RespSystemError, "disable")
}

// GET_ALL_TOPIC_LIST_FROM_NAMESERVER: refused
// when enableAllTopicList is off.
func (ns *NameServer) getAllTopicListFromNameserver(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if !ns.cfg.Load().EnableAllTopicList {
		return disabled(req), nil
	}
	return topicListResponse(req, &codec.TopicList{TopicList: ns.routes.AllTopics()}), nil
}

// GET_TOPICS_BY_CLUSTER: refused when enableTopicList is off.
func (ns *NameServer) getTopicsByCluster(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if !ns.cfg.Load().EnableTopicList {
		return disabled(req), nil
	}
	var h codec.GetTopicsByClusterRequestHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	return topicListResponse(req, &codec.TopicList{TopicList: ns.routes.TopicsByCluster(h.Cluster)}), nil
}

// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker
// names (each is a system topic) and one broker address.
func (ns *NameServer) getSystemTopicListFromNs(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return topicListResponse(req, ns.routes.SystemTopicList()), nil
}

func hasUnit(f int32) bool    { return f&codec.TopicSysFlagUnit != 0 }
func hasUnitSub(f int32) bool { return f&codec.TopicSysFlagUnitSub != 0 }

// GET_UNIT_TOPIC_LIST: topics with the unit flag.
func (ns *NameServer) getUnitTopicList(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return ns.sysFlagTopicList(req, hasUnit)
}

// GET_HAS_UNIT_SUB_TOPIC_LIST: topics with the unit-subscription flag.
func (ns *NameServer) getHasUnitSubTopicList(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return ns.sysFlagTopicList(req, hasUnitSub)
}

// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: topics with the unit-subscription flag
// but not the unit flag.
func (ns *NameServer) getHasUnitSubUnUnitTopicList(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return ns.sysFlagTopicList(req, func(f int32) bool { return !hasUnit(f) && hasUnitSub(f) })
}

func (ns *NameServer) sysFlagTopicList(req *codec.RemotingCommand, match func(int32) bool) (*codec.RemotingCommand, error) {
	if !ns.cfg.Load().EnableTopicList {
		return disabled(req), nil
	}
	return topicListResponse(req, &codec.TopicList{TopicList: ns.routes.TopicsWithSysFlag(match)}), nil
}

// DELETE_TOPIC_IN_NAMESRV: drop the topic, or only its
// queues on the named cluster's brokers.
func (ns *NameServer) deleteTopicInNamesrv(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	ns.routes.DeleteTopic(h.Topic, h.ClusterName)
	return success(req), nil
}

// REGISTER_TOPIC_IN_NAMESRV (5.x): the body is route
// data whose queue data is added to the topic.
func (ns *NameServer) registerTopicInNamesrv(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.TopicHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	// Java takes any name here; a topic no broker could hold is refused with
	// the broker's own rule and remark, so the route table stays sane.
	if remark, ok := compat.ValidateTopic(h.Topic); !ok && !longRetryTopic(h.Topic) {
		return codec.NewResponse(req, codec.RespInvalidParameter, remark), nil
	}
	if len(req.Body) > 0 {
		route, err := codec.DecodeTopicRouteData(req.Body)
		if err != nil {
			return nil, err
		}
		ns.routes.RegisterTopic(h.Topic, route.QueueDatas)
	}
	return success(req), nil
}

// WIPE_WRITE_PERM_OF_BROKER: make a broker's queues
// read-only on every topic (before taking it down).
func (ns *NameServer) wipeWritePermOfBroker(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.BrokerNameHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	n := ns.routes.WipeWritePermOfBroker(h.BrokerName)
	ns.log.Info("wipe write perm of broker", "brokerName", h.BrokerName, "topics", n)
	resp := success(req)
	resp.CustomHeader = &codec.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: int32(n)}
	return resp, nil
}

// ADD_WRITE_PERM_OF_BROKER: make a broker's queues
// readable and writable again.
func (ns *NameServer) addWritePermOfBroker(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.BrokerNameHeader
	if err := h.Decode(req.Ext); err != nil {
		return nil, err
	}
	n := ns.routes.AddWritePermOfBroker(h.BrokerName)
	ns.log.Info("add write perm of broker", "brokerName", h.BrokerName, "topics", n)
	resp := success(req)
	resp.CustomHeader = &codec.AddWritePermOfBrokerResponseHeader{AddTopicCount: int32(n)}
	return resp, nil
}

// PUT_KV_CONFIG: set a value. One above the KV bounds (see MaxKVValueSize;
// Java has none) is refused with SYSTEM_ERROR and not stored. A failed persist
// is logged; the value is set (Java answers SUCCESS too).
func (ns *NameServer) putKVConfig(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.KVConfigHeader
	if err := h.DecodePut(req.Ext); err != nil {
		return nil, err
	}
	if err := ns.kv.Put(h.Namespace, h.Key, h.Value); err != nil {
		if errors.Is(err, ErrKVLimit) {
			ns.log.Warn("put kv config refused", "namespace", truncate(h.Namespace), "key", truncate(h.Key), "err", err)
			return codec.NewResponse(req, codec.RespSystemError, "PUT_KV_CONFIG refused: "+err.Error()), nil
		}
		ns.log.Error("persist kv config", "err", err)
	}
	return success(req), nil
}

// truncate keeps a logged name short.
func truncate(s string) string {
	if len(s) > 128 {
		return s[:128] + "…"
	}
	return s
}

// GET_KV_CONFIG: the value, or QUERY_NOT_FOUND.
func (ns *NameServer) getKVConfig(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.KVConfigHeader
	if err := h.DecodeKey(req.Ext); err != nil {
		return nil, err
	}
	v, ok := ns.kv.Get(h.Namespace, h.Key)
	if !ok {
		return codec.NewResponse(req, codec.RespQueryNotFound,
			"No config item, Namespace: "+h.Namespace+" Key: "+h.Key), nil
	}
	resp := success(req)
	resp.CustomHeader = &codec.GetKVConfigResponseHeader{Value: v}
	return resp, nil
}

// DELETE_KV_CONFIG: remove a key.
func (ns *NameServer) deleteKVConfig(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.KVConfigHeader
	if err := h.DecodeKey(req.Ext); err != nil {
		return nil, err
	}
	if err := ns.kv.Delete(h.Namespace, h.Key); err != nil {
		ns.log.Error("persist kv config", "err", err)
	}
	return success(req), nil
}

// maxKVListBody bounds a GET_KVLIST_BY_NAMESPACE answer: half the frame limit.
// Namespaces PUT_KV_CONFIG builds stay far below (MaxKVNamespaceSize); one
// loaded from disk can be bigger and is still listed up to this size, so an
// operator can see which keys to delete.
const maxKVListBody = remoting.DefaultMaxFrameLength / 2

// GET_KVLIST_BY_NAMESPACE: a KVTable, or QUERY_NOT_FOUND; SYSTEM_ERROR when the
// namespace is above maxKVListBody.
func (ns *NameServer) getKVListByNamespace(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.KVConfigHeader
	if err := h.DecodeNamespace(req.Ext); err != nil {
		return nil, err
	}
	body, size, ok := ns.kv.AppendNamespaceJSON(nil, h.Namespace, maxKVListBody)
	if !ok {
		return codec.NewResponse(req, codec.RespQueryNotFound, "No config item, Namespace: "+h.Namespace), nil
	}
	if size > maxKVListBody {
		return codec.NewResponse(req, codec.RespSystemError, "namespace "+h.Namespace+" takes "+strconv.Itoa(size)+
			" bytes as JSON, above the "+strconv.Itoa(maxKVListBody)+" an answer may carry"), nil
	}
	resp := success(req)
	resp.Body = body
	return resp, nil
}

// GET_NAMESRV_CONFIG: every property as sorted key=value lines.
func (ns *NameServer) getNamesrvConfig(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := success(req)
	resp.Body = compat.FormatProperties(ns.cfg.Load().Properties())
	return resp, nil
}

// UPDATE_NAMESRV_CONFIG: apply the properties in the body
// (refusing black-listed keys with NO_PERMISSION) and persist the whole
// configuration to configStorePath.
func (ns *NameServer) updateNamesrvConfig(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if len(req.Body) == 0 {
		return success(req), nil
	}
	props, err := compat.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		ns.log.Error("update namesrv config: bad properties", "err", err)
		return codec.NewResponse(req, codec.RespSystemError, "string2Properties error"), nil
	}
	ns.cfgMu.Lock()
	defer ns.cfgMu.Unlock()
	cfg := *ns.cfg.Load()
	if key, bad := cfg.blackListed(props); bad {
		ns.log.Warn("update namesrv config: black-listed key refused", "key", key)
		return codec.NewResponse(req, codec.RespNoPermission, "Can not update config in black list."), nil
	}
	if err := compat.RefusedSetting(props); err != nil {
		// Persisted, it would keep the name server from starting again.
		ns.log.Warn("update namesrv config: refused", "err", err)
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	unknown, err := cfg.ApplyProperties(props)
	if err != nil {
		// Java's properties2Object skips values that do not parse; so do we.
		ns.log.Warn("update namesrv config: values ignored", "err", err)
	}
	if len(unknown) > 0 {
		ns.log.Warn("update namesrv config: keys the name server does not know", "keys", unknown)
	}
	ns.cfg.Store(&cfg)
	ns.log.Info("namesrv config updated", "keys", len(props))
	if cfg.ConfigStorePath != "" {
		if err := compat.WriteConfigFile(cfg.ConfigStorePath, compat.FormatProperties(cfg.Properties())); err != nil {
			ns.log.Error("persist namesrv config", "err", err)
		}
	}
	return success(req), nil
}

// longRetryTopic is a %RETRY% or %DLQ% topic of a group longer than a topic may
// be (groups go up to 255): brokers create those themselves.
func longRetryTopic(t string) bool {
	return len(t) <= compat.GroupMaxLength && (strings.HasPrefix(t, "%RETRY%") || strings.HasPrefix(t, "%DLQ%")) &&
		!compat.NameHasIllegalChar(t)
}

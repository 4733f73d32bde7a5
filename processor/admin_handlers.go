package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/stats"
	"rmqd/remoting"
)

// adminState is what the admin handlers keep between requests: runtime
// statistics and the broker settings changed with UPDATE_BROKER_CONFIG.
type adminState struct {
	stats      stats.Broker
	storeStats stats.Store // StoreStatsService's lookup and put figures

	// cfgMu serializes UPDATE_BROKER_CONFIG (Java's handler is synchronized)
	// and guards overrides.
	cfgMu sync.Mutex
	// overrides are updated settings the running broker does not read live
	// (see liveConfigKeys), by Java key: GET_BROKER_CONFIG shows them and the
	// config file keeps them for the next start.
	overrides map[string]string
}

// adminHandlers maps the admin codes served from the admin_*.go files.
func (b *Broker) adminHandlers() map[int32]remoting.Processor {
	f := func(fn remoting.ProcessorFunc) remoting.Processor { return fn }
	return map[int32]remoting.Processor{
		codec.ReqGetBrokerRuntimeInfo:            f(b.handleBrokerRuntimeInfo),
		codec.ReqGetBrokerConfig:                 f(b.handleBrokerConfig),
		codec.ReqUpdateBrokerConfig:              f(b.handleUpdateBrokerConfig),
		codec.ReqCleanExpiredConsumequeue:        f(b.handleCleanExpiredConsumeQueue),
		codec.ReqCleanUnusedTopic:                f(b.handleCleanUnusedTopic),
		codec.ReqViewBrokerStatsData:             f(b.handleViewBrokerStatsData),
		codec.ReqQueryConsumeQueue:               f(b.handleQueryConsumeQueue),
		codec.ReqDeleteExpiredCommitlog:          f(b.handleDeleteExpiredCommitLog),
		codec.ReqQueryTopicsByConsumer:           f(b.handleQueryTopicsByConsumer),
		codec.ReqQueryConsumeTimeSpan:            f(b.handleQueryConsumeTimeSpan),
		codec.ReqCloneGroupOffset:                f(b.handleCloneGroupOffset),
		codec.ReqGetBrokerConsumeStats:           f(b.handleGetBrokerConsumeStats),
		codec.ReqInvokeBrokerToGetConsumerStatus: f(b.handleInvokeBrokerToGetConsumerStatus),
		codec.ReqUpdateColdDataFlowCtrConfig:     f(b.handleUpdateColdDataFlowCtrConfig),
		codec.ReqRemoveColdDataFlowCtrConfig:     f(b.handleRemoveColdDataFlowCtrConfig),
		codec.ReqGetColdDataFlowCtrInfo:          f(b.handleGetColdDataFlowCtrInfo),
		codec.ReqSetCommitlogReadMode:            f(b.handleSetCommitLogReadMode),
		codec.ReqSwitchTimerEngine:               f(b.handleSwitchTimerEngine),
		codec.ReqGetBrokerLiteInfo:               f(b.handleGetBrokerLiteInfo),
		codec.ReqGetParentTopicInfo:              f(b.handleGetParentTopicInfo),
		codec.ReqGetLiteTopicInfo:                f(b.handleGetLiteTopicInfo),
		codec.ReqGetLiteClientInfo:               f(b.handleGetLiteClientInfo),
		codec.ReqGetLiteGroupInfo:                f(b.handleGetLiteGroupInfo),
		codec.ReqTriggerLiteDispatch:             f(b.handleTriggerLiteDispatch),
		codec.ReqResetMasterFlushOffset:          f(b.handleResetMasterFlushOffset),
		codec.ReqQueryCorrectionOffset:           f(b.handleQueryCorrectionOffset),
		codec.ReqResumeCheckHalfMessage:          f(b.handleResumeCheckHalfMessage),
		codec.ReqCheckRocksdbCqWriteProgress:     f(b.handleCheckRocksdbCqWriteProgress),
		codec.ReqExportRocksdbConfigToJson:       f(b.handleExportRocksDBConfigToJSON),
	}
}

// countPut is the send path's statistics hook: n messages of size bytes stored
// in topic.
func (b *Broker) countPut(topic string, n, size int32) {
	b.admin.stats.CountPut(topic, n, size, b.isSystemTopic)
}

// countGet is the pull path's statistics hook: n messages of size bytes handed
// to group from topic.
func (b *Broker) countGet(group, topic string, n, size int) {
	b.admin.stats.CountGet(group, topic, n, size, b.isSystemTopic)
}

// consumeTpsJSON is ConsumeStats.consumeTps: the summed last-minute pull rate of
// group over topics, as fastjson writes a double.
func (b *Broker) consumeTpsJSON(group string, topics []string) string {
	var tps float64
	for _, t := range topics {
		tps += b.admin.stats.ConsumeTps(t, group)
	}
	return stats.JavaDouble(tps)
}

// handleBrokerRuntimeInfo is GET_BROKER_RUNTIME_INFO: a KVTable with the keys
// mqadmin's clusterList and brokerStatus read (AdminBrokerProcessor
// .prepareRuntimeInfo plus StoreStatsService.getRuntimeInfo).
func (b *Broker) handleBrokerRuntimeInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	up := time.Since(b.startTime)
	minPhy, maxPhy := b.store.MinPhyOffset(), b.store.MaxPhyOffset()
	readBehind, offsetBehind, congest := b.timer.Progress(time.Now().UnixMilli())
	t := map[string]string{
		"brokerVersionDesc":                        "V5_3_3",
		"brokerVersion":                            strconv.Itoa(int(codec.BrokerVersion)),
		"brokerActive":                             strconv.FormatBool(b.conf().BrokerID == 0),
		"bootTimestamp":                            i64s(b.startTime.UnixMilli()),
		"runtime":                                  fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", int(up.Hours())/24, int(up.Hours())%24, int(up.Minutes())%60, int(up.Seconds())%60),
		"sendThreadPoolQueueSize":                  "0",
		"sendThreadPoolQueueCapacity":              "10000",
		"pullThreadPoolQueueSize":                  "0",
		"pullThreadPoolQueueCapacity":              "100000",
		"litePullThreadPoolQueueSize":              "0",
		"litePullThreadPoolQueueCapacity":          "100000",
		"queryThreadPoolQueueSize":                 "0",
		"queryThreadPoolQueueCapacity":             "20000",
		"ackThreadPoolQueueSize":                   "0",
		"ackThreadPoolQueueCapacity":               "100000",
		"sendThreadPoolQueueHeadWaitTimeMills":     "0",
		"pullThreadPoolQueueHeadWaitTimeMills":     "0",
		"queryThreadPoolQueueHeadWaitTimeMills":    "0",
		"litePullThreadPoolQueueHeadWaitTimeMills": "0",
		"ackThreadPoolQueueHeadWaitTimeMills":      "0",
		"EndTransactionQueueSize":                  "0",
		"EndTransactionThreadPoolQueueCapacity":    "100000",
		"pageCacheLockTimeMills":                   "0",
		"commitLogMinOffset":                       i64s(minPhy),
		"commitLogMaxOffset":                       i64s(maxPhy),
		"commitLogDiskRatio":                       stats.JavaDouble(b.store.CommitLogDiskRatio()),
		"earliestMessageTimeStamp":                 i64s(b.earliestMessageTime()),
		"startAcceptSendRequestTimeStamp":          "0",
		"dispatchBehindBytes":                      "0",
		"remainTransientStoreBufferNumbs":          strconv.Itoa(int(^uint32(0) >> 1)),
		"remainHowManyDataToFlush":                 "0 B",
		"timerReadBehind":                          i64s(readBehind),
		"timerOffsetBehind":                        i64s(offsetBehind),
		"timerCongestNum":                          strconv.Itoa(congest),
		"timerEnqueueTps":                          "0.0",
		"timerDequeueTps":                          "0.0",
		"brokerName":                               b.conf().BrokerName,
	}
	b.admin.stats.Runtime(t)
	b.overloadRuntime(t)
	b.storeRuntime(t)
	body, err := codec.MarshalBody(kvTable{Table: t})
	if err != nil {
		return nil, fmt.Errorf("encode runtime info: %w", err)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// brokerProperties is the configuration GET_BROKER_CONFIG shows: the running
// settings with the updates that wait for the next start laid over them.
func (b *Broker) brokerProperties() map[string]string {
	b.admin.cfgMu.Lock()
	defer b.admin.cfgMu.Unlock()
	return b.brokerPropertiesLocked()
}

// handleBrokerConfig is GET_BROKER_CONFIG: Java properties text, with the
// topic table's DataVersion in the version header.
func (b *Broker) handleBrokerConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	props := b.brokerProperties()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(props[k])
		sb.WriteByte('\n')
	}
	dv, err := codec.MarshalBody(b.topics.DataVersion())
	if err != nil {
		return nil, fmt.Errorf("encode data version: %w", err)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Ext.Set("version", string(dv))
	resp.Body = []byte(sb.String())
	return resp, nil
}

// handleUpdateBrokerConfig is UPDATE_BROKER_CONFIG: the body is
// java.util.Properties text. Live settings change at once, the others at the
// next start; all are written into the broker's config file (updateConfig). A
// brokerPermission change is announced to the name servers right away, with a
// new topic-table DataVersion so they take it, as Java does.
func (b *Broker) handleUpdateBrokerConfig(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if len(req.Body) == 0 {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil
	}
	props, err := compat.ParseProperties(bytes.NewReader(req.Body))
	if err != nil {
		b.log.Warn("broker config update refused: bad properties text", "err", err, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespSystemError, "string2Properties error"), nil
	}
	applied, permChanged, err := b.updateConfig(props)
	switch {
	case errors.Is(err, errConfigBlackList):
		b.log.Warn("broker config update refused: black-listed key", "err", err, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespNoPermission, blackListRemark(err)), nil
	case err != nil && applied == nil:
		b.log.Warn("broker config update refused", "err", err, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	case err != nil:
		// Applied but not persisted: Java logs persist failures and answers
		// SUCCESS; say it in the log all the same.
		b.log.Error("broker config updated but not persisted", "keys", applied, "err", err)
	}
	b.log.Info("broker config updated", "keys", applied, "remote", c.RemoteAddr())
	if permChanged {
		b.topics.BumpVersion()
		if err := b.RegisterAll(ctx); err != nil {
			b.log.Warn("register broker after brokerPermission update", "err", err)
		}
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// queueCleaner is what CLEAN_EXPIRED_CONSUMEQUEUE and CLEAN_UNUSED_TOPIC need
// from the store (DefaultStore has it).
type queueCleaner interface {
	CleanExpiredQueues(keep func(topic string) bool) int
	QueueTopics() []string
	DeleteTopics(topics []string)
}

// handleCleanExpiredConsumeQueue is CLEAN_EXPIRED_CONSUMEQUEUE
// (DefaultMessageStore.cleanExpiredConsumerQueue): the consume queues of user
// topics whose messages have all left the commitlog are removed.
func (b *Broker) handleCleanExpiredConsumeQueue(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	qc, ok := b.store.(queueCleaner)
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, "this message store cannot clean consume queues"), nil
	}
	n := qc.CleanExpiredQueues(b.isSystemTopic)
	b.log.Info("clean expired consume queues", "removed", n, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// manualDeleter is what DELETE_EXPIRED_COMMITLOG needs from the store.
type manualDeleter interface {
	DeleteExpiredFilesManually()
}

// handleDeleteExpiredCommitLog is DELETE_EXPIRED_COMMITLOG (mqadmin
// deleteExpiredCommitLog, executeDeleteFilesManually): the store's next clean
// passes delete commitlog files past fileReservedTime at any hour. Like Java it
// answers at once; the files go within a clean interval.
func (b *Broker) handleDeleteExpiredCommitLog(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	md, ok := b.store.(manualDeleter)
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, "this message store cannot delete files manually"), nil
	}
	md.DeleteExpiredFilesManually()
	b.log.Warn("delete expired commitlog requested", "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleCleanUnusedTopic is CLEAN_UNUSED_TOPIC (DefaultMessageStore.
// cleanUnusedTopic): consume queues of topics the topic table no longer
// holds are deleted, system topics and LMQ queues excepted.
func (b *Broker) handleCleanUnusedTopic(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	qc, ok := b.store.(queueCleaner)
	if !ok {
		return codec.NewResponse(req, codec.RespSystemError, "this message store cannot clean consume queues"), nil
	}
	var unused []string
	b.queuesMu.Lock()
	defer b.queuesMu.Unlock()
	for _, t := range qc.QueueTopics() {
		if _, known := b.topics.Select(t); known || b.isSystemTopic(t) || compat.IsLMQ(t) {
			continue
		}
		unused = append(unused, t)
	}
	if len(unused) > 0 {
		qc.DeleteTopics(unused)
	}
	b.log.Warn("clean unused topics", "deleted", unused, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleViewBrokerStatsData is VIEW_BROKER_STATS_DATA (mqadmin statsAll,
// dashboard): BrokerStatsData for one statsName/statsKey, each window as
// StatsItem computes it from its snapshots (10 s over a minute, 10 min over
// an hour, 1 h over a day).
func (b *Broker) handleViewBrokerStatsData(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ViewBrokerStatsDataRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	name, key := h.StatsName, h.StatsKey
	ctr, isSize := b.admin.stats.Counter(name, key)
	if strings.HasPrefix(name, "BROKER_") && key != b.conf().BrokerClusterName {
		ctr = nil // Java keys the broker totals by its cluster name
	}
	if ctr == nil {
		return codec.NewResponse(req, codec.RespSystemError, "The stats <"+name+"> <"+key+"> not exist"), nil
	}
	w := b.admin.stats.Windows(ctr, isSize)
	item := func(dst []byte, s stats.Snapshot) []byte {
		dst = append(dst, `{"avgpt":`...)
		dst = append(dst, stats.JavaDouble(s.Avgpt)...)
		dst = append(dst, `,"sum":`...)
		dst = strconv.AppendInt(dst, s.Sum, 10)
		dst = append(dst, `,"tps":`...)
		dst = append(dst, stats.JavaDouble(s.Tps)...)
		return append(dst, '}')
	}
	body := []byte(`{"statsDay":`)
	body = item(body, w[stats.WinDay])
	body = append(body, `,"statsHour":`...)
	body = item(body, w[stats.WinHour])
	body = append(body, `,"statsMinute":`...)
	body = item(body, w[stats.WinMinute])
	body = append(body, '}')
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleQueryConsumeQueue is QUERY_CONSUME_QUEUE (mqadmin queryCq): the
// consume-queue entries of a queue from index, read back from the records they
// point at.
func (b *Broker) handleQueryConsumeQueue(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.QueryConsumeQueueRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	topic, queueID, index, count, group := h.Topic, h.QueueID, h.Index, h.Count, h.ConsumerGroup
	if _, ok := b.topics.Select(topic); !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "topic["+topic+"] not exist"), nil
	}
	minOff, maxOff := b.store.MinOffsetInQueue(topic, queueID), b.store.MaxOffsetInQueue(topic, queueID)
	var body []byte
	body = append(body, `{"maxQueueIndex":`...)
	body = strconv.AppendInt(body, maxOff, 10)
	body = append(body, `,"minQueueIndex":`...)
	body = strconv.AppendInt(body, minOff, 10)
	body = append(body, `,"queueData":[`...)
	// Java answers from the one consume-queue file that holds index (getIndexBuffer), so a count of
	// 2^31 reads at most a file's units, not the whole queue into one body.
	start := max(index, minOff)
	end := min(maxOff, b.store.ConsumeQueueFileEnd(start))
	n := 0
	for off := start; off < end && n < int(max(count, 0)); {
		res := b.store.GetMessage(group, topic, queueID, off, 1, 1<<30, nil)
		if res == nil {
			break
		}
		if len(res.Records) == 0 {
			next := res.NextBeginOffset
			res.Release()
			if next <= off {
				break
			}
			off = next
			continue
		}
		var m codec.Message
		_, err := codec.DecodeRecord(res.Records[0], &m)
		tags, _ := codec.PropertyValue(m.Properties, codec.PropTags)
		tagsCode := compat.JavaStringHash(tags)
		next := res.NextBeginOffset // past an inner batch's offsets, not into them
		res.Release()
		if err != nil {
			break
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"bitMap":null,"eval":false,"extendDataJson":null,"msg":null,"physicOffset":`...)
		body = strconv.AppendInt(body, m.CommitLogOffset, 10)
		body = append(body, `,"physicSize":`...)
		body = strconv.AppendInt(body, int64(m.StoreSize), 10)
		body = append(body, `,"tagsCode":`...)
		body = strconv.AppendInt(body, int64(tagsCode), 10)
		body = append(body, '}')
		n++
		off = max(next, m.QueueOffset+1)
	}
	body = append(body, `],"subscriptionData":null}`...)
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

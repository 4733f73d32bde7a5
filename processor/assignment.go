package processor

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/meta"
	"rmqd/remoting"
	"rmqd/store"
)

// Server-side load balancing for POP consumers (QueryAssignmentProcessor and
// MessageRequestModeManager): a 5.x consumer asks which queues it owns with
// QUERY_ASSIGNMENT, and an admin switches a (topic, group) to POP with
// SET_MESSAGE_REQUEST_MODE (mqadmin setConsumeMode), kept in
// config/messageRequestMode.json in Java's format.

const (
	requestModePull = "PULL"
	requestModePop  = "POP"
)

// requestModeBody is SetMessageRequestModeRequestBody (fields in fastjson's
// sorted order, so the file reads as Java writes it).
type requestModeBody struct {
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int32  `json:"popShareQueueNum"`
	Topic            string `json:"topic"`
}

// requestModes is MessageRequestModeManager.
type requestModes struct {
	path string
	mu   sync.Mutex
	m    map[string]map[string]requestModeBody // topic → group → mode
}

type requestModesFile struct {
	MessageRequestModeMap map[string]map[string]requestModeBody `json:"messageRequestModeMap"`
}

func newRequestModes(configDir string) *requestModes {
	return &requestModes{path: filepath.Join(configDir, "messageRequestMode.json"), m: map[string]map[string]requestModeBody{}}
}

// load reads the file (or its .bak), as ConfigManager.load does.
func (r *requestModes) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return meta.LoadConfigFile(r.path, func(b []byte) error {
		var f requestModesFile
		if err := codec.UnmarshalBody(b, &f); err != nil {
			return fmt.Errorf("decode %s: %w", r.path, err)
		}
		if f.MessageRequestModeMap != nil {
			r.m = f.MessageRequestModeMap
		}
		return nil
	})
}

func (r *requestModes) get(topic, group string) (requestModeBody, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[topic][group]
	return v, ok
}

// set records a mode and writes the file.
func (r *requestModes) set(v requestModeBody) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[v.Topic] == nil {
		r.m[v.Topic] = map[string]requestModeBody{}
	}
	r.m[v.Topic][v.ConsumerGroup] = v
	b, err := r.encodeLocked()
	if err != nil {
		return err
	}
	return compat.WriteConfigFile(r.path, b)
}

// replaceFromMaster makes the table the master's GET_ALL_MESSAGE_REQUEST_MODE
// answer (SlaveSynchronize.syncMessageRequestMode: topics the master lacks go,
// each other topic takes the master's groups) and writes the file.
func (r *requestModes) replaceFromMaster(body []byte) error {
	var f requestModesFile
	if err := codec.UnmarshalBody(body, &f); err != nil {
		return fmt.Errorf("decode master message request modes: %w", err)
	}
	if f.MessageRequestModeMap == nil {
		f.MessageRequestModeMap = map[string]map[string]requestModeBody{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m = f.MessageRequestModeMap
	b, err := r.encodeLocked()
	if err != nil {
		return err
	}
	return compat.WriteConfigFile(r.path, b)
}

func (r *requestModes) encode() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.encodeLocked()
}

func (r *requestModes) encodeLocked() ([]byte, error) {
	b, err := codec.MarshalBody(requestModesFile{MessageRequestModeMap: r.m})
	if err != nil {
		return nil, fmt.Errorf("encode message request modes: %w", err)
	}
	return b, nil
}

// handleGetAllMessageRequestMode is GET_ALL_MESSAGE_REQUEST_MODE: the
// manager's JSON, as AdminBrokerProcessor answers it.
func (b *Broker) handleGetAllMessageRequestMode(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	body, err := b.requestModes.encode()
	if err != nil {
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// handleSetMessageRequestMode is SET_MESSAGE_REQUEST_MODE.
func (b *Broker) handleSetMessageRequestMode(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	v := requestModeBody{Mode: requestModePull}
	if err := codec.UnmarshalBody(req.Body, &v); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode SetMessageRequestModeRequestBody: "+err.Error()), nil
	}
	if v.Mode != requestModePull && v.Mode != requestModePop {
		return codec.NewResponse(req, codec.RespSystemError, "unknown message request mode "+v.Mode), nil
	}
	if strings.HasPrefix(v.Topic, RetryGroupTopicPrefix) {
		return codec.NewResponse(req, codec.RespNoPermission, "retry topic is not allowed to set mode"), nil
	}
	if _, ok := b.topics.Select(v.Topic); !ok {
		return codec.NewResponse(req, codec.RespTopicNotExist, "topic["+v.Topic+"] not exist"), nil
	}
	if _, ok := b.groups.Find(v.ConsumerGroup); !ok {
		return codec.NewResponse(req, codec.RespSubscriptionGroupNotExist, "subscription group does not exist"), nil
	}
	if err := b.requestModes.set(v); err != nil {
		b.log.Error("message request mode not persisted", "err", err)
		return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
	}
	b.log.Info("message request mode set", "topic", v.Topic, "group", v.ConsumerGroup, "mode", v.Mode,
		"popShareQueueNum", v.PopShareQueueNum, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// queryAssignmentBody is QueryAssignmentRequestBody.
type queryAssignmentBody struct {
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	StrategyName  string `json:"strategyName"`
	MessageModel  string `json:"messageModel"`
}

type assignedQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

type queueAssignment struct {
	MessageQueue assignedQueue `json:"messageQueue"`
	Mode         string        `json:"mode"`
}

// handleQueryAssignment is QUERY_ASSIGNMENT: the queues of topic this client
// owns under the group's request mode (POP by default shares every queue, as
// queue id -1), allocated with the client's strategy among the group's
// clients. A nil assignment set tells the client to keep what it has.
func (b *Broker) handleQueryAssignment(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var q queryAssignmentBody
	if err := codec.UnmarshalBody(req.Body, &q); err != nil {
		return codec.NewResponse(req, codec.RespSystemError, "decode QueryAssignmentRequestBody: "+err.Error()), nil
	}
	mode, ok := b.requestModes.get(q.Topic, q.ConsumerGroup)
	if !ok {
		mode = requestModeBody{Topic: q.Topic, ConsumerGroup: q.ConsumerGroup, Mode: b.conf().DefaultMessageRequestMode}
		if strings.HasPrefix(q.Topic, RetryGroupTopicPrefix) || mode.Mode == "" {
			mode.Mode = requestModePull // retry topics are always pulled
		}
		if mode.Mode == requestModePop {
			mode.PopShareQueueNum = b.conf().DefaultPopShareQueueNum
		}
	}
	mqs := b.loadBalance(ctx, q, mode)
	var body []byte
	if mqs == nil {
		body = []byte(`{}`)
	} else {
		out := struct {
			MessageQueueAssignments []queueAssignment `json:"messageQueueAssignments"`
		}{MessageQueueAssignments: make([]queueAssignment, 0, len(mqs))}
		for _, mq := range mqs {
			out.MessageQueueAssignments = append(out.MessageQueueAssignments, queueAssignment{MessageQueue: mq, Mode: mode.Mode})
		}
		var err error
		if body, err = codec.MarshalBody(out); err != nil {
			return codec.NewResponse(req, codec.RespSystemError, err.Error()), nil
		}
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

// loadBalance is QueryAssignmentProcessor.doLoadBalance; nil means "no valid
// answer" (unknown topic, strategy or group), an empty slice "own nothing".
func (b *Broker) loadBalance(ctx context.Context, q queryAssignmentBody, mode requestModeBody) []assignedQueue {
	var all []assignedQueue
	var err error
	if compat.IsLMQ(q.Topic) && q.MessageModel != "BROADCASTING" {
		// A light message queue has no route: its one queue is here (Java
		// answers so whether or not enableLmq is on).
		all = []assignedQueue{{Topic: q.Topic, BrokerName: b.conf().BrokerName, QueueID: store.LMQQueueID}}
	} else {
		all, err = b.subscribeQueues(ctx, q.Topic)
	}
	if err != nil {
		if !strings.HasPrefix(q.Topic, RetryGroupTopicPrefix) {
			b.log.Warn("QueryLoad: no assignment, topic route unavailable", "group", q.ConsumerGroup, "topic", q.Topic, "err", err)
		}
		return nil
	}
	if q.MessageModel == "BROADCASTING" || !b.conf().ServerLoadBalancerEnable {
		return all
	}
	cids := b.consumers.ClientIDs(q.ConsumerGroup)
	if len(cids) == 0 {
		b.log.Warn("QueryLoad: no assignment, no consumer of the group online", "group", q.ConsumerGroup, "topic", q.Topic)
		return nil
	}
	slices.Sort(cids)
	alloc, ok := allocateStrategies[q.StrategyName]
	if !ok {
		b.log.Warn("QueryLoad: unsupported strategy", "strategy", q.StrategyName, "remote", "")
		return nil
	}
	if mode.Mode != requestModePop {
		return alloc(q.ClientID, all, cids)
	}
	// allocate4Pop
	share := int(mode.PopShareQueueNum)
	switch {
	case share <= 0 || share >= len(cids)-1:
		out := make([]assignedQueue, len(all))
		for i, mq := range all {
			out[i] = assignedQueue{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: -1}
		}
		return out
	case len(cids) <= len(all):
		out := alloc(q.ClientID, all, cids)
		if i := slices.Index(cids, q.ClientID); i >= 0 {
			for range share {
				i = (i + 1) % len(cids)
				out = append(out, alloc(cids[i], all, cids)...)
			}
		}
		return out
	default:
		// More consumers than queues: each gets one, round robin.
		i := slices.Index(cids, q.ClientID)
		if i < 0 {
			return []assignedQueue{}
		}
		return []assignedQueue{all[i%len(all)]}
	}
}

// allocateStrategies are the AllocateMessageQueueStrategy names Java's
// processor registers; each returns a non-nil slice.
var allocateStrategies = map[string]func(cid string, all []assignedQueue, cids []string) []assignedQueue{
	"AVG":           allocateAveragely,
	"AVG_BY_CIRCLE": allocateByCircle,
}

// allocateAveragely is AllocateMessageQueueAveragely: contiguous blocks, the
// first len(all)%len(cids) clients one queue more.
func allocateAveragely(cid string, all []assignedQueue, cids []string) []assignedQueue {
	index := slices.Index(cids, cid)
	if index < 0 || len(all) == 0 {
		return []assignedQueue{}
	}
	n, k := len(all), len(cids)
	mod := n % k
	size := n / k
	switch {
	case n <= k:
		size = 1
	case mod > 0 && index < mod:
		size++
	}
	start := index*size + mod
	if mod > 0 && index < mod {
		start = index * size
	}
	out := []assignedQueue{}
	for i := 0; i < min(size, n-start); i++ {
		out = append(out, all[(start+i)%n])
	}
	return out
}

// allocateByCircle is AllocateMessageQueueAveragelyByCircle: queue i goes to
// client i % len(cids).
func allocateByCircle(cid string, all []assignedQueue, cids []string) []assignedQueue {
	index := slices.Index(cids, cid)
	out := []assignedQueue{}
	if index < 0 {
		return out
	}
	for i := index; i < len(all); i += len(cids) {
		out = append(out, all[i])
	}
	return out
}

// subscribeQueues is TopicRouteInfoManager.getTopicSubscribeInfo: the readable
// queues of topic on every broker, from the name servers' route, sorted as
// Java's MessageQueue.compareTo sorts them.
func (b *Broker) subscribeQueues(ctx context.Context, topic string) ([]assignedQueue, error) {
	addrs := b.nameServerAddrs()
	if b.ns == nil || len(addrs) == 0 {
		return nil, errors.New("no name server")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var lastErr error
	for _, addr := range addrs {
		req := codec.NewRequest(codec.ReqGetRouteinfoByTopic)
		req.Ext.Set("topic", topic)
		resp, err := b.ns.InvokeSync(ctx, addr, req)
		if err != nil {
			lastErr = err
			continue
		}
		if resp.Code != codec.RespSuccess {
			lastErr = fmt.Errorf("route of %s from %s: code %d %s", topic, addr, resp.Code, resp.Remark)
			continue
		}
		route, err := codec.DecodeTopicRouteData(bytes.Clone(resp.Body))
		if err != nil {
			lastErr = err
			continue
		}
		// The route is what any broker (or anyone) registered: its counts are
		// bounded here, each and in sum, before they become one entry per queue.
		var out []assignedQueue
		for _, qd := range route.QueueDatas {
			if qd.Perm&PermRead == 0 {
				continue
			}
			n := min(compat.ClampQueueNums(qd.ReadQueueNums), int32(compat.MaxQueueNums-len(out)))
			for i := range n {
				out = append(out, assignedQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
			}
		}
		slices.SortFunc(out, func(x, y assignedQueue) int {
			return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.QueueID, y.QueueID))
		})
		return out, nil
	}
	return nil, lastErr
}

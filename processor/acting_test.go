package processor

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/delivery"
	"rmqd/store"
)

// actingNS is the name servers and a master of another group ("broker-b" at
// b:10911) as one invoker: it lists the group members it is given, routes
// every topic to broker-a (this group) and broker-b, and keeps what it was
// sent.
type actingNS struct {
	t       *testing.T
	mu      sync.Mutex
	members map[int64]string
	sent    []*codec.RemotingCommand // decoded copies, in order
	// A slave at s:10911 answers these bodies by code (timer: these ext
	// fields), or fails while peerDown.
	peerBodies map[int32]string
	peerExt    map[string]string
	peerDown   bool
	// pullCode and pullBody answer PULL_MESSAGE (the escape bridge's read).
	pullCode int32
	pullBody []byte
	// haExt answers EXCHANGE_BROKER_HA_INFO from the master (not s:10911).
	haExt map[string]string
	// reviveSolo routes the revive topic to broker-a only (no other
	// group); peerCodes are the slave's (s:10911) answer codes by request code.
	reviveSolo bool
	peerCodes  map[int32]int32
}

func (n *actingNS) setMembers(m map[int64]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.members = m
}

func (n *actingNS) requests(code int32) []*codec.RemotingCommand {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*codec.RemotingCommand
	for _, r := range n.sent {
		if r.Code == code {
			out = append(out, r)
		}
	}
	return out
}

func (n *actingNS) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	// What went on the wire: typed headers become ext fields.
	frame := req.Encode(nil)
	d := new(codec.RemotingCommand)
	if err := codec.DecodeCommand(frame[4:], d); err != nil {
		return nil, err
	}
	d.Body = append([]byte(nil), d.Body...)
	d.Remark = addr // where it went
	n.mu.Lock()
	n.sent = append(n.sent, d)
	members := n.members
	peerBody, isPeerCode := n.peerBodies[req.Code]
	peerDown := n.peerDown
	solo := n.reviveSolo
	code, coded := n.peerCodes[req.Code]
	n.mu.Unlock()
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	if addr == "s:10911" {
		if peerDown {
			return nil, errors.New("connection refused")
		}
		if coded {
			return codec.NewResponse(req, code, "as told"), nil
		}
		require.True(n.t, isPeerCode || req.Code == codec.ReqGetTimerCheckPoint, "code %d to the slave", req.Code)
		resp.Body = []byte(peerBody)
		if req.Code == codec.ReqGetTimerCheckPoint {
			for k, v := range n.peerExt {
				resp.Ext.Set(k, v)
			}
		}
		return resp, nil
	}
	switch req.Code {
	case codec.ReqExchangeBrokerHaInfo:
		n.mu.Lock()
		for k, v := range n.haExt {
			resp.Ext.Set(k, v)
		}
		n.mu.Unlock()
	case codec.ReqPullMessage:
		n.mu.Lock()
		resp.Code, resp.Body = n.pullCode, n.pullBody
		n.mu.Unlock()
	case codec.ReqRegisterBroker:
		if m := members[0]; m != "" {
			resp.Ext.Set("masterAddr", m) // what a name server tells a slave
		}
	case codec.ReqGetBrokerMemberGroup:
		b := []byte(`{"brokerMemberGroup":{"brokerAddrs":`)
		b = codec.AppendJSONLongKeyMap(b, members, codec.AppendJSONString)
		resp.Body = append(b, `,"brokerName":"broker-a","cluster":"DefaultCluster"}}`...)
	case codec.ReqGetRouteinfoByTopic:
		topic, _ := req.Ext.Get("topic")
		route := codec.TopicRouteData{
			QueueDatas: []codec.QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
				{BrokerName: "broker-b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
			BrokerDatas: []*codec.BrokerData{
				{Cluster: "DefaultCluster", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "self:10911"}},
				{Cluster: "DefaultCluster", BrokerName: "broker-b", BrokerAddrs: map[int64]string{0: "b:10911"}}},
			FilterServerTable: map[string][]string{}}
		if solo && isReviveTopic(topic) {
			route.QueueDatas, route.BrokerDatas = route.QueueDatas[:1], route.BrokerDatas[:1]
		}
		require.NotEmpty(n.t, topic)
		resp.Body = route.AppendJSON(nil)
	}
	return resp, nil
}

// actingBroker starts a broker of group broker-a with enableSlaveActingMaster
// over a store that first takes what put writes (as a master), then becomes
// the broker's role.
func actingBroker(t *testing.T, id int64, ns *actingNS, mod func(*BrokerConfig), put func(st *store.DefaultStore)) *Broker {
	t.Helper()
	return actingBrokerPre(t, id, ns, mod, put, nil)
}

// actingBrokerPre is actingBroker with pre run on the broker before Start.
func actingBrokerPre(t *testing.T, id int64, ns *actingNS, mod func(*BrokerConfig), put func(st *store.DefaultStore),
	pre func(*Broker)) *Broker {
	t.Helper()
	cfg := testConfig(t)
	cfg.NamesrvAddr = "ns:9876"
	cfg.BrokerID = id
	cfg.EnableSlaveActingMaster = true
	cfg.SyncBrokerMemberGroupPeriod = 100
	cfg.TransactionCheckInterval = 200
	if id != 0 {
		cfg.Store.BrokerRole = RoleSlave
	}
	if mod != nil {
		mod(&cfg)
	}
	scfg := store.DefaultConfig()
	scfg.StorePathRootDir = cfg.Store.StorePathRootDir
	scfg.MappedFileSizeCommitLog = 1 << 20
	scfg.MappedFileSizeConsumeQueue = 20 * 1000
	st, err := store.Open(scfg, quietLog())
	require.NoError(t, err)
	require.NoError(t, st.Start())
	if put != nil {
		put(st)
	}
	require.NoError(t, st.SetRole(cfg.Store.BrokerRole))
	b, err := NewBroker(cfg, st, quietLog())
	require.NoError(t, err)
	b.SetNameServerInvoker(ns)
	if pre != nil {
		pre(b)
	}
	require.NoError(t, b.Start(context.Background()))
	t.Cleanup(func() {
		require.NoError(t, b.Shutdown())
		require.NoError(t, st.Shutdown())
	})
	return b
}

var actingHost = netip.MustParseAddrPort("127.0.0.1:5000")

// parkedDelay and parkedHalf are what a master wrote before it went away: a
// level-1 delayed message and a half message nobody settled.
func parkedDelay(t *testing.T, st *store.DefaultStore) {
	m := &codec.Message{Topic: "ActT", QueueID: 2, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
		StoreHost: actingHost, Body: []byte("delayed"),
		Properties: "DELAY\x011\x02UNIQ_KEY\x01D1\x02PGROUP\x01PG\x02"}
	delivery.ParkDelay(m, nil, 18)
	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
}

func parkedTimer(t *testing.T, st *store.DefaultStore) {
	at := time.Now().Add(1500 * time.Millisecond).UnixMilli()
	m := &codec.Message{Topic: "ActTm", QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
		StoreHost: actingHost, Body: []byte("timed"),
		Properties: codec.SetProperty("UNIQ_KEY\x01T1\x02", codec.PropTimerDeliverMs, fmt.Sprint(at))}
	require.True(t, delivery.ParkTimer(m, nil, 3*24*3600*1000))
	require.Equal(t, delivery.TopicTimer, m.Topic)
	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
}

func parkedHalf(t *testing.T, st *store.DefaultStore) {
	m := &codec.Message{Topic: TopicTransHalf, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
		StoreHost: actingHost, Body: []byte("half"),
		Properties: "PGROUP\x01PG\x02REAL_TOPIC\x01ActTx\x02REAL_QID\x011\x02TRAN_MSG\x01true\x02UNIQ_KEY\x01H1\x02"}
	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
}

// The lowest-id alive slave runs the master-only services while its master is
// gone and stops them when it is back (BrokerController.updateMinBroker,
// changeSpecialServiceStatus); what they put back goes to broker-b's master
// (EscapeBridge.putMessageToRemoteBroker): the due delayed message without
// DELAY, the half message as a prepared one.
func TestActingPrimeSlaveRunsServicesAndEscapes(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"}}
	b := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.EnableRemoteEscape = true }, func(st *store.DefaultStore) {
		parkedDelay(t, st)
		parkedHalf(t, st)
		parkedTimer(t, st)
	})
	require.Never(t, b.isSpecialServiceRunning, 1500*time.Millisecond, 50*time.Millisecond, "the master is alive")
	require.Empty(t, ns.requests(codec.ReqSendMessage))
	require.Equal(t, "m:10911", b.MasterAddr())

	ns.setMembers(map[int64]string{1: "127.0.0.1:10911"})
	require.Eventually(t, b.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond, "master gone: prime slave")
	require.EqualValues(t, 1, b.minBrokerIDInGroup())
	require.Empty(t, b.MasterAddr(), "no copying from the master that left")
	var sends []*codec.RemotingCommand
	require.Eventually(t, func() bool { sends = ns.requests(codec.ReqSendMessage); return len(sends) >= 3 },
		10*time.Second, 50*time.Millisecond)
	byTopic := map[string]*codec.RemotingCommand{}
	for _, s := range sends {
		require.Equal(t, "b:10911", s.Remark, "sent to the other group's master")
		topic, _ := s.Ext.Get("topic")
		byTopic[topic] = s
	}
	d := byTopic["ActT"]
	require.NotNil(t, d, "the delayed message escaped: %v", byTopic)
	require.Equal(t, "delayed", string(d.Body))
	props, _ := d.Ext.Get("properties")
	require.NotContains(t, props, "DELAY\x01", "due: the remote must not park it again")
	require.Contains(t, props, "UNIQ_KEY\x01D1")
	h := byTopic["ActTx"]
	require.NotNil(t, h, "the half message escaped: %v", byTopic)
	flag, _ := h.Ext.Get("sysFlag")
	require.Equal(t, "4", flag, "a prepared message")
	props, _ = h.Ext.Get("properties")
	require.NotContains(t, props, "REAL_TOPIC")
	require.Contains(t, props, "TRAN_MSG\x01true")
	group, _ := h.Ext.Get("producerGroup")
	require.Equal(t, "PG", group)
	tm := byTopic["ActTm"]
	require.NotNil(t, tm, "the timer message escaped: %v", byTopic)
	require.Equal(t, "timed", string(tm.Body))
	props, _ = tm.Ext.Get("properties")
	require.NotContains(t, props, codec.PropTimerDeliverMs+"\x01", "due: the remote must not park it again")
	require.EqualValues(t, 0, b.store.MaxOffsetInQueue("ActT", 2), "nothing written locally")

	ns.setMembers(map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"})
	require.Eventually(t, func() bool { return !b.isSpecialServiceRunning() }, 5*time.Second, 20*time.Millisecond,
		"master back: services stop")
	require.Equal(t, "m:10911", b.MasterAddr())
}

// What the escape bridge sends signs with innerClientAuthenticationCredentials,
// as Java's BrokerOuterAPI signs it: a remote master with ACL on takes it.
func TestActingEscapeSignsItsSends(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	actingBroker(t, 1, ns, func(c *BrokerConfig) {
		c.EnableRemoteEscape = true
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"innerpass"}`
	}, func(st *store.DefaultStore) { parkedDelay(t, st) })
	var sends []*codec.RemotingCommand
	require.Eventually(t, func() bool { sends = ns.requests(codec.ReqSendMessage); return len(sends) >= 1 },
		10*time.Second, 50*time.Millisecond)
	for _, s := range sends {
		ak, _ := s.Ext.Get("AccessKey")
		require.Equal(t, "inner", ak)
		sig, _ := s.Ext.Get("Signature")
		require.NotEmpty(t, sig)
	}
}

// Without enableRemoteEscape the prime slave runs the services but puts
// nothing anywhere: its store refuses, and the services keep the messages.
func TestActingWithoutRemoteEscapeSendsNothing(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911", 2: "c:10911"}}
	b := actingBroker(t, 1, ns, nil, func(st *store.DefaultStore) { parkedDelay(t, st) })
	require.Eventually(t, b.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	require.Empty(t, ns.requests(codec.ReqSendMessage))
	require.EqualValues(t, 0, b.schedule.Offset(1), "the delayed message is kept")
}

// A slave that is not the lowest id stays passive; a master runs the services
// from the start, registers with enableActingMaster and its heartbeat
// timeout, and sends the lite heartbeat (QUERY_DATA_VERSION, or
// BROKER_HEARTBEAT without compatibleWithOldNameSrv).
func TestActingRolesRegistrationAndHeartbeat(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "x:10911", 2: "127.0.0.1:10911"}}
	second := actingBroker(t, 2, ns, nil, nil)
	require.Never(t, second.isSpecialServiceRunning, 1500*time.Millisecond, 50*time.Millisecond)
	require.EqualValues(t, 1, second.minBrokerIDInGroup())

	ns2 := &actingNS{t: t, members: map[int64]string{0: "127.0.0.1:10911"}}
	m := actingBroker(t, 0, ns2, func(c *BrokerConfig) { c.BrokerNotActiveTimeoutMillis = 7000 }, nil)
	require.True(t, m.isSpecialServiceRunning())
	regs := ns2.requests(codec.ReqRegisterBroker)
	require.NotEmpty(t, regs)
	v, _ := regs[0].Ext.Get("enableActingMaster")
	require.Equal(t, "true", v)
	v, _ = regs[0].Ext.Get("heartbeatTimeoutMillis")
	require.Equal(t, "7000", v)
	require.Eventually(t, func() bool { return len(ns2.requests(codec.ReqQueryDataVersion)) > 0 }, 5*time.Second,
		20*time.Millisecond)
	hb := ns2.requests(codec.ReqQueryDataVersion)[0]
	require.Contains(t, string(hb.Body), `"counter"`)

	ns3 := &actingNS{t: t, members: map[int64]string{0: "127.0.0.1:10911"}}
	actingBroker(t, 0, ns3, func(c *BrokerConfig) { c.CompatibleWithOldNameSrv = false }, nil)
	require.Eventually(t, func() bool { return len(ns3.requests(codec.ReqBrokerHeartbeat)) > 0 }, 5*time.Second,
		20*time.Millisecond)
	require.Empty(t, ns3.requests(codec.ReqQueryDataVersion))

	// Without the key: no acting fields, the services as before.
	ns4 := &actingNS{t: t}
	actingBroker(t, 0, ns4, func(c *BrokerConfig) { c.EnableSlaveActingMaster = false }, nil)
	regs = ns4.requests(codec.ReqRegisterBroker)
	require.NotEmpty(t, regs)
	v, _ = regs[0].Ext.Get("enableActingMaster")
	require.Equal(t, "false", v)
	_, set := regs[0].Ext.Get("heartbeatTimeoutMillis")
	require.False(t, set)
}

// NOTIFY_MIN_BROKER_ID_CHANGE (905) moves the role at once: the named slave
// takes over; the master's return stops it and gives the HA client the
// master's address.
func TestActingNotifyMinBrokerIDChange(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"}}
	b := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.SyncBrokerMemberGroupPeriod = 3600_000 }, nil)
	var ha []string
	var mu sync.Mutex
	b.OnMasterHAAddr(func(a string) { mu.Lock(); ha = append(ha, a); mu.Unlock() })
	notify := func(id int64, addr, offline, haAddr string) {
		req := codec.NewRequest(codec.ReqNotifyMinBrokerIdChange)
		req.Ext.SetInt64("minBrokerId", id)
		req.Ext.Set("minBrokerAddr", addr)
		if offline != "" {
			req.Ext.Set("offlineBrokerAddr", offline)
		}
		if haAddr != "" {
			req.Ext.Set("haBrokerAddr", haAddr)
		}
		resp, err := b.handleNotifyMinBrokerIDChange(context.Background(), newTestConn(1), req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	notify(1, "127.0.0.1:10911", "m:10911", "")
	require.True(t, b.isSpecialServiceRunning())
	notify(0, "m:10911", "", "m:10912")
	require.False(t, b.isSpecialServiceRunning())
	require.Equal(t, "m:10911", b.MasterAddr())
	mu.Lock()
	require.Equal(t, []string{"m:10912"}, ha)
	mu.Unlock()

	req := codec.NewRequest(codec.ReqNotifyMinBrokerIdChange)
	resp, err := b.handleNotifyMinBrokerIDChange(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code, "minBrokerId is required")
}

// The escaped form of each kind of put-back.
func TestEscapedForm(t *testing.T) {
	b := newTestBroker(t, nil)
	roll := &codec.Message{Topic: delivery.TopicTimer, Properties: "REAL_TOPIC\x01T\x02REAL_QID\x013\x02TIMER_OUT_MS\x01" +
		"1700000000000\x02TIMER_ROLL_TIMES\x011\x02"}
	out, ok := b.escapedForm(roll)
	require.True(t, ok)
	require.Equal(t, "T", out.Topic)
	require.EqualValues(t, 3, out.QueueID)
	v, _ := codec.PropertyValue(out.Properties, codec.PropTimerDeliverMs)
	require.Equal(t, "1700000000000", v, "the remote parks it for the same time")
	for _, p := range []string{codec.PropTimerOutMs, codec.PropRealTopic, codec.PropRealQueueID} {
		_, has := codec.PropertyValue(out.Properties, p)
		require.False(t, has, p)
	}
	// A POP checkpoint or ack parked by this broker: parked by the remote.
	revive := &codec.Message{Topic: delivery.TopicTimer, Properties: "REAL_TOPIC\x01rmq_sys_REVIVE_LOG_DefaultCluster\x02" +
		"REAL_QID\x010\x02TIMER_OUT_MS\x011\x02TAGS\x01ck\x02"}
	out, ok = b.escapedForm(revive)
	require.True(t, ok)
	require.Equal(t, "rmq_sys_REVIVE_LOG_DefaultCluster", out.Topic)
	require.Equal(t, "TAGS\x01ck\x02TIMER_DELIVER_MS\x011\x02", out.Properties)
	// One the timer delivers, due: stored as the remote's timer would.
	dueRevive := &codec.Message{Topic: "rmq_sys_REVIVE_LOG_DefaultCluster", Properties: "TAGS\x01ack\x02TIMER_DELIVER_MS\x015\x02" +
		"TIMER_OUT_MS\x015\x02"}
	out, ok = b.escapedForm(dueRevive)
	require.True(t, ok)
	require.Equal(t, dueRevive.Properties, out.Properties)
	due := &codec.Message{Topic: "T", Properties: "DELAY\x013\x02TIMER_DELIVER_MS\x015\x02KEYS\x01k\x02"}
	out, ok = b.escapedForm(due)
	require.True(t, ok)
	require.Equal(t, "KEYS\x01k\x02", out.Properties)
	require.Equal(t, "DELAY\x013\x02TIMER_DELIVER_MS\x015\x02KEYS\x01k\x02", due.Properties, "the original is untouched")
}

// The requests clients send only to brokerId 0, which the name server's
// acting view sends to the prime slave, are answered there as on a master
// (Java answers them from any role); END_TRANSACTION stays refused, as Java's
// EndTransactionProcessor refuses it on a slave (its checker hands half
// messages on instead).
func TestActingPrimeSlaveAnswersMasterOnlyRequests(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	b := actingBroker(t, 1, ns, nil, func(st *store.DefaultStore) {
		m := &codec.Message{Topic: "ActQ", QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
			StoreHost: actingHost, Body: []byte("x")}
		require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
	})
	require.Eventually(t, b.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	h := b.Handlers()
	for _, code := range []int32{codec.ReqGetMaxOffset, codec.ReqGetMinOffset, codec.ReqSearchOffsetByTimestamp,
		codec.ReqGetEarliestMsgStoretime} {
		req := codec.NewRequest(code)
		req.Ext.Set("topic", "ActQ")
		req.Ext.Set("queueId", "0")
		req.Ext.Set("timestamp", "0")
		resp, err := h[code].ProcessRequest(context.Background(), newTestConn(1), req)
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, "code %d: %s", code, resp.Remark)
	}
	resp, err := h[codec.ReqGetMaxOffset].ProcessRequest(context.Background(), newTestConn(1), func() *codec.RemotingCommand {
		req := codec.NewRequest(codec.ReqGetMaxOffset)
		req.Ext.Set("topic", "ActQ")
		req.Ext.Set("queueId", "0")
		return req
	}())
	require.NoError(t, err)
	require.Equal(t, "1", ext(t, resp, "offset"))
	require.Equal(t, []int32{0}, lockedQueues(t, &testBroker{Broker: b}, lockReq(t, codec.ReqLockBatchMq, "A", false, 0)))
	end := codec.NewRequest(codec.ReqEndTransaction)
	resp, err = h[codec.ReqEndTransaction].ProcessRequest(context.Background(), newTestConn(1), end)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSlaveNotAvailable, resp.Code)
}

// Pre-online (BrokerPreOnlineService): a master of a group with
// totalReplicas=2 stays isolated (no registration, no heartbeat, no
// services) until it took from its alive slave the consumer offsets, delay
// offsets and timer progress ahead of its own, then starts.
func TestActingMasterPreOnline(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "s:10911"}, peerDown: true,
		peerBodies: map[int32]string{
			codec.ReqGetAllConsumerOffset: `{"offsetTable":{"T@G":{0:9,1:3},"T2@G":{0:4}}}`,
			codec.ReqGetAllDelayOffset:    `{"offsetTable":{1:4,2:1}}`,
			codec.ReqExchangeBrokerHaInfo: "",
		},
		peerExt: map[string]string{extTimerQueueOffset: "12", extTimerReadOffset: "15", extTimerDeliveredBefore: "1700000000000"}}
	m := actingBroker(t, 0, ns, func(c *BrokerConfig) { c.TotalReplicas = 2 }, nil)
	m.offsets.Commit("G", "T", 0, 5)
	m.offsets.Commit("G", "T", 1, 7)
	_, err := m.schedule.MergeAhead([]byte(`{"offsetTable":{1:2,2:6}}`)) // the master's own
	require.NoError(t, err)

	require.Never(t, m.isSpecialServiceRunning, 1500*time.Millisecond, 50*time.Millisecond, "isolated")
	require.Empty(t, ns.requests(codec.ReqRegisterBroker))
	require.Empty(t, ns.requests(codec.ReqQueryDataVersion))

	ns.mu.Lock()
	ns.peerDown = false
	ns.mu.Unlock()
	require.Eventually(t, m.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqRegisterBroker)) > 0 }, 5*time.Second,
		20*time.Millisecond)
	require.EqualValues(t, 9, m.offsets.Query("G", "T", 0), "the slave's, ahead")
	require.EqualValues(t, 7, m.offsets.Query("G", "T", 1), "the master's, ahead")
	require.EqualValues(t, 4, m.offsets.Query("G", "T2", 0), "the slave's, new")
	require.EqualValues(t, 4, m.schedule.Offset(1))
	require.EqualValues(t, 6, m.schedule.Offset(2))
	require.Eventually(t, func() bool { s, ok := m.timer.ProgressNow(); return ok && s.QueueOffset == 12 },
		5*time.Second, 20*time.Millisecond, "the wheel starts from the slave's progress")
	hi := ns.requests(codec.ReqExchangeBrokerHaInfo)
	require.NotEmpty(t, hi, "the slave is told the master's HA address first")
	v, _ := hi[0].Ext.Get("masterHaAddress")
	require.Equal(t, m.haServerAddr(), v)
	v, _ = hi[0].Ext.Get("masterAddress")
	require.Equal(t, "127.0.0.1:10911", v)
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqQueryDataVersion)) > 0 }, 5*time.Second,
		20*time.Millisecond, "heartbeats once online")
}

// skipPreOnline starts a master at once, as without totalReplicas above 1.
func TestActingMasterSkipPreOnline(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "s:10911"}, peerDown: true}
	m := actingBroker(t, 0, ns, func(c *BrokerConfig) { c.TotalReplicas = 2; c.SkipPreOnline = true }, nil)
	require.True(t, m.isSpecialServiceRunning())
	require.NotEmpty(t, ns.requests(codec.ReqRegisterBroker))
}

// EXCHANGE_BROKER_HA_INFO (906): a slave takes the master's addresses; a
// master asked without them answers its own.
func TestActingExchangeBrokerHaInfo(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"}}
	s := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.SyncBrokerMemberGroupPeriod = 3600_000 }, nil)
	var ha []string
	var mu sync.Mutex
	s.OnMasterHAAddr(func(a string) { mu.Lock(); ha = append(ha, a); mu.Unlock() })
	req := codec.NewRequest(codec.ReqExchangeBrokerHaInfo)
	req.Ext.Set("masterHaAddress", "m:10912")
	req.Ext.Set("masterAddress", "m2:10911")
	req.Ext.SetInt64("masterFlushOffset", 100)
	resp, err := s.handleExchangeBrokerHaInfo(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, "m2:10911", s.MasterAddr())
	mu.Lock()
	require.Equal(t, []string{"m:10912"}, ha)
	mu.Unlock()

	m := actingBroker(t, 0, &actingNS{t: t, members: map[int64]string{0: "127.0.0.1:10911"}}, nil, nil)
	resp, err = m.handleExchangeBrokerHaInfo(context.Background(), newTestConn(1), codec.NewRequest(codec.ReqExchangeBrokerHaInfo))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, m.haServerAddr(), ext(t, resp, "masterHaAddress"))
	require.Equal(t, "127.0.0.1:10911", ext(t, resp, "masterAddress"))
	require.Equal(t, "0", ext(t, resp, "masterFlushOffset"), "an empty store's end at start")
}

// RESET_MASTER_FLUSH_OFFSET (908): a slave keeps the offset in its store's
// checkpoint, a master takes the request and keeps nothing; both SUCCESS, and a
// slave asked without the @CFNotNull field answers SYSTEM_ERROR, as Java's
// header decode fails.
func TestResetMasterFlushOffset(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"}}
	s := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.SyncBrokerMemberGroupPeriod = 3600_000 }, nil)
	req := codec.NewRequest(codec.ReqResetMasterFlushOffset)
	req.Ext.SetInt64("masterFlushOffset", 4096)
	resp, err := s.handleResetMasterFlushOffset(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.EqualValues(t, 4096, s.store.(*store.DefaultStore).MasterFlushedOffset())
	resp, err = s.handleResetMasterFlushOffset(context.Background(), newTestConn(1), codec.NewRequest(codec.ReqResetMasterFlushOffset))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSystemError, resp.Code)

	m := actingBroker(t, 0, &actingNS{t: t, members: map[int64]string{0: "127.0.0.1:10911"}}, nil, nil)
	resp, err = m.handleResetMasterFlushOffset(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Zero(t, m.store.(*store.DefaultStore).MasterFlushedOffset())
}

// parkedRevive is a POP checkpoint record the master parked in the timer
// before it went away, due in about a second.
func parkedRevive(t *testing.T, st *store.DefaultStore) {
	parkedReviveAt(t, st, netip.MustParseAddrPort("127.0.0.1:10911")) // the broker's store host: popRevive trusts it
}

// parkedReviveAt is parkedRevive written by the broker at host (a slave's
// master: born where stored).
func parkedReviveAt(t *testing.T, st *store.DefaultStore, self netip.AddrPort) {
	at := time.Now().Add(1200 * time.Millisecond).UnixMilli()
	m := &codec.Message{Topic: "rmq_sys_REVIVE_LOG_DefaultCluster", QueueID: 0, BornTimestamp: time.Now().UnixMilli(),
		BornHost: self, StoreHost: self, Body: []byte(`{"bm":0,"c":"G","n":1,"pt":1,"q":0,"so":0,"t":"T"}`),
		Properties: codec.SetProperty("TAGS\x01ck\x02UNIQ_KEY\x01R1\x02", codec.PropTimerDeliverMs, fmt.Sprint(at))}
	require.True(t, delivery.ParkTimer(m, nil, 3*24*3600*1000))
	require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
}

// A revive record the acting slave's timer delivers, with no other group's
// master to send it to (Java would drop it), cannot go into the slave's
// store: it stays pending in the wheel, so the timer progress the returning
// master adopts (pre-online) does not pass it and the master delivers it.
// Dropped, the master would skip it with the slave's progress and the
// checkpoint's messages would never be revived.
func TestActingSlaveKeepsReviveRecordsPending(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}, reviveSolo: true}
	b := actingBroker(t, 1, ns, func(c *BrokerConfig) { c.EnableRemoteEscape = true }, func(st *store.DefaultStore) {
		parkedRevive(t, st)
		parkedTimer(t, st)
	})
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqSendMessage)) >= 1 }, 10*time.Second,
		50*time.Millisecond, "the timer message behind the revive record escapes")
	for _, s := range ns.requests(codec.ReqSendMessage) {
		topic, _ := s.Ext.Get("topic")
		require.Equal(t, "ActTm", topic)
	}
	require.Never(t, func() bool { s, _ := b.timer.ProgressNow(); return s.QueueOffset > 0 }, 1500*time.Millisecond,
		50*time.Millisecond, "the revive record (queue offset 0) is not delivered")
	s, ok := b.timer.ProgressNow()
	require.True(t, ok)
	require.Less(t, s.DeliveredBeforeMs, time.Now().UnixMilli()-100, "nor claimed delivered by time")
}

// The escape bridge's read of another group's message
// (EscapeBridge.getMessageFromRemote): a PULL of one message from offset with
// the inner consumer group, to the master the route names for that group;
// Java's needRetry for a failure to ask, none for an answer without it.
func TestEscapeGetMessageFromRemote(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "127.0.0.1:10911"}}
	b := actingBroker(t, 0, ns, nil, nil)
	m := &codec.Message{Topic: "T", QueueID: 2, Body: []byte("theirs"), BornHost: actingHost, StoreHost: actingHost,
		BornTimestamp: time.Now().UnixMilli(), Properties: "UNIQ_KEY\x01U\x02"}
	rec := make([]byte, codec.RecordSize(m))
	require.Equal(t, len(rec), codec.EncodeRecord(rec, m))
	ns.mu.Lock()
	ns.pullCode, ns.pullBody = codec.RespSuccess, append(rec, rec...) // a master may answer more than asked
	ns.mu.Unlock()
	got, retry := b.getMessageFromRemote(context.Background(), "broker-b", "T", 2, 7)
	require.False(t, retry)
	require.Equal(t, rec, got)
	pulls := ns.requests(codec.ReqPullMessage)
	require.Len(t, pulls, 1)
	p := pulls[0]
	require.Equal(t, "b:10911", p.Remark, "the group's master in the route")
	for k, v := range map[string]string{"consumerGroup": "InnerConsumerGroup_broker-a_0", "topic": "T", "queueId": "2",
		"queueOffset": "7", "maxMsgNums": "1", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "expressionType": "TAG", "maxMsgBytes": "2147483647", "bname": "broker-b"} {
		require.Equal(t, v, ext(t, p, k), k)
	}

	ns.mu.Lock()
	ns.pullCode, ns.pullBody = codec.RespPullOffsetMoved, nil
	ns.mu.Unlock()
	got, retry = b.getMessageFromRemote(context.Background(), "broker-b", "T", 2, 7)
	require.Nil(t, got)
	require.False(t, retry, "answered: not there")

	ns.mu.Lock()
	ns.pullCode = codec.RespNoPermission
	ns.mu.Unlock()
	_, retry = b.getMessageFromRemote(context.Background(), "broker-b", "T", 2, 7)
	require.True(t, retry, "refused: asked again later")
	_, retry = b.getMessageFromRemote(context.Background(), "broker-x", "T", 2, 7)
	require.True(t, retry, "no such group in the route")
}

// fakeTransfer is the HA service's Transferring: ok once set; asked lists
// the hosts asked about.
type fakeTransfer struct {
	ok    atomic.Bool
	mu    sync.Mutex
	asked []string
}

func (f *fakeTransfer) Transferring(host string) bool {
	f.mu.Lock()
	f.asked = append(f.asked, host)
	f.mu.Unlock()
	return f.ok.Load()
}

// Pre-online waits, after telling a slave the master's HA address, until the
// slave's HA connection transfers (BrokerPreOnlineService's
// waitForHaHandshakeComplete) before its reverse sync; a wait that runs out
// fails the round, tried again a second later; the master stays isolated
// meanwhile.
func TestActingMasterPreOnlineWaitsForHA(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "s:10911"},
		peerBodies: map[int32]string{
			codec.ReqGetAllConsumerOffset: `{"offsetTable":{"T@G":{0:9}}}`,
			codec.ReqGetAllDelayOffset:    `{"offsetTable":{}}`,
			codec.ReqExchangeBrokerHaInfo: "",
		}}
	ha := &fakeTransfer{}
	m := actingBrokerPre(t, 0, ns, func(c *BrokerConfig) { c.TotalReplicas = 2 }, nil, func(b *Broker) {
		b.acting.haWait.Store(int64(300 * time.Millisecond))
		b.SetHATransfer(ha)
	})

	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqExchangeBrokerHaInfo)) >= 2 }, 5*time.Second,
		20*time.Millisecond, "rounds fail on the wait and are tried again")
	require.False(t, m.isSpecialServiceRunning(), "isolated")
	require.Empty(t, ns.requests(codec.ReqGetAllConsumerOffset), "no reverse sync before the HA connection")
	require.Empty(t, ns.requests(codec.ReqRegisterBroker))
	ha.mu.Lock()
	require.Contains(t, ha.asked, "s:10911")
	ha.mu.Unlock()

	ha.ok.Store(true)
	require.Eventually(t, m.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqRegisterBroker)) > 0 }, 5*time.Second,
		20*time.Millisecond)
	require.EqualValues(t, 9, m.offsets.Query("G", "T", 0))
}

// A slave of a group with totalReplicas above 1 starts isolated
// (BrokerPreOnlineService.prepareForSlaveOnline): with its master alive it
// asks the master's HA address (EXCHANGE_BROKER_HA_INFO), gives it to its HA
// client and registers only once that client transfers; with the master gone
// it starts at once, acting if its id is the lowest.
func TestActingSlavePreOnlineWaitsForHA(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"},
		haExt: map[string]string{"masterHaAddress": "m:10912", "masterAddress": "m:10911", "masterFlushOffset": "0"}}
	ha := &fakeTransfer{}
	var mu sync.Mutex
	var haAddrs []string
	s := actingBrokerPre(t, 1, ns, func(c *BrokerConfig) { c.TotalReplicas = 2 }, nil, func(b *Broker) {
		b.acting.haWait.Store(int64(300 * time.Millisecond))
		b.SetHATransfer(ha)
		b.OnMasterHAAddr(func(a string) { mu.Lock(); haAddrs = append(haAddrs, a); mu.Unlock() })
	})
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqExchangeBrokerHaInfo)) >= 2 }, 5*time.Second,
		20*time.Millisecond, "rounds fail on the wait and are tried again")
	for _, r := range ns.requests(codec.ReqExchangeBrokerHaInfo) {
		require.Equal(t, "m:10911", r.Remark, "asked of the master")
		_, set := r.Ext.Get("masterHaAddress")
		require.False(t, set, "a question, not the master's notice")
	}
	require.Empty(t, ns.requests(codec.ReqRegisterBroker), "isolated")
	require.Empty(t, ns.requests(codec.ReqQueryDataVersion))
	require.Equal(t, "m:10911", s.MasterAddr())
	mu.Lock()
	require.Contains(t, haAddrs, "m:10912", "the HA client follows the master's address")
	mu.Unlock()

	ha.ok.Store(true)
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqRegisterBroker)) > 0 }, 5*time.Second,
		20*time.Millisecond)
	require.False(t, s.isSpecialServiceRunning(), "its master is alive")
	require.EqualValues(t, 0, s.minBrokerIDInGroup())

	// The master gone: the slave starts at once, as the prime slave.
	ns2 := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911", 2: "c:10911"}}
	s2 := actingBrokerPre(t, 1, ns2, func(c *BrokerConfig) { c.TotalReplicas = 2 }, nil,
		func(b *Broker) { b.SetHATransfer(&fakeTransfer{}) })
	require.Eventually(t, s2.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	require.Empty(t, ns2.requests(codec.ReqExchangeBrokerHaInfo))
	require.Eventually(t, func() bool { return len(ns2.requests(codec.ReqRegisterBroker)) > 0 }, 5*time.Second,
		20*time.Millisecond)
}

// POP revive on the prime slave (PopReviveService with
// isSpecialServiceRunning): a checkpoint its master wrote before it went
// away is read from the slave's copy of the revive queue, its message from
// the slave's own copy of the commitlog (the checkpoint names this group),
// and the revived message escapes to the retry topic on another group's
// master; the revive progress moves past it.
func TestActingPrimeSlaveRevivesThroughTheEscapeBridge(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	past := time.Now().UnixMilli() - 60_000
	rt := "rmq_sys_REVIVE_LOG_DefaultCluster"
	b := actingBrokerPre(t, 1, ns, func(c *BrokerConfig) { c.EnableRemoteEscape = true }, func(st *store.DefaultStore) {
		m := &codec.Message{Topic: "PopT", QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
			StoreHost: actingHost, Body: []byte("popped"), Properties: "UNIQ_KEY\x01P1\x02"}
		require.Equal(t, store.PutOK, st.PutMessage(context.Background(), m).Status)
		ck := fmt.Sprintf(`{"bm":0,"bn":"broker-a","c":"PopG","d":[0],"it":1000,"n":1,"pt":%d,"q":0,"so":0,"t":"PopT"}`, past)
		r := &codec.Message{Topic: rt, QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: actingHost,
			StoreHost: actingHost, Body: []byte(ck),
			Properties: codec.SetProperty("TAGS\x01ck\x02UNIQ_KEY\x01C1\x02", codec.PropTimerDeliverMs, fmt.Sprint(past))}
		require.Equal(t, store.PutOK, st.PutMessage(context.Background(), r).Status)
	}, func(b *Broker) { b.topics.Update(NewTopicConfig("PopT")) })
	require.Eventually(t, b.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	var sent *codec.RemotingCommand
	require.Eventually(t, func() bool {
		for _, s := range ns.requests(codec.ReqSendMessage) {
			if topic, _ := s.Ext.Get("topic"); topic == "%RETRY%PopG_PopT" {
				sent = s
				return true
			}
		}
		return false
	}, 15*time.Second, 50*time.Millisecond, "the revived message escapes")
	require.Equal(t, "b:10911", sent.Remark)
	require.Equal(t, "popped", string(sent.Body))
	require.Equal(t, "1", ext(t, sent, "reconsumeTimes"))
	require.Eventually(t, func() bool { return b.offsets.Query("CID_RMQ_SYS_REVIVE_GROUP", rt, 0) == 0 }, 5*time.Second,
		20*time.Millisecond, "the revive progress passes the checkpoint")
	require.Empty(t, ns.requests(codec.ReqPullMessage), "read locally: the checkpoint names this group")
}

// An acting slave does not copy its master's tables (a returning master's
// EXCHANGE_BROKER_HA_INFO wakes the copy): its delay and consumer offsets are
// the newer ones, which the master takes back in pre-online. Copied first,
// they went back and the master delivered a delayed message again
// (integration TestActingMasterDelayedMessage, once pre-online waited for the
// HA connection).
func TestActingSlaveDoesNotCopyFromItsMasterWhileActing(t *testing.T) {
	ns := &actingNS{t: t, members: map[int64]string{1: "127.0.0.1:10911"}}
	s := actingBroker(t, 1, ns, nil, nil)
	require.Eventually(t, s.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	req := codec.NewRequest(codec.ReqExchangeBrokerHaInfo)
	req.Ext.Set("masterHaAddress", "m:10912")
	req.Ext.Set("masterAddress", "m:10911")
	resp, err := s.handleExchangeBrokerHaInfo(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Never(t, func() bool { return len(ns.requests(codec.ReqGetAllDelayOffset)) > 0 }, 1500*time.Millisecond,
		50*time.Millisecond, "no copy while acting")

	ns.setMembers(map[int64]string{0: "m:10911", 1: "127.0.0.1:10911"})
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqGetAllDelayOffset)) > 0 }, 5*time.Second,
		20*time.Millisecond, "the master back in the group: the slave copies from it again")
}

// EXCHANGE_BROKER_HA_INFO (906) refused by a slave fails the master's
// pre-online round, as in Java (the round is tried again); a slave that does
// not know the code is only logged and not waited for, so an older broker
// does not keep the master offline.
func TestActingMasterPreOnlineExchangeRefused(t *testing.T) {
	bodies := map[int32]string{codec.ReqGetAllConsumerOffset: `{"offsetTable":{}}`,
		codec.ReqGetAllDelayOffset: `{"offsetTable":{}}`, codec.ReqExchangeBrokerHaInfo: ""}
	ns := &actingNS{t: t, members: map[int64]string{1: "s:10911"}, peerBodies: bodies,
		peerCodes: map[int32]int32{codec.ReqExchangeBrokerHaInfo: codec.RespSystemError}}
	m := actingBroker(t, 0, ns, func(c *BrokerConfig) { c.TotalReplicas = 2 }, nil)
	require.Eventually(t, func() bool { return len(ns.requests(codec.ReqExchangeBrokerHaInfo)) >= 2 }, 5*time.Second,
		20*time.Millisecond, "the round fails and is tried again")
	require.False(t, m.isSpecialServiceRunning())
	require.Empty(t, ns.requests(codec.ReqGetAllConsumerOffset))
	require.Empty(t, ns.requests(codec.ReqRegisterBroker))

	ns.mu.Lock()
	ns.peerCodes[codec.ReqExchangeBrokerHaInfo] = codec.RespRequestCodeNotSupported
	ns.mu.Unlock()
	require.Eventually(t, m.isSpecialServiceRunning, 5*time.Second, 20*time.Millisecond)
	require.NotEmpty(t, ns.requests(codec.ReqGetAllConsumerOffset), "the reverse sync all the same")
}

package processor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// peerRouter is the name server and the group's other brokers as one
// NameServerInvoker: GET_BROKER_MEMBER_GROUP lists the group (in fastjson's
// bare-key form), a lock request to a peer runs that broker's handler, and a
// peer marked down fails.
type peerRouter struct {
	t     *testing.T
	peers map[string]*testBroker
	mu    sync.Mutex
	down  map[string]bool
	calls map[int32]int
	// unsigned counts requests that came without an AccessKey.
	unsigned int
}

func (r *peerRouter) InvokeSync(ctx context.Context, addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	r.mu.Lock()
	r.calls[req.Code]++
	down := r.down[addr]
	if _, ok := req.Ext.Get("AccessKey"); !ok {
		r.unsigned++
	}
	r.mu.Unlock()
	if req.Code == codec.ReqGetBrokerMemberGroup {
		if down {
			return nil, errors.New("connection refused")
		}
		name, _ := req.Ext.Get("brokerName")
		require.Equal(r.t, "broker-a", name)
		resp := codec.NewResponse(req, codec.RespSuccess, "")
		resp.Body = []byte(`{"brokerMemberGroup":{"brokerAddrs":{0:"a:10911",1:"b:10911",2:"c:10911"},` +
			`"brokerName":"broker-a","cluster":"DefaultCluster"}}`)
		return resp, nil
	}
	if req.Code != codec.ReqLockBatchMq && req.Code != codec.ReqUnlockBatchMq {
		return codec.NewResponse(req, codec.RespSuccess, ""), nil // the name server's UNREGISTER_BROKER at cleanup
	}
	if down {
		return nil, errors.New("connection refused")
	}
	p := r.peers[addr]
	require.NotNil(r.t, p, addr)
	body, err := codec.DecodeLockBatchRequestBody(req.Body)
	require.NoError(r.t, err)
	require.True(r.t, body.OnlyThisBroker, "a peer is asked for its own lock only")
	if p.auth != nil { // the peer's ACL 2.0 hook, as its server runs it
		if resp := p.auth.Hook().Before(newTestConn(2), req); resp != nil {
			return resp, nil
		}
	}
	if req.Code == codec.ReqUnlockBatchMq {
		return p.handleUnlockBatchMQ(ctx, newTestConn(2), req)
	}
	return p.handleLockBatchMQ(ctx, newTestConn(2), req)
}

func lockReq(t *testing.T, code int32, client string, only bool, queues ...int32) *codec.RemotingCommand {
	t.Helper()
	body := codec.LockBatchRequestBody{ClientID: client, ConsumerGroup: "SG", OnlyThisBroker: only}
	for _, q := range queues {
		body.MQSet = append(body.MQSet, codec.MessageQueue{BrokerName: "broker-a", QueueID: q, Topic: "ST"})
	}
	data, err := json.Marshal(body)
	require.NoError(t, err)
	req := codec.NewRequest(code)
	req.Body = data
	return req
}

func lockedQueues(t *testing.T, b *testBroker, req *codec.RemotingCommand) []int32 {
	t.Helper()
	resp, err := b.handleLockBatchMQ(context.Background(), newTestConn(1), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	var r codec.LockBatchResponseBody
	require.NoError(t, json.Unmarshal(resp.Body, &r))
	var out []int32
	for _, mq := range r.LockOKMQSet {
		out = append(out, mq.QueueID)
	}
	slices.Sort(out)
	return out
}

// With lockInStrictMode and totalReplicas=3 a queue is granted only when two
// of the group's three brokers lock it (AdminBrokerProcessor.lockBatchMQ), and
// an unlock reaches the others.
func TestLockInStrictModeTakesAQuorum(t *testing.T) {
	strict := func(c *BrokerConfig) {
		c.NamesrvAddr = "ns:9876"
		_, err := c.ApplyProperties(map[string]string{"lockInStrictMode": "true", "totalReplicas": "3"})
		require.NoError(t, err)
	}
	a := newTestBroker(t, strict)
	r := &peerRouter{t: t, peers: map[string]*testBroker{"b:10911": newTestBroker(t, strict),
		"c:10911": newTestBroker(t, strict)}, down: map[string]bool{}, calls: map[int32]int{}}
	a.SetNameServerInvoker(r)
	b := r.peers["b:10911"]

	require.Equal(t, []int32{0}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 0)))
	require.Empty(t, lockedQueues(t, b, lockReq(t, codec.ReqLockBatchMq, "X", true, 0)), "the peer holds A's lock")

	// X holds queue 1 on b, c is down: a's own grant is one vote of two.
	require.Equal(t, []int32{1}, lockedQueues(t, b, lockReq(t, codec.ReqLockBatchMq, "X", true, 1)))
	r.mu.Lock()
	r.down["c:10911"] = true
	r.mu.Unlock()
	require.Equal(t, []int32{2}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 1, 2)),
		"queue 2: a and b; queue 1: a alone")

	// An unlock on a releases A's queues on b too.
	resp, err := a.handleUnlockBatchMQ(context.Background(), newTestConn(1), lockReq(t, codec.ReqUnlockBatchMq, "A", false, 0, 2))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	require.Equal(t, []int32{0, 2}, lockedQueues(t, b, lockReq(t, codec.ReqLockBatchMq, "Y", true, 0, 2)))

	// onlyThisBroker, or strict mode off, asks nobody.
	r.mu.Lock()
	before := r.calls[codec.ReqLockBatchMq]
	r.mu.Unlock()
	require.Equal(t, []int32{5}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", true, 5)))
	plain := newTestBroker(t, func(c *BrokerConfig) { c.NamesrvAddr = "ns:9876"; c.TotalReplicas = 3 })
	plain.SetNameServerInvoker(r)
	require.Equal(t, []int32{6}, lockedQueues(t, plain, lockReq(t, codec.ReqLockBatchMq, "A", false, 6)))
	r.mu.Lock()
	require.Equal(t, before, r.calls[codec.ReqLockBatchMq])
	r.mu.Unlock()
}

// A strict-mode lock asks its peers signed with innerClientAuthenticationCredentials,
// as Java's BrokerOuterAPI signs every broker-to-broker request: peers with ACL
// 2.0 on refused the unsigned requests, so no lock reached its quorum. Java
// signs whenever the credentials are set, whether or not the broker itself
// authenticates; and a name-server client set later (the TLS one) signs too.
func TestStrictLockSignsPeerRequests(t *testing.T) {
	const creds = `{"accessKey":"inner","secretKey":"innerpass"}`
	strict := func(auth bool) func(c *BrokerConfig) {
		return func(c *BrokerConfig) {
			c.NamesrvAddr = "ns:9876"
			_, err := c.ApplyProperties(map[string]string{"lockInStrictMode": "true", "totalReplicas": "3"})
			require.NoError(t, err)
			c.InnerClientAuthenticationCredentials = creds
			if auth {
				c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
				c.InitAuthenticationUser = `{"username":"su","password":"supw"}`
			}
		}
	}
	for _, localAuth := range []bool{false, true} {
		a := newTestBroker(t, strict(localAuth))
		r := &peerRouter{t: t, peers: map[string]*testBroker{"b:10911": newTestBroker(t, strict(true)),
			"c:10911": newTestBroker(t, strict(true))}, down: map[string]bool{}, calls: map[int32]int{}}
		a.SetNameServerInvoker(r)
		require.Equal(t, []int32{0}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 0)), "local auth %v", localAuth)
		r.mu.Lock()
		require.Zero(t, r.unsigned, "local auth %v", localAuth)
		r.mu.Unlock()
	}
}

// The group's member list is kept for syncBrokerMemberGroupPeriod (Java
// refreshes its copy on that period) rather than asked of the name server at
// every lock; past it the list is asked again, and a failed refresh serves the
// last list for at most memberGroupStaleMax.
func TestStrictLockCachesMemberGroup(t *testing.T) {
	strict := func(c *BrokerConfig) {
		c.NamesrvAddr = "ns:9876"
		_, err := c.ApplyProperties(map[string]string{"lockInStrictMode": "true", "totalReplicas": "3",
			"syncBrokerMemberGroupPeriod": "5000"})
		require.NoError(t, err)
	}
	a := newTestBroker(t, strict)
	require.EqualValues(t, 5000, a.conf().SyncBrokerMemberGroupPeriod)
	r := &peerRouter{t: t, peers: map[string]*testBroker{"b:10911": newTestBroker(t, strict),
		"c:10911": newTestBroker(t, strict)}, down: map[string]bool{}, calls: map[int32]int{}}
	a.SetNameServerInvoker(r)
	asks := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.calls[codec.ReqGetBrokerMemberGroup]
	}
	for q := int32(0); q < 5; q++ {
		require.Equal(t, []int32{q}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, q)))
	}
	require.Equal(t, 1, asks(), "one name-server round trip for five locks")

	age := func(d time.Duration) {
		a.members.mu.Lock()
		a.members.at = time.Now().Add(-d)
		a.members.mu.Unlock()
	}
	age(6 * time.Second)
	require.Equal(t, []int32{5}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 5)))
	require.Equal(t, 2, asks(), "asked again past the period")

	r.mu.Lock()
	r.down["ns:9876"] = true
	r.mu.Unlock()
	age(6 * time.Second)
	require.Equal(t, []int32{6}, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 6)),
		"a failed refresh keeps a recent list")
	age(memberGroupStaleMax + time.Second)
	require.Empty(t, lockedQueues(t, a, lockReq(t, codec.ReqLockBatchMq, "A", false, 7)),
		"too old a list is dropped: no peers, no quorum")
}

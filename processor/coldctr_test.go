package processor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// coldBroker is a broker whose store counts every record behind the
// commitlog's end as cold (a hot window of 0 %), with a 1-byte group
// threshold, and topic CT holding n messages in queue 0.
func coldBroker(t *testing.T, n int) *testBroker {
	b := newTestBroker(t, nil)
	_, _, err := b.updateConfig(map[string]string{"coldDataFlowControlEnable": "true",
		"accessMessageInMemoryHotRatio": "0", "cgColdReadThreshold": "1"})
	require.NoError(t, err)
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("CT"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	sendN(t, b, "CT", n, []byte("cold body"))
	return b
}

func coldInfo(t *testing.T, b *testBroker) map[string]json.RawMessage {
	t.Helper()
	r, err := b.handleGetColdDataFlowCtrInfo(context.Background(), newTestConn(9), codec.NewRequest(codec.ReqGetColdDataFlowCtrInfo))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(r.Body, &m))
	return m
}

// A push consumer's group that read more cold data than its threshold this
// period is answered SYSTEM_BUSY with Java's remark while its pull starts in
// the cold area; the period's end, or an admin threshold above what it read,
// lets it through again. A system group is never counted.
func TestColdReadThrottlesPushGroup(t *testing.T) {
	ctx := context.Background()
	b := coldBroker(t, 3)
	c := newTestConn(1)
	r, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@push", "PushG", "CT"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)

	pull := func(group string) *codec.RemotingCommand {
		n := len(c.responses())
		var flag int32
		if group == "TOOLS_CONSUMER" {
			flag = codec.PullFlagSubscription // no heartbeat
		}
		r, err := b.handlePullMessage(ctx, c, pullReq(group, "CT", 0, 0, flag, 0))
		require.NoError(t, err)
		if r == nil {
			return waitResponse(t, c, n+1)
		}
		return r
	}
	first := pull("PushG")
	require.EqualValues(t, codec.RespSuccess, first.Code)
	require.Len(t, decodeBody(t, first.Body), 3)

	info := coldInfo(t, b)
	var rt map[string]struct {
		ColdAcc               int64 `json:"coldAcc"`
		CreateTimeMills       int64 `json:"createTimeMills"`
		LastColdReadTimeMills int64 `json:"lastColdReadTimeMills"`
	}
	require.NoError(t, json.Unmarshal(info["runtimeTable"], &rt))
	require.Positive(t, rt["PushG"].ColdAcc)
	require.Positive(t, rt["PushG"].LastColdReadTimeMills)
	require.Equal(t, "1", string(info["cgColdReadThreshold"]))
	require.Equal(t, "104857600", string(info["globalColdReadThreshold"]))
	require.Equal(t, rt["PushG"].ColdAcc, mustInt(t, info["globalAcc"]))

	busy := pull("PushG")
	require.EqualValues(t, codec.RespSystemBusy, busy.Code)
	require.Equal(t, coldReadRemark, busy.Remark)

	// An admin threshold above what the group read lets it through (2001);
	// removed (2002), the broker's 1 byte applies again.
	up := codec.NewRequest(codec.ReqUpdateColdDataFlowCtrConfig)
	up.Body = []byte("PushG=1000000\nOther=x\n")
	r, err = b.handleUpdateColdDataFlowCtrConfig(ctx, c, up)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.JSONEq(t, `{"PushG":1000000}`, string(coldInfo(t, b)["configTable"]), "a threshold that is no number is skipped")
	require.EqualValues(t, codec.RespSuccess, pull("PushG").Code)
	rm := codec.NewRequest(codec.ReqRemoveColdDataFlowCtrConfig)
	rm.Body = []byte("PushG")
	r, err = b.handleRemoveColdDataFlowCtrConfig(ctx, c, rm)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.JSONEq(t, `{}`, string(coldInfo(t, b)["configTable"]))
	require.EqualValues(t, codec.RespSystemBusy, pull("PushG").Code)

	// The period's end clears the counters.
	b.cold.period(b.conf(), time.Now())
	require.EqualValues(t, codec.RespSuccess, pull("PushG").Code)

	// The tools' group reads cold data unthrottled and uncounted.
	for i := 0; i < 2; i++ {
		require.EqualValues(t, codec.RespSuccess, pull("TOOLS_CONSUMER").Code)
	}
	require.NoError(t, json.Unmarshal(coldInfo(t, b)["runtimeTable"], &rt))
	require.NotContains(t, rt, "TOOLS_CONSUMER")

	// A group idle for a minute is forgotten.
	b.cold.period(b.conf(), time.Now().Add(coldAccResideTime))
	require.JSONEq(t, `{}`, string(coldInfo(t, b)["runtimeTable"]))
}

func mustInt(t *testing.T, raw json.RawMessage) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal(raw, &n))
	return n
}

// A pull consumer's throttled pull is held (ColdDataPullRequestHoldService)
// and then served one message, not held again.
func TestColdReadHoldsPullConsumer(t *testing.T) {
	ctx := context.Background()
	b := coldBroker(t, 3)
	c := newTestConn(1)
	hb := heartbeatReq(t, "10.0.0.1@lite", "LiteG", "CT")
	var data codec.HeartbeatData
	require.NoError(t, json.Unmarshal(hb.Body, &data))
	data.ConsumerDataSet[0].ConsumeType = consumeActively
	body, err := json.Marshal(data)
	require.NoError(t, err)
	hb.Body = body
	r, err := b.handleHeartBeat(ctx, c, hb)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)

	r, err = b.handlePullMessage(ctx, c, pullReq("LiteG", "CT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r)
	require.Len(t, decodeBody(t, waitResponse(t, c, 1).Body), 3)

	start := time.Now()
	r, err = b.handlePullMessage(ctx, c, pullReq("LiteG", "CT", 0, 0, codec.PullFlagSubscription, 0))
	require.NoError(t, err)
	require.Nil(t, r, "held")
	require.Len(t, c.responses(), 1, "not answered yet")
	held := waitResponse(t, c, 2)
	require.GreaterOrEqual(t, time.Since(start), coldHoldTime)
	require.EqualValues(t, codec.RespSuccess, held.Code)
	require.Len(t, decodeBody(t, held.Body), 1, "the re-run reads one message")
	b.coldHold.mu.Lock()
	require.Empty(t, b.coldHold.held)
	b.coldHold.mu.Unlock()
}

// Off (the default), nothing is counted or throttled.
func TestColdReadOffCountsNothing(t *testing.T) {
	ctx := context.Background()
	b := newTestBroker(t, func(c *BrokerConfig) { c.CgColdReadThreshold = 1 })
	b.st.SetColdDataCheck(false, false, 0)
	b.topics.Update(func() TopicConfig { tc := NewTopicConfig("CT"); tc.ReadQueueNums, tc.WriteQueueNums = 1, 1; return tc }())
	sendN(t, b, "CT", 2, []byte("x"))
	c := newTestConn(1)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "10.0.0.1@push", "PushG", "CT"))
	require.NoError(t, err)
	for i := 1; i <= 2; i++ {
		r, err := b.handlePullMessage(ctx, c, pullReq("PushG", "CT", 0, 0, 0, 0))
		require.NoError(t, err)
		require.Nil(t, r)
		require.EqualValues(t, codec.RespSuccess, waitResponse(t, c, i).Code)
	}
	require.JSONEq(t, `{}`, string(coldInfo(t, b)["runtimeTable"]))
	require.Zero(t, b.cold.global.Load())
}

// The adaptive strategies: the simple one raises a group's threshold by half
// when it hit it while the broker is under its global threshold, and lowers
// the highest adaptive ones by a fifth (never below cgColdReadThreshold)
// when the broker is over it; an admin threshold is never adapted.
func TestColdCtrSimpleStrategy(t *testing.T) {
	cfg := DefaultBrokerConfig()
	cfg.UsePIDColdCtrStrategy = false
	cfg.ColdCtrStrategyEnable = true
	cfg.CgColdReadThreshold, cfg.GlobalColdReadThreshold = 100, 1000
	c := newColdCtr(&cfg)
	now := time.Now()
	c.add("A", 150, now)
	c.add("Admin", 150, now)
	c.setGroup("Admin", 120)
	require.True(t, c.throttled(&cfg, "A"))
	c.period(&cfg, now)
	require.Equal(t, map[string]int64{"A" + coldAdaptive: 150, "Admin": 120}, c.config)
	require.False(t, c.throttled(&cfg, "A"), "counters restart")
	c.add("A", 149, now)
	require.False(t, c.throttled(&cfg, "A"), "under its adapted threshold")

	c.add("B", 2000, now) // the broker is over its global threshold
	require.True(t, c.throttled(&cfg, "A"), "every reading group is throttled past the global threshold")
	c.period(&cfg, now)
	require.Equal(t, map[string]int64{"A" + coldAdaptive: 120, "Admin": 120}, c.config)
	c.add("B", 2000, now)
	c.period(&cfg, now)
	require.Equal(t, int64(100), c.config["A"+coldAdaptive], "never below cgColdReadThreshold")

	cfg.ColdCtrStrategyEnable = false
	c.period(&cfg, now)
	require.Equal(t, map[string]int64{"Admin": 120}, c.config, "adaptive thresholds dropped when the strategy is off")
}

// The PID strategy adapts nothing until it has ten periods of history, then
// raises thresholds while the broker reads less than 80 % of its global
// threshold.
func TestColdCtrPIDStrategy(t *testing.T) {
	cfg := DefaultBrokerConfig()
	cfg.ColdCtrStrategyEnable = true
	cfg.CgColdReadThreshold, cfg.GlobalColdReadThreshold = 100, 1000
	c := newColdCtr(&cfg)
	require.True(t, c.pid, "Java's default")
	now := time.Now()
	for i := 0; i < pidHistory-1; i++ {
		c.add("A", 100, now)
		c.period(&cfg, now)
		require.Empty(t, c.config, "period %d", i)
	}
	c.add("A", 100, now)
	c.period(&cfg, now)
	require.Equal(t, map[string]int64{"A" + coldAdaptive: 150}, c.config)
}

// The seven keys are bound with Java's defaults; all but
// usePIDColdCtrStrategy (read once, as Java picks its strategy at start) apply
// at once through UPDATE_BROKER_CONFIG.
func TestColdKeysBound(t *testing.T) {
	cfg := DefaultBrokerConfig()
	props := cfg.Properties()
	for k, v := range map[string]string{"accessMessageInMemoryHotRatio": "26", "cgColdReadThreshold": "3145728",
		"coldCtrStrategyEnable": "false", "coldDataFlowControlEnable": "false", "coldDataScanEnable": "false",
		"globalColdReadThreshold": "104857600", "usePIDColdCtrStrategy": "true"} {
		require.Equal(t, v, props[k], k)
		_, live := liveConfigKeys[k]
		require.Equal(t, k != "usePIDColdCtrStrategy", live, k)
	}
}

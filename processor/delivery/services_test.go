package delivery

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// mapOffsets is an in-memory Offsets.
type mapOffsets struct {
	mu sync.Mutex
	m  map[string]int64
}

func (o *mapOffsets) key(group, topic string, q int32) string {
	return group + "@" + topic + "@" + strconv.Itoa(int(q))
}

func (o *mapOffsets) Query(group, topic string, q int32) int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.m[o.key(group, topic, q)]; ok {
		return v
	}
	return -1
}

func (o *mapOffsets) Commit(group, topic string, q int32, off int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m[o.key(group, topic, q)] = off
}

var testHost = netip.MustParseAddrPort("127.0.0.1:10911")

// newTestHost opens a real store in a temp dir: the services run alone,
// without a broker, over the store API they are given.
func newTestHost(t *testing.T) (*Host, *store.DefaultStore) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	st, err := store.Open(cfg, log)
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() { require.NoError(t, st.Shutdown()) })
	h := &Host{Store: st, Offsets: &mapOffsets{m: map[string]int64{}}, Log: log,
		Target: func(topic string, q int32) (string, bool) { return "", topic != "Refused" },
		Stamp:  func(m *codec.Message) { m.StoreHost = testHost },
	}
	return h, st
}

func put(t *testing.T, st *store.DefaultStore, m *codec.Message) {
	t.Helper()
	m.BornHost, m.StoreHost, m.BornTimestamp = testHost, testHost, time.Now().UnixMilli()
	res := st.PutMessage(context.Background(), m)
	require.True(t, res.Status.Written(), res.Status.String())
}

func TestScheduleDeliversDueLevelAlone(t *testing.T) {
	h, st := newTestHost(t)
	s := NewSchedule(h, []time.Duration{50 * time.Millisecond, time.Hour}, t.TempDir())
	for _, m := range []*codec.Message{
		{Topic: "Real", QueueID: 0, Body: []byte("due"), Properties: codec.SetProperty("", codec.PropDelay, "1")},
		{Topic: "Real", QueueID: 0, Body: []byte("capped"), Properties: codec.SetProperty("", codec.PropDelay, "9")},
		{Topic: "Refused", QueueID: 0, Body: []byte("dropped"), Properties: codec.SetProperty("", codec.PropDelay, "1")},
	} {
		ParkDelay(m, nil, s.Levels())
		require.Equal(t, TopicSchedule, m.Topic)
		put(t, st, m)
	}
	require.Eventually(t, func() bool {
		return st.MaxOffsetInQueue(TopicSchedule, 0) == 2 && st.MaxOffsetInQueue(TopicSchedule, 1) == 1
	}, 5*time.Second, 5*time.Millisecond)
	time.Sleep(60 * time.Millisecond) // level 1 is due
	s.deliverLevel(context.Background(), 1)
	s.deliverLevel(context.Background(), 2)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("Real", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, s.Offset(1), "the refused one is dropped, not retried")
	require.EqualValues(t, 0, s.Offset(2), "the capped one waits its hour")
	require.EqualValues(t, 0, max(st.MaxOffsetInQueue("Refused", 0), 0))

	require.NoError(t, s.Persist())
	again := NewSchedule(h, s.levels, "")
	again.path = s.path
	require.NoError(t, again.Load())
	require.EqualValues(t, 2, again.Offset(1))
}

func TestTimerDeliversWhenDueAlone(t *testing.T) {
	h, st := newTestHost(t)
	tm := NewTimer(h, nil)
	deliver := time.Now().Add(3 * time.Second).UnixMilli()
	m := &codec.Message{Topic: "Real", QueueID: 1, Body: []byte("later"),
		Properties: codec.SetProperty("", codec.PropTimerDeliverMs, strconv.FormatInt(deliver, 10))}
	require.True(t, ParkTimer(m, nil, TimerMaxDelayMs))
	require.Equal(t, TopicTimer, m.Topic)
	put(t, st, m)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTimer, 0) == 1 }, 5*time.Second, 5*time.Millisecond)

	now := time.Now().UnixMilli()
	tm.StepAt(context.Background(), now)
	require.Equal(t, 1, tm.PendingCount(), "read into the wheel, not due")
	require.EqualValues(t, 0, max(st.MaxOffsetInQueue("Real", 1), 0))
	require.Less(t, tm.Horizon(now), now+1, "pending: the horizon is the cursor")

	tm.StepAt(context.Background(), deliver+2000)
	require.Zero(t, tm.PendingCount())
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue("Real", 1) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 1, h.Offsets.Query(TimerSysGroup, TopicTimer, 0), "the commit point passed it")

	bad := &codec.Message{Topic: "Real", Properties: codec.SetProperty("", codec.PropTimerDelaySec, "x")}
	require.False(t, ParkTimer(bad, nil, TimerMaxDelayMs), "a malformed time is MESSAGE_ILLEGAL")
	far := &codec.Message{Topic: "Real", Properties: codec.SetProperty("", codec.PropTimerDelaySec, strconv.Itoa(4*86400))}
	require.False(t, ParkTimer(far, nil, TimerMaxDelayMs), "past the 3-day limit")
}

// The checker alone: a settled half message is skipped, an unsettled one old
// enough is re-queued with its check count raised and its producer asked, and
// one checked too often goes to TRANS_CHECK_MAX_TIME_TOPIC.
func TestTransactionsCheckAlone(t *testing.T) {
	h, st := newTestHost(t)
	var asked []*codec.RemotingCommand
	var ensured []string
	tx := NewTransactions(h, Asker{
		Ask: func(group string, pick int64, req *codec.RemotingCommand) bool {
			require.Equal(t, "PG", group)
			asked = append(asked, req)
			return true
		},
		EnsureTopic: func(topic string) { ensured = append(ensured, topic) },
		BrokerName:  func() string { return "b1" },
		OffsetMsgID: func(off int64) string { return "id" + strconv.FormatInt(off, 10) },
	})
	tx.Timeout = 0
	tx.CheckMax = 2
	half := func(body, times string) {
		e := codec.EditProperties("")
		e.Set(codec.PropRealTopic, "TxT")
		e.Set(codec.PropRealQueueID, "1")
		e.Set(codec.PropProducerGroup, "PG")
		if times != "" {
			e.Set(codec.PropTranCheckTimes, times)
		}
		put(t, st, &codec.Message{Topic: TopicTransHalf, Body: []byte(body), Properties: e.String()}) // stored as TRANSACTION_NOT_TYPE, as the broker stores halves
	}
	half("settled", "")
	half("ask-me", "")
	half("too-often", "2")
	put(t, st, &codec.Message{Topic: TopicTransOpHalf, Body: []byte("0,"), Properties: codec.SetProperty("", codec.PropTags, "d")})
	require.Eventually(t, func() bool {
		return st.MaxOffsetInQueue(TopicTransHalf, 0) == 3 && st.MaxOffsetInQueue(TopicTransOpHalf, 0) == 1
	}, 5*time.Second, 5*time.Millisecond)

	tx.Check(context.Background())
	require.Len(t, asked, 1, "only the unsettled one within its check limit")
	require.Equal(t, codec.ReqCheckTransactionState, asked[0].Code)
	bname, _ := asked[0].Ext.Get("bname")
	require.Equal(t, "b1", bname)
	require.Equal(t, []string{TopicTransCheckMax}, ensured)
	require.Eventually(t, func() bool { return st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 4, st.MaxOffsetInQueue(TopicTransHalf, 0), "the asked one re-queued")
	require.EqualValues(t, 3, h.Offsets.Query(TransSysGroup, TopicTransHalf, 0))
}

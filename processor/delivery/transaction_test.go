package delivery

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// txRig is a checker over a real store that records whom it asked.
type txRig struct {
	t     *testing.T
	h     *Host
	st    *store.DefaultStore
	tx    *Transactions
	asked []string // bodies of the messages asked about
}

func newTxRig(t *testing.T) *txRig {
	h, st := newTestHost(t)
	r := &txRig{t: t, h: h, st: st}
	r.tx = NewTransactions(h, Asker{
		Ask: func(group string, pick int64, req *codec.RemotingCommand) bool {
			var m codec.Message
			_, err := codec.DecodeRecord(req.Body, &m)
			require.NoError(t, err)
			r.asked = append(r.asked, string(m.Body))
			return true
		},
		EnsureTopic: func(string) {},
		BrokerName:  func() string { return "b1" },
		OffsetMsgID: func(off int64) string { return strconv.FormatInt(off, 10) },
	})
	r.tx.Timeout = 100 * time.Millisecond
	return r
}

// half puts a half message born at born with extra properties (name, value pairs).
func (r *txRig) half(body string, born time.Time, kv ...string) {
	e := codec.EditProperties("")
	e.Set(codec.PropRealTopic, "TxT")
	e.Set(codec.PropRealQueueID, "0")
	e.Set(codec.PropProducerGroup, "PG")
	for i := 0; i+1 < len(kv); i += 2 {
		e.Set(kv[i], kv[i+1])
	}
	m := &codec.Message{Topic: TopicTransHalf, Body: []byte(body), Properties: e.String(),
		BornHost: testHost, StoreHost: testHost, BornTimestamp: born.UnixMilli()}
	res := r.st.PutMessage(context.Background(), m)
	require.True(r.t, res.Status.Written(), res.Status.String())
}

// op writes an op record settling the given half offsets.
func (r *txRig) op(offs ...int64) {
	var body string
	for _, o := range offs {
		body += strconv.FormatInt(o, 10) + ","
	}
	m := &codec.Message{Topic: TopicTransOpHalf, Body: []byte(body), Properties: codec.SetProperty("", codec.PropTags, "d"),
		BornHost: testHost, StoreHost: testHost, BornTimestamp: time.Now().UnixMilli()}
	res := r.st.PutMessage(context.Background(), m)
	require.True(r.t, res.Status.Written(), res.Status.String())
}

func (r *txRig) settle(halves, ops int64) {
	require.Eventually(r.t, func() bool {
		return r.st.MaxOffsetInQueue(TopicTransHalf, 0) == halves && r.st.MaxOffsetInQueue(TopicTransOpHalf, 0) == ops
	}, 5*time.Second, 5*time.Millisecond)
}

func (r *txRig) halfAt(off int64) *codec.Message {
	// A copy put back by Check may still be on its way to the consume queue.
	require.Eventually(r.t, func() bool { return r.st.MaxOffsetInQueue(TopicTransHalf, 0) > off }, 5*time.Second, time.Millisecond)
	res := r.st.GetMessage(TransSysGroup, TopicTransHalf, 0, off, 1, 4<<20, nil)
	defer res.Release()
	require.Equal(r.t, store.GetFound, res.Status)
	var m codec.Message
	_, err := codec.DecodeRecord(res.Records[0], &m)
	require.NoError(r.t, err)
	return codec.CloneMessage(&m)
}

func (r *txRig) checkOffset() int64 { return r.h.Offsets.Query(TransSysGroup, TopicTransHalf, 0) }

// A half message with a huge immunity, or born in the future, no longer holds
// the check offset: an in-doubt message behind it is asked about.
func TestTransactionsCheckPassesHostileHalf(t *testing.T) {
	old := time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name string
		born time.Time
		kv   []string
	}{
		{"hugeImmunity", old, []string{codec.PropCheckImmunity, "1000000000"}},
		{"futureBorn", time.Now().Add(100 * 365 * 24 * time.Hour), nil},
		{"futureBornImmune", time.Now().Add(100 * 365 * 24 * time.Hour), []string{codec.PropCheckImmunity, "60"}},
		{"maxBorn", time.UnixMilli(1<<63 - 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTxRig(t)
			r.half("attacker", tc.born, tc.kv...)
			r.half("victim", old)
			r.settle(2, 0)
			r.tx.Check(context.Background())
			require.Contains(t, r.asked, "victim")
			require.GreaterOrEqual(t, r.checkOffset(), int64(2), "the check offset passed both")
		})
	}
}

// An immune half message is copied to the end of the queue with its original
// named and its check count raised, once per round, and discarded after
// CheckMax rounds, as in Java.
func TestTransactionsImmuneCopyBounded(t *testing.T) {
	r := newTxRig(t)
	r.tx.CheckMax = 3
	old := time.Now().Add(-time.Second)
	for range 5 {
		r.half("immune", old, codec.PropCheckImmunity, "1000000000")
	}
	r.settle(5, 0)
	r.tx.Check(context.Background())
	require.EqualValues(t, 10, r.st.MaxOffsetInQueue(TopicTransHalf, 0), "one copy each per round")
	require.EqualValues(t, 5, r.checkOffset())
	cp := r.halfAt(5)
	p, _ := codec.PropertyValue(cp.Properties, codec.PropTranPreparedQOff)
	n, _ := codec.PropertyValue(cp.Properties, codec.PropTranCheckTimes)
	require.Equal(t, "0", p)
	require.Equal(t, "1", n)
	require.Empty(t, r.asked)

	for range 5 {
		r.tx.Check(context.Background())
	}
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 5 }, 5*time.Second, 5*time.Millisecond)
	last := r.st.MaxOffsetInQueue(TopicTransHalf, 0)
	r.tx.Check(context.Background())
	require.Equal(t, last, r.st.MaxOffsetInQueue(TopicTransHalf, 0), "nothing left to re-put")
	require.Equal(t, last, r.checkOffset())
	cp = r.halfAt(last - 1)
	p, _ = codec.PropertyValue(cp.Properties, codec.PropTranPreparedQOff)
	require.Equal(t, "4", p, "copies of copies keep the original")
	require.Empty(t, r.asked)
}

// An immune message settled after its copy was made: the copy is dropped, not
// re-put or asked about.
func TestTransactionsImmuneCopySettledLate(t *testing.T) {
	r := newTxRig(t)
	r.half("immune", time.Now().Add(-time.Second), codec.PropCheckImmunity, "1000000000")
	r.settle(1, 0)
	r.tx.Check(context.Background())
	r.op(0)
	r.settle(2, 1)
	r.tx.Check(context.Background())
	require.EqualValues(t, 2, r.st.MaxOffsetInQueue(TopicTransHalf, 0), "no second copy")
	require.EqualValues(t, 2, r.checkOffset())
	require.Empty(t, r.asked)
	require.EqualValues(t, 1, r.h.Offsets.Query(TransSysGroup, TopicTransOpHalf, 0))
}

// A forged TRAN_PREPARED_QUEUE_OFFSET (ahead of the message, or -1) is not
// trusted: the copy names the message itself.
func TestTransactionsForgedPreparedOffset(t *testing.T) {
	for _, v := range []string{"-1", "7", "x"} {
		r := newTxRig(t)
		r.half("immune", time.Now(), codec.PropCheckImmunity, "60", codec.PropTranPreparedQOff, v)
		r.settle(1, 0)
		r.tx.Check(context.Background())
		require.EqualValues(t, 1, r.checkOffset(), v)
		p, _ := codec.PropertyValue(r.halfAt(1).Properties, codec.PropTranPreparedQOff)
		require.Equal(t, "0", p, v)
	}
}

// Settled offsets are held only ahead of the check offset and at most doneCap
// of them: behind a hostile half message the table stays empty, and with a
// small cap the walk reads op records as it goes and asks nobody.
func TestTransactionsDoneBounded(t *testing.T) {
	r := newTxRig(t)
	old := time.Now().Add(-time.Second)
	r.half("attacker", old, codec.PropCheckImmunity, "1000000000")
	for i := range 50 {
		r.half("settled"+strconv.Itoa(i), old)
		r.op(int64(i + 1))
	}
	r.settle(51, 50)
	r.tx.Check(context.Background())
	require.Empty(t, r.asked)
	require.Empty(t, r.tx.done)
	require.EqualValues(t, 51, r.checkOffset())
	require.EqualValues(t, 50, r.h.Offsets.Query(TransSysGroup, TopicTransOpHalf, 0))

	r = newTxRig(t)
	r.tx.doneCap = 4
	for i := range 40 {
		r.half("settled"+strconv.Itoa(i), old)
	}
	for i := range 40 {
		r.op(int64(i))
	}
	r.half("in-doubt", old)
	r.settle(41, 40)
	r.tx.readOps(0)
	require.Len(t, r.tx.done, 4)
	r.tx.Check(context.Background())
	require.Equal(t, []string{"in-doubt"}, r.asked)
	require.LessOrEqual(t, len(r.tx.done), 4)
	require.EqualValues(t, 41, r.checkOffset())
}

// A settled-offset table filled with offsets far ahead cannot stall the walk:
// the message it cannot vouch for is asked about (at least once).
func TestTransactionsDoneFullStillProgresses(t *testing.T) {
	r := newTxRig(t)
	r.tx.doneCap = 4
	old := time.Now().Add(-time.Second)
	for i := range 10 {
		r.half("m"+strconv.Itoa(i), old)
	}
	for i := 9; i >= 0; i-- {
		r.op(int64(i))
	}
	r.settle(10, 10)
	r.tx.Check(context.Background())
	require.EqualValues(t, 10, r.checkOffset())
	require.LessOrEqual(t, len(r.tx.done), 4)
	require.NotEmpty(t, r.asked)
}

// failingStore refuses puts to one topic.
type failingStore struct {
	Store
	topic string
	fail  bool
}

func (f *failingStore) PutMessage(ctx context.Context, m *codec.Message) store.PutResult {
	if f.fail && m.Topic == f.topic {
		return store.PutResult{Status: store.PutServiceNotAvailable}
	}
	return f.Store.PutMessage(ctx, m)
}

// A half message past CheckMax whose move to TRANS_CHECK_MAX_TIME_TOPIC fails
// holds the check offset and is moved by a later round, not lost (Java logs
// the failed put and moves on).
func TestTransactionsDiscardFailureKeepsHalf(t *testing.T) {
	r := newTxRig(t)
	fs := &failingStore{Store: r.st, topic: TopicTransCheckMax, fail: true}
	r.h.Store = fs
	old := time.Now().Add(-time.Second)
	r.half("spent", old, codec.PropTranCheckTimes, "15")
	r.half("next", old)
	r.settle(2, 0)
	r.tx.Check(context.Background())
	require.EqualValues(t, 0, r.checkOffset(), "the failed move holds the offset")
	require.EqualValues(t, 0, r.st.MaxOffsetInQueue(TopicTransCheckMax, 0))
	require.Empty(t, r.asked)

	fs.fail = false
	r.tx.Check(context.Background())
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 2, r.checkOffset())
	require.Equal(t, []string{"next"}, r.asked)
}

// A half message born longer ago than fileReservedTime is moved to
// TRANS_CHECK_MAX_TIME_TOPIC unasked, immune or not (Java's needSkip); one
// just younger is asked about.
func TestTransactionsSkipPastReservedTime(t *testing.T) {
	r := newTxRig(t)
	r.tx.Reserved = 72 * time.Hour
	r.half("ancient", time.Now().Add(-73*time.Hour))
	r.half("ancientImmune", time.Now().Add(-73*time.Hour), codec.PropCheckImmunity, "1000000000")
	r.half("old", time.Now().Add(-71*time.Hour))
	r.settle(3, 0)
	r.tx.Check(context.Background())
	require.Equal(t, []string{"old"}, r.asked)
	require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(TopicTransCheckMax, 0) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.EqualValues(t, 3, r.checkOffset())
	require.EqualValues(t, 4, r.st.MaxOffsetInQueue(TopicTransHalf, 0), "only the asked one re-queued")
}

// CHECK_IMMUNITY_TIME_IN_SECONDS: a half message inside its immunity is
// copied on, not asked about; one past it is asked about; an unparsable or
// -1 value means the transaction timeout.
func TestTransactionsImmunityExpires(t *testing.T) {
	r := newTxRig(t)
	r.half("immune", time.Now(), codec.PropCheckImmunity, "60")
	r.half("expired", time.Now().Add(-2*time.Second), codec.PropCheckImmunity, "1")
	r.half("minusOne", time.Now().Add(-time.Second), codec.PropCheckImmunity, "-1")
	r.half("junk", time.Now().Add(-time.Second), codec.PropCheckImmunity, "x")
	r.settle(4, 0)
	r.tx.Check(context.Background())
	require.Equal(t, []string{"expired", "minusOne", "junk"}, r.asked)
	require.EqualValues(t, 4, r.checkOffset())
	cp := r.halfAt(4)
	require.Equal(t, "immune", string(cp.Body))
	p, _ := codec.PropertyValue(cp.Properties, codec.PropTranPreparedQOff)
	require.Equal(t, "0", p)
}

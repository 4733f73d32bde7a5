package processor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/store"
)

// A client that names internal properties itself (REAL_TOPIC, REAL_QID, ...)
// must not steer where the broker puts a parked message: the broker's own
// values replace the client's, and a target that did not come from a checked
// send is refused. Each test runs the broker with its store one level below a
// temp dir and checks that nothing appears beside the store, and that every
// consume queue belongs to a topic with a valid name.

// smuggleBroker starts a broker whose store root is <tmp>/store.
func smuggleBroker(t *testing.T, mod func(*BrokerConfig)) (*testBroker, string) {
	parent := t.TempDir()
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.Store.StorePathRootDir = filepath.Join(parent, "store")
		c.Store.MessageDelayLevel = "1s 1s 1s"
		if mod != nil {
			mod(c)
		}
	})
	return b, parent
}

// requireStoreContained fails when anything but the store exists in parent, or
// when a consume queue directory is not a valid topic name.
func requireStoreContained(t *testing.T, parent string) {
	t.Helper()
	err := filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(parent, p)
		if rel != "." && rel != "store" && !strings.HasPrefix(rel, "store"+string(filepath.Separator)) {
			t.Errorf("created outside the store: %s", rel)
		}
		if strings.Contains(rel, "evil") {
			t.Errorf("a smuggled name reached the file system: %s", rel)
		}
		return nil
	})
	require.NoError(t, err)
	cq := filepath.Join(parent, "store", "consumequeue")
	entries, err := fsReadDir(cq)
	require.NoError(t, err)
	for _, e := range entries {
		_, ok := validateTopic(e.Name())
		require.True(t, ok, "consume queue directory %q", e.Name())
	}
}

func fsReadDir(dir string) ([]fs.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}

// requireOnce checks that name appears once in props with value want.
func requireOnce(t *testing.T, props, name, want string) {
	t.Helper()
	n := 0
	for i := 0; ; {
		k, v, next, ok := codec.NextProperty(props, i)
		if !ok {
			break
		}
		if k == name {
			n++
			require.Equal(t, want, v, "%s in %q", name, props)
		}
		i = next
	}
	require.Equal(t, 1, n, "%s in %q", name, props)
}

// sendOK sends one message and returns the response.
func sendOK(t *testing.T, b *testBroker, req *codec.RemotingCommand) *codec.RemotingCommand {
	t.Helper()
	resp, err := b.handleSendMessage(context.Background(), newTestConn(31), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	return resp
}

const smuggled = "REAL_TOPIC\x01../../evil_topic\x02REAL_QID\x01999\x02"

func TestSmuggledRealTopicThroughHalfMessage(t *testing.T) {
	b, parent := smuggleBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(21)
	for _, props := range []string{
		"TRAN_MSG\x01true\x02PGROUP\x01PG\x02" + smuggled,
		smuggled + "TRAN_MSG\x01true\x02PGROUP\x01PG\x02",
		"TRAN_MSG\x01true\x02PGROUP\x01PG\x02REAL_TOPIC\x01RMQ_SYS_TRANS_OP_HALF_TOPIC\x02REAL_QID\x010\x02" +
			"TRANSACTION_CHECK_TIMES\x0199\x02",
	} {
		req := sendReq("TxT", 1, []byte("tx"), props)
		req.Ext.Set("sysFlag", "4")
		resp := sendOK(t, b, req)
		_, clOff, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		qOff, err := strconv.ParseInt(ext(t, resp, "queueOffset"), 10, 64)
		require.NoError(t, err)
		half, err := b.st.LookMessageByOffset(clOff)
		require.NoError(t, err)
		requireOnce(t, half.Properties, codec.PropRealTopic, "TxT")
		requireOnce(t, half.Properties, codec.PropRealQueueID, "1")
		_, ok := codec.PropertyValue(half.Properties, codec.PropTranCheckTimes)
		require.False(t, ok, "the check count is the broker's")

		r, err := b.handleEndTransaction(ctx, c, endTxReq("PG", qOff, clOff, tranCommit))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 1) == 3 }, 5*time.Second, 10*time.Millisecond)
	for _, m := range pullAll(t, b, "TxT", 1) {
		require.Equal(t, "tx", string(m.Body))
		_, ok := codec.PropertyValue(m.Properties, codec.PropRealTopic)
		require.False(t, ok)
	}
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue(TopicTransOpHalf, 1), "nothing went to the system topic's queue 1")
	requireStoreContained(t, parent)
}

// A half message whose REAL_TOPIC was never checked (a store written before
// properties were rebuilt) is refused at commit like a send to that target.
func TestCommitChecksRestoredTarget(t *testing.T) {
	b, parent := smuggleBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(22)
	sendOK(t, b, sendReq("TxT", 0, []byte("make the topic"), ""))
	cases := []struct {
		props string
		code  int32
	}{
		{"PGROUP\x01PG\x02REAL_TOPIC\x01../../evil_topic\x02REAL_QID\x010\x02", codec.RespInvalidParameter},
		{"PGROUP\x01PG\x02REAL_TOPIC\x01SCHEDULE_TOPIC_XXXX\x02REAL_QID\x010\x02", codec.RespNoPermission},
		{"PGROUP\x01PG\x02REAL_TOPIC\x01rmq_sys_wheel_timer\x02REAL_QID\x010\x02", codec.RespNoPermission},
		{"PGROUP\x01PG\x02REAL_TOPIC\x01TxT\x02REAL_QID\x01999\x02", codec.RespInvalidParameter},
		{"PGROUP\x01PG\x02REAL_TOPIC\x01TxT\x02REAL_QID\x01-1\x02", codec.RespInvalidParameter},
	}
	for _, tc := range cases {
		res := b.st.PutMessage(ctx, &codec.Message{Topic: TopicTransHalf, QueueID: 0, BornTimestamp: time.Now().UnixMilli(),
			BornHost: b.storeHost, StoreHost: b.storeHost, Body: []byte("legacy"), Properties: tc.props})
		require.Equal(t, store.PutOK, res.Status)
		r, err := b.handleEndTransaction(ctx, c, endTxReq("PG", res.QueueOffset, res.WroteOffset, tranCommit))
		require.NoError(t, err)
		require.EqualValues(t, tc.code, r.Code, "%q: %s", tc.props, r.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue(TopicTransHalf, 0) == int64(len(cases)) },
		5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TxT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue(TopicTransOpHalf, 0), "refused commits leave the half message to the checker")
	require.EqualValues(t, 0, b.st.MaxOffsetInQueue(TopicSchedule, 0))
	requireStoreContained(t, parent)
}

func TestSmuggledRealTopicThroughDelay(t *testing.T) {
	b, parent := smuggleBroker(t, nil)
	ctx := context.Background()
	sendOK(t, b, sendReq("DelayT", 0, []byte("late"), "DELAY\x011\x02"+smuggled))
	sendOK(t, b, sendReq("DelayT", 0, []byte("late2"), smuggled+"DELAY\x011\x02"))
	// A record parked by an older broker, with the client's target.
	res := b.st.PutMessage(ctx, &codec.Message{Topic: TopicSchedule, QueueID: 0, BornTimestamp: time.Now().UnixMilli(),
		BornHost: b.storeHost, StoreHost: b.storeHost, Body: []byte("legacy"), Properties: "DELAY\x011\x02" + smuggled})
	require.Equal(t, store.PutOK, res.Status)
	sendOK(t, b, sendReq("DelayT", 0, []byte("after"), "DELAY\x011\x02"))

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("DelayT", 0) == 3 }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		return b.schedule.Offset(1) == 4
	}, 5*time.Second, 20*time.Millisecond, "the legacy record is passed, not retried")
	msgs := pullAll(t, b, "DelayT", 0)
	require.Len(t, msgs, 3)
	for _, m := range msgs {
		requireOnce(t, m.Properties, codec.PropRealTopic, "DelayT")
		requireOnce(t, m.Properties, codec.PropRealQueueID, "0")
	}
	require.Equal(t, []string{"late", "late2", "after"}, []string{string(msgs[0].Body), string(msgs[1].Body), string(msgs[2].Body)})
	requireStoreContained(t, parent)
}

func TestSmuggledRealTopicThroughTimer(t *testing.T) {
	b, parent := smuggleBroker(t, nil)
	due := strconv.FormatInt(time.Now().UnixMilli()+1500, 10)
	sendOK(t, b, sendReq("TimerT", 0, []byte("timed"), "TIMER_DELIVER_MS\x01"+due+"\x02"+smuggled))
	// Straight into the timer topic, already due, aimed outside the store.
	r, err := b.handleSendMessage(context.Background(), newTestConn(32), sendReq(TopicTimer, 0, []byte("direct"),
		smuggled+"TIMER_OUT_MS\x011\x02"))
	require.NoError(t, err)
	direct := r.Code == codec.RespSuccess
	t.Logf("direct send to %s: code %d %s", TopicTimer, r.Code, r.Remark)

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("TimerT", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	m := pullAll(t, b, "TimerT", 0)[0]
	require.Equal(t, "timed", string(m.Body))
	requireOnce(t, m.Properties, codec.PropRealTopic, "TimerT")
	requireOnce(t, m.Properties, codec.PropRealQueueID, "0")
	if direct {
		require.Eventually(t, func() bool { return b.offsets.Query(timerSysGroup, TopicTimer, 0) == 2 },
			5*time.Second, 20*time.Millisecond, "the direct record is passed, not retried")
	}
	requireStoreContained(t, parent)
}

func TestSmuggledRealTopicThroughSendBack(t *testing.T) {
	b, parent := smuggleBroker(t, nil)
	ctx := context.Background()
	sendOK(t, b, sendReq("BackT", 0, []byte("fail-me"), smuggled+"DELAY\x010\x02"))
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("BackT", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	orig := pullAll(t, b, "BackT", 0)[0]
	resp, err := b.handleConsumerSendMsgBack(ctx, newTestConn(33), sendBackReq(orig.CommitLogOffset, "CG", 1, 16))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("%RETRY%CG", 0) == 1 }, 10*time.Second, 20*time.Millisecond)
	m := pullAll(t, b, "%RETRY%CG", 0)[0]
	require.Equal(t, "fail-me", string(m.Body))
	requireOnce(t, m.Properties, codec.PropRealTopic, "%RETRY%CG")
	requireOnce(t, m.Properties, codec.PropRealQueueID, "0")
	requireOnce(t, m.Properties, codec.PropDelay, "1")
	requireOnce(t, m.Properties, codec.PropRetryTopic, "BackT")
	requireStoreContained(t, parent)
}

func TestApplyTimerAndDelayReplaceClientTargets(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) { c.Store.MessageDelayLevel = "1s 2s" })
	due := strconv.FormatInt(time.Now().UnixMilli()+60_000, 10)
	m := &codec.Message{Topic: "Real", QueueID: 3, Properties: "KEYS\x01k\x02" + smuggled + "TIMER_DELIVER_MS\x01" + due + "\x02REAL_TOPIC\x01again\x02"}
	require.True(t, b.applyTimer(m, nil))
	require.Equal(t, TopicTimer, m.Topic)
	requireOnce(t, m.Properties, codec.PropRealTopic, "Real")
	requireOnce(t, m.Properties, codec.PropRealQueueID, "3")
	requireOnce(t, m.Properties, codec.PropKeys, "k")

	m = &codec.Message{Topic: "Real", QueueID: 2, Properties: smuggled + "DELAY\x019\x02DELAY\x015\x02"}
	b.applyDelay(m, nil)
	require.Equal(t, TopicSchedule, m.Topic)
	require.EqualValues(t, 1, m.QueueID, "level 5 capped to the last (2)")
	requireOnce(t, m.Properties, codec.PropDelay, "2")
	requireOnce(t, m.Properties, codec.PropRealTopic, "Real")
	requireOnce(t, m.Properties, codec.PropRealQueueID, "2")
}

package pop

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// dueCheckPoint writes a checkpoint of broker's queue T/0 offset 0, due a
// minute ago, straight into revive queue 0.
func dueCheckPoint(t *testing.T, h *testHost, s *Service, broker string) {
	t.Helper()
	past := time.Now().UnixMilli() - 60_000
	ck := &CheckPoint{Num: 1, Diff: []int32{0}, PopTime: past, InvisibleTime: 1000, CID: "G", Topic: "T", BrokerName: broker}
	n := h.MaxOffset(reviveTopic("C"), 0)
	require.True(t, s.putCheckPoint(ck, 0))
	require.Eventually(t, func() bool { return h.MaxOffset(reviveTopic("C"), 0) == n+1 }, 5*time.Second, time.Millisecond)
}

// A revive whose retry put and re-put checkpoint both fail (an acting
// slave's store takes no put) leaves the checkpoint unrevived in the queue:
// the progress does not pass it, so the next round, or the master back, revives
// it. Before, the progress passed it and the message was never revived.
func TestReviveKeepsCheckpointWhenNothingCanBePut(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.send(t, "T", 0, "m0", "a")
	dueCheckPoint(t, h, s, "broker-a")
	rt := reviveTopic("C")

	h.refuse.Store(true)
	newReviver(s, 0).round(context.Background())
	require.EqualValues(t, -1, h.QueryOffset(reviveGroup, rt, 0), "the checkpoint is kept")
	require.EqualValues(t, 0, h.MaxOffset(retryTopic("T", "G", false), 0))

	h.refuse.Store(false)
	newReviver(s, 0).round(context.Background())
	require.EqualValues(t, 0, h.QueryOffset(reviveGroup, rt, 0), "revived on the next round")
	// The retry message is put; its queue counts it once dispatched.
	require.Eventually(t, func() bool { return h.MaxOffset(retryTopic("T", "G", false), 0) == 1 },
		5*time.Second, time.Millisecond)
}

// A checkpoint of another broker group (escaped to this revive topic by that
// group's acting slave) is revived from that group's master
// (EscapeBridge.getMessageFromRemote), never from this store's queue of the
// same name; one the master has not is skipped, one it could not be asked
// for is put again for later (rePutCK).
func TestReviveReadsAnotherGroupsMessageFromItsMaster(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	s := New(h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h.send(t, "T", 0, "local", "a") // this group's T/0 offset 0: not the checkpoint's message
	remote := &codec.Message{Topic: "T", QueueID: 0, Body: []byte("remote"), BornHost: h.cfg.StoreHost,
		StoreHost: h.cfg.StoreHost, BornTimestamp: time.Now().UnixMilli(), Properties: "UNIQ_KEY\x01R\x02"}
	rec := make([]byte, codec.RecordSize(remote))
	require.Equal(t, len(rec), codec.EncodeRecord(rec, remote))
	h.mu.Lock()
	h.remote = map[string][]byte{remoteKey("broker-b", "T", 0, 0): rec}
	h.mu.Unlock()
	dueCheckPoint(t, h, s, "broker-b")
	rt := reviveTopic("C")
	retry := retryTopic("T", "G", false)

	newReviver(s, 0).round(context.Background())
	require.EqualValues(t, 0, h.QueryOffset(reviveGroup, rt, 0))
	require.Eventually(t, func() bool { return h.MaxOffset(retry, 0) == 1 }, 5*time.Second, time.Millisecond)
	res := h.GetMessage("x", retry, 0, 0, 1, nil)
	require.Len(t, res.Records, 1)
	var m codec.Message
	_, err := codec.DecodeRecord(res.Records[0], &m)
	res.Release()
	require.NoError(t, err)
	require.Equal(t, "remote", string(m.Body), "the other group's message")
	h.mu.Lock()
	require.Equal(t, []string{remoteKey("broker-b", "T", 0, 0)}, h.remoteAsks)
	h.mu.Unlock()

	// Not there: skipped, no re-put.
	puts := h.ckPuts.Load()
	h.mu.Lock()
	h.remote = nil
	h.mu.Unlock()
	dueCheckPoint(t, h, s, "broker-b")
	newReviver(s, 0).round(context.Background())
	require.EqualValues(t, 1, h.QueryOffset(reviveGroup, rt, 0))
	require.EqualValues(t, puts+1, h.ckPuts.Load(), "only the test's own checkpoint")

	// Unreachable: a re-put checkpoint tries later.
	h.mu.Lock()
	h.remoteDown = true
	h.mu.Unlock()
	dueCheckPoint(t, h, s, "broker-b")
	newReviver(s, 0).round(context.Background())
	require.EqualValues(t, 2, h.QueryOffset(reviveGroup, rt, 0))
	require.EqualValues(t, puts+3, h.ckPuts.Load(), "the test's checkpoint and the re-put one")
	require.EqualValues(t, 1, h.MaxOffset(retry, 0))
}

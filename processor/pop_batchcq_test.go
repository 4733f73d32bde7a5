package processor

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// batchPopClient is a popClient on a queue.type=BatchCQ topic.
func batchPopClient(t *testing.T, group, topic string) (*restartable, *popClient) {
	t.Helper()
	r := newRestartable(t, func(c *BrokerConfig) { c.ReviveQueueNum = 1 })
	resp := updateTopicAttrs(t, r.tb(), topic, "+queue.type=BatchCQ")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	return r, &popClient{t: t, r: r, c: newTestConn(1), group: group, topic: topic}
}

// sendInner sends n messages numbered from first as one inner batch to queue 0.
func (p *popClient) sendInner(first, n int) {
	p.t.Helper()
	resp := p.call(batchSendReq(p.topic, 0, first, n, fmt.Sprintf("UNIQ_KEY\x01B%d\x02", first)))
	require.EqualValues(p.t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(p.t, fmt.Sprint(first), ext(p.t, resp, "queueOffset"))
}

// innerBodies are the bodies of the messages of a batch body.
func innerBodies(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	it := codec.NewBatchIterator([]byte(body))
	var e codec.BatchEntry
	for it.Next(&e) {
		out = append(out, string(e.Body))
	}
	require.NoError(t, it.Err())
	return out
}

// popRecords pops as popClient.pop does and also returns the records' sysFlag
// and properties.
func (p *popClient) popRecords(max int, invisible int64) ([]popMsg, []codec.Message, string) {
	p.t.Helper()
	ms, hdr := p.pop(max, invisible, false)
	if len(ms) == 0 {
		return nil, nil, ""
	}
	// Decode again for what popMsg leaves out.
	var recs []codec.Message
	resp := p.lastBody
	for len(resp) > 0 {
		var m codec.Message
		n, err := codec.DecodeRecord(resp, &m)
		require.NoError(p.t, err)
		resp = resp[n:]
		recs = append(recs, m)
	}
	return ms, recs, hdr.MsgOffsetInfo
}

// TestPopBatchCQ: POP on a BatchCQ topic works on units, as Java's
// PopMessageProcessor does over a BatchConsumeQueue: an inner batch is one
// popped message (its record whole, numbered by its first queue offset, the
// client does not unwrap it), its messages count against maxMsgNums, the
// checkpoint and msgOffsetInfo carry one offset per unit, the consumer offset
// moves past the whole batch, ACK_MESSAGE and BATCH_ACK_MESSAGE of the unit's
// offset ack it, and an unacked batch (also one whose invisible time was
// changed) comes back once through the retry topic as one plain message
// with the batch's body (Java's store refuses to put it there).
func TestPopBatchCQ(t *testing.T) {
	r, p := batchPopClient(t, "PopBG", "PopB")
	p.sendInner(0, 3) // offsets 0-2
	p.sendInner(3, 2) // 3-4
	p.send("s5")      // a single message: offset 5
	p.sendInner(6, 4) // 6-9
	p.sendInner(10, 2)
	waitQueued(r.tb(), "PopB", 12)

	// The first unit goes whole however many messages it holds; the second
	// would pass maxMsgNums.
	first, recs, info := p.popRecords(2, 2000)
	require.Len(t, first, 1)
	require.EqualValues(t, 0, first[0].offset)
	require.Equal(t, []string{"m0", "m1", "m2"}, innerBodies(t, first[0].body))
	require.Equal(t, codec.SysFlagInnerBatch|codec.SysFlagNeedUnwrap, recs[0].SysFlag&(codec.SysFlagInnerBatch|codec.SysFlagNeedUnwrap))
	require.Equal(t, "0 0 0", info)
	require.EqualValues(t, 3, r.b.offsets.Query("PopBG", "PopB", 0), "past the whole batch")

	second, _, info := p.popRecords(32, 2000)
	require.Len(t, second, 4)
	require.Equal(t, []int64{3, 5, 6, 10}, []int64{second[0].offset, second[1].offset, second[2].offset, second[3].offset})
	require.Equal(t, "s5", second[1].body)
	require.Equal(t, "0 0 3,5,6,10", info, "one offset per unit")
	require.EqualValues(t, 12, r.b.offsets.Query("PopBG", "PopB", 0))

	p.ack(first[0])                  // batch 0
	p.batchAck(second[1], second[3]) // s5 and batch 10
	// Batch 6, not the checkpoint's first offset: a checkpoint the change
	// writes in the same millisecond as the POP's for the same first offset
	// has the same revive key and replaces it (in Java too).
	p.changeInvisible(second[2], 4000) // batch 6: back in 4 s
	// Batch 3 is left unacked: back in 2 s.
	retry := "%RETRY%PopBG_PopB"
	got := map[string]int{}
	// Until both came back, then a little longer: neither comes twice.
	var both time.Time
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && (both.IsZero() || time.Since(both) < 1500*time.Millisecond); {
		ms, recs, _ := p.popRecords(32, 60_000)
		for i, m := range ms {
			require.Equal(t, "1", m.retry, "only retries are left")
			require.EqualValues(t, 1, m.retried)
			require.Zero(t, recs[i].SysFlag&codec.SysFlagInnerBatch, "a plain message in the retry topic")
			require.NotZero(t, recs[i].SysFlag&codec.SysFlagNeedUnwrap, "its body still a batch")
			props := codec.ParseProperties(recs[i].Properties)
			require.NotContains(t, props, codec.PropInnerNum)
			require.NotContains(t, props, codec.PropInnerBase)
			got[fmt.Sprint(innerBodies(t, m.body))]++
			p.ack(m)
		}
		if len(got) == 2 && both.IsZero() {
			both = time.Now()
		}
		if len(ms) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	require.Equal(t, map[string]int{"[m3 m4]": 1, "[m6 m7 m8 m9]": 1}, got, "the unacked batches, once each")
	require.EqualValues(t, 2, r.st.MaxOffsetInQueue(retry, 0), "one retry message per batch")
}

// TestOrderedPopBatchCQ: an ordered POP's batch of units, all acked, moves
// the consumer offset past the last unit's inner batch, so the next ordered
// POP gets what came after it. Java commits the last unit's offset plus one,
// inside that batch, and hands the batch out again for ever.
func TestOrderedPopBatchCQ(t *testing.T) {
	r, p := batchPopClient(t, "PopOBG", "PopOB")
	p.sendInner(0, 3)
	p.sendInner(3, 2)
	waitQueued(r.tb(), "PopOB", 5)
	ms, _ := p.pop(32, 60_000, true)
	require.Len(t, ms, 2)
	require.Equal(t, []int64{0, 3}, []int64{ms[0].offset, ms[1].offset})
	p.ack(ms[0])
	require.EqualValues(t, 3, r.b.offsets.Query("PopOBG", "PopOB", 0), "the first unacked unit")
	p.ack(ms[1])
	require.EqualValues(t, 5, r.b.offsets.Query("PopOBG", "PopOB", 0), "past the last batch")

	again, _ := p.pop(32, 60_000, true)
	require.Empty(t, again, "nothing new, the acked batch not again")
	p.sendInner(5, 2)
	waitQueued(r.tb(), "PopOB", 7)
	next, _ := p.pop(32, 60_000, true)
	require.Len(t, next, 1)
	require.EqualValues(t, 5, next[0].offset)
	require.Equal(t, []string{"m5", "m6"}, innerBodies(t, next[0].body))
}

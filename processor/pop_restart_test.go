package processor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/processor/pop"
	"rmqd/remoting"
)

// popClient drives a restartable broker's POP handlers as a 5.x client does.
type popClient struct {
	t     *testing.T
	r     *restartable
	c     *testConn
	group string
	topic string
	// lastBody is the body of the last POP's answer.
	lastBody []byte
}

// popMsg is one popped message with its receipt handle.
type popMsg struct {
	body    string
	handle  string
	offset  int64 // queue offset in the topic it was read from
	retried int32 // reconsumeTimes
	retry   string
}

func (p *popClient) call(req *codec.RemotingCommand) *codec.RemotingCommand {
	p.t.Helper()
	resp, err := p.r.b.Handlers()[req.Code].ProcessRequest(context.Background(), p.c, req)
	if err != nil && !errors.Is(err, remoting.ErrAnsweredLater) {
		p.t.Fatalf("code %d: %v", req.Code, err)
	}
	require.NotNil(p.t, resp)
	return resp
}

func (p *popClient) send(body string) {
	p.t.Helper()
	resp := p.call(sendReq(p.topic, 0, []byte(body), "UNIQ_KEY\x01"+body+"\x02"))
	require.EqualValues(p.t, codec.RespSuccess, resp.Code, resp.Remark)
}

// pop pops at most max messages of queue 0 (and the retry topic), without
// waiting.
func (p *popClient) pop(max int, invisible int64, order bool) ([]popMsg, *pop.PopResponseHeader) {
	p.t.Helper()
	req := codec.NewRequest(codec.ReqPopMessage)
	for _, kv := range [][2]string{{"consumerGroup", p.group}, {"topic", p.topic}, {"queueId", "-1"},
		{"maxMsgNums", fmt.Sprint(max)}, {"invisibleTime", fmt.Sprint(invisible)}, {"pollTime", "0"},
		{"bornTime", fmt.Sprint(time.Now().UnixMilli())}, {"initMode", "0"}, {"expType", "TAG"}, {"exp", "*"},
		{"order", fmt.Sprint(order)}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp := p.call(req)
	hdr, _ := resp.CustomHeader.(*pop.PopResponseHeader)
	p.lastBody = resp.Body
	if resp.Code != codec.RespSuccess {
		return nil, hdr
	}
	var out []popMsg
	var m codec.Message
	ckOffset := map[string]int64{}
	for body := resp.Body; len(body) > 0; {
		n, err := codec.DecodeRecord(body, &m)
		require.NoError(p.t, err)
		body = body[n:]
		pm := popMsg{body: string(m.Body), offset: m.QueueOffset, retried: m.ReconsumeTimes}
		if ck, ok := codec.PropertyValue(m.Properties, "POP_CK"); ok {
			pm.handle = ck
			ei, err := pop.ParseExtraInfo(ck)
			require.NoError(p.t, err)
			pm.retry = ei.Retry
		} else {
			if _, ok := ckOffset[m.Topic]; !ok {
				ckOffset[m.Topic] = m.QueueOffset
			}
			pm.handle = pop.BuildExtraInfo(ckOffset[m.Topic], hdr.PopTime, hdr.InvisibleTime, hdr.ReviveQid, m.Topic,
				p.r.b.conf().BrokerName, m.QueueID, m.QueueOffset)
			pm.retry = "0"
		}
		out = append(out, pm)
	}
	return out, hdr
}

func (p *popClient) ack(m popMsg) {
	p.t.Helper()
	ei, err := pop.ParseExtraInfo(m.handle)
	require.NoError(p.t, err)
	req := codec.NewRequest(codec.ReqAckMessage)
	topic := p.topic
	if m.retry == "1" {
		topic = "%RETRY%" + p.group + "_" + p.topic
	}
	for _, kv := range [][2]string{{"consumerGroup", p.group}, {"topic", topic}, {"queueId", fmt.Sprint(ei.QueueID)},
		{"offset", fmt.Sprint(m.offset)}, {"extraInfo", m.handle}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp := p.call(req)
	require.EqualValues(p.t, codec.RespSuccess, resp.Code, resp.Remark)
}

// batchAck acks ms (one POP's messages of the topic) in one BATCH_ACK_MESSAGE.
func (p *popClient) batchAck(ms ...popMsg) {
	p.t.Helper()
	ei, err := pop.ParseExtraInfo(ms[0].handle)
	require.NoError(p.t, err)
	bits := make([]byte, 8)
	for _, m := range ms {
		d := m.offset - ei.CkQueueOffset
		bits[d/8] |= 1 << (d % 8)
	}
	req := codec.NewRequest(codec.ReqBatchAckMessage)
	req.Body = []byte(fmt.Sprintf(`{"brokerName":%q,"acks":[{"c":%q,"t":%q,"r":%q,"so":%d,"q":%d,"rq":%d,"pt":%d,"it":%d,"b":%q}]}`,
		p.r.b.conf().BrokerName, p.group, p.topic, ms[0].retry, ei.CkQueueOffset, ei.QueueID, ei.ReviveQid, ei.PopTime,
		ei.InvisibleTime, base64.StdEncoding.EncodeToString(bits)))
	resp := p.call(req)
	require.EqualValues(p.t, codec.RespSuccess, resp.Code, resp.Remark)
}

func (p *popClient) changeInvisible(m popMsg, invisible int64) {
	p.t.Helper()
	ei, err := pop.ParseExtraInfo(m.handle)
	require.NoError(p.t, err)
	req := codec.NewRequest(codec.ReqChangeMessageInvisibletime)
	for _, kv := range [][2]string{{"consumerGroup", p.group}, {"topic", p.topic}, {"queueId", fmt.Sprint(ei.QueueID)},
		{"offset", fmt.Sprint(m.offset)}, {"extraInfo", m.handle}, {"invisibleTime", fmt.Sprint(invisible)}} {
		req.Ext.Set(kv[0], kv[1])
	}
	resp := p.call(req)
	require.EqualValues(p.t, codec.RespSuccess, resp.Code, resp.Remark)
}

// drain pops (and acks) until until, counting the bodies delivered.
func (p *popClient) drain(got map[string]int, until time.Time) {
	p.t.Helper()
	for time.Now().Before(until) {
		ms, _ := p.pop(32, 60_000, false)
		for _, m := range ms {
			got[m.body]++
			if m.retry != "0" {
				require.EqualValues(p.t, 1, m.retried, "%s comes back through the retry topic", m.body)
			}
			p.ack(m)
		}
		if len(ms) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestPopSurvivesRestart: across a clean stop and a kill, a popped message
// nobody acked comes back (through the retry topic, once) after its
// invisible time, acked ones (ACK_MESSAGE and BATCH_ACK_MESSAGE) never, one
// whose invisible time was changed only after the new time, and no message
// of the topic is skipped or popped twice.
func TestPopSurvivesRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			r := newRestartable(t, func(c *BrokerConfig) {
				c.FlushConsumerOffsetInterval = 100
				c.ReviveQueueNum = 2
			})
			p := &popClient{t: t, r: r, c: newTestConn(1), group: "PopRG", topic: "PopR"}
			require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("PopR", 1)).Code)
			for i := range 6 {
				p.send(fmt.Sprint("m", i))
			}
			waitQueued(r.tb(), "PopR", 6)
			first, _ := p.pop(3, 3000, false)
			require.Len(t, first, 3)
			second, _ := p.pop(3, 3000, false)
			require.Len(t, second, 3)
			popped := time.Now()
			p.ack(first[0])                    // m0
			p.batchAck(first[1])               // m1
			p.changeInvisible(second[0], 9000) // m3: visible again 9 s from now
			p.batchAck(second[1])              // m4
			// m2 and m5 are left unacked.
			time.Sleep(300 * time.Millisecond) // the consumer offset flush (100 ms) has run
			if kill {
				r.kill()
			} else {
				r.stop()
			}
			time.Sleep(time.Until(popped.Add(3500 * time.Millisecond)))
			r.open()
			p.send("m6") // after the restart: popped as the next of the queue
			got := map[string]int{}
			p.drain(got, popped.Add(8*time.Second))
			require.Equal(t, map[string]int{"m2": 1, "m5": 1, "m6": 1}, got,
				"unacked ones come back once, acked ones never, m3 not before its new time")
			p.drain(got, popped.Add(15*time.Second))
			require.Equal(t, map[string]int{"m2": 1, "m3": 1, "m5": 1, "m6": 1}, got, "m3 after its new time")
			require.EqualValues(t, 7, r.b.offsets.Query("PopRG", "PopR", 0), "every message of the topic popped once")
		})
	}
}

// TestOrderedPopSurvivesRestart: an ordered queue's batch in flight
// (consumerOrderInfo.json) still blocks the queue after a restart until its
// invisible time passes, then the unacked rest comes again, counted.
func TestOrderedPopSurvivesRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			r := newRestartable(t, func(c *BrokerConfig) { c.FlushConsumerOffsetInterval = 100 })
			p := &popClient{t: t, r: r, c: newTestConn(1), group: "PopOG", topic: "PopO"}
			require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("PopO", 1)).Code)
			for i := range 3 {
				p.send(fmt.Sprint("m", i))
			}
			waitQueued(r.tb(), "PopO", 3)
			batch, _ := p.pop(2, 4000, true)
			require.Len(t, batch, 2)
			popped := time.Now()
			p.ack(batch[0])
			time.Sleep(300 * time.Millisecond) // the consumer offset flush (100 ms) has run
			if kill {
				r.kill()
			} else {
				r.stop()
			}
			r.open()
			ms, _ := p.pop(2, 4000, true)
			require.Empty(t, ms, "m1 is in flight: the queue stays blocked")
			var again []popMsg
			require.Eventually(t, func() bool {
				ms, hdr := p.pop(2, 4000, true)
				if len(ms) == 0 {
					return false
				}
				again = ms
				require.NotNil(t, hdr)
				require.Equal(t, "0 qo0%1 1;0 0 0", hdr.OrderCountInfo, "m1 counted as delivered once before")
				return true
			}, 10*time.Second, 100*time.Millisecond)
			require.GreaterOrEqual(t, time.Since(popped), 3900*time.Millisecond, "not before the batch's invisible time")
			require.Equal(t, []string{"m1", "m2"}, []string{again[0].body, again[1].body}, "the rest, in order")
		})
	}
}

// TestReviveProgressSurvivesRestart: a checkpoint revived before a stop or a
// kill is not revived again after it (the revive offset was flushed), and the
// message comes once.
func TestReviveProgressSurvivesRestart(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill=%v", kill), func(t *testing.T) {
			r := newRestartable(t, func(c *BrokerConfig) {
				c.FlushConsumerOffsetInterval = 100
				c.ReviveQueueNum = 1
			})
			p := &popClient{t: t, r: r, c: newTestConn(1), group: "PopVG", topic: "PopV"}
			require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("PopV", 1)).Code)
			p.send("m0")
			waitQueued(r.tb(), "PopV", 1)
			ms, _ := p.pop(1, 2000, false)
			require.Len(t, ms, 1)
			retry := "%RETRY%PopVG_PopV"
			require.Eventually(t, func() bool { return r.st.MaxOffsetInQueue(retry, 0) == 1 }, 10*time.Second, 50*time.Millisecond)
			time.Sleep(300 * time.Millisecond) // the revive offset is flushed
			if kill {
				r.kill()
			} else {
				r.stop()
			}
			r.open()
			time.Sleep(3 * time.Second) // revive rounds run
			require.EqualValues(t, 1, r.st.MaxOffsetInQueue(retry, 0), "revived once")
			got := map[string]int{}
			p.drain(got, time.Now().Add(time.Second))
			require.Equal(t, map[string]int{"m0": 1}, got)
		})
	}
}

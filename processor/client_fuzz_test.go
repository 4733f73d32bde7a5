package processor

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"rmqd/codec"
)

// FuzzClientSession drives the wire inputs changed of late through the
// broker's handlers on one connection: a heartbeat (V1 or V2: fingerprint,
// withoutSub), the same heartbeat again as V2 without subscriptions, then one
// request of a client or admin code (POP NOTIFICATION, topic attributes,
// group retry policies, timer and delay properties, QUERY_MESSAGE keys).
// Nothing may panic, and a heartbeat answered success says IS_SUB_CHANGE.
func FuzzClientSession(f *testing.F) {
	codes := []int32{codec.ReqNotification, codec.ReqPollingInfo, codec.ReqPopMessage, codec.ReqUpdateAndCreateTopic,
		codec.ReqUpdateAndCreateTopicList, codec.ReqUpdateAndCreateSubscriptiongroup,
		codec.ReqUpdateAndCreateSubscriptiongroupList, codec.ReqSendMessage, codec.ReqSendMessageV2,
		codec.ReqQueryMessage, codec.ReqUnregisterClient, codec.ReqHeartBeat}
	hb := []byte(`{"clientID":"c1","heartbeatFingerprint":42,"consumerDataSet":[{"groupName":"g","consumeType":"CONSUME_PASSIVELY",` +
		`"messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionDataSet":[{"topic":"T","subString":"*","expressionType":"TAG"}]}]}`)
	hbV2 := []byte(`{"clientID":"c1","heartbeatFingerprint":42,"withoutSub":true,"consumerDataSet":[{"groupName":"g"}]}`)
	f.Add(uint8(0), hb, "consumerGroup=g\ntopic=T\nqueueId=-1\npollTime=5\nbornTime=1", []byte(nil))
	f.Add(uint8(0), hbV2, "consumerGroup=g\ntopic=T\nqueueId=2\npollTime=0\nbornTime=0\norder=true\nattemptId=x", []byte(nil))
	f.Add(uint8(1), hb, "consumerGroup=g\ntopic=T\nqueueId=0", []byte(nil))
	f.Add(uint8(3), hb, "topic=A\nreadQueueNums=1\nwriteQueueNums=1\nperm=6\nattributes=+message.type=FIFO,+queue.type=SimpleCQ", []byte(nil))
	f.Add(uint8(4), hb, "", []byte(`{"topicConfigList":[{"topicName":"B","readQueueNums":1,"writeQueueNums":1,"perm":6,"attributes":{"+message.type":"DELAY","-x":""}}]}`))
	f.Add(uint8(5), hb, "", []byte(`{"groupName":"G2","retryQueueNums":1,"groupRetryPolicy":{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":-1,"max":0,"multiplier":0}}}`))
	f.Add(uint8(6), hb, "", []byte(`{"groupConfigList":[{"groupName":"G3","attributes":{"+a":"b"}}]}`))
	f.Add(uint8(7), hb, "producerGroup=P\ntopic=T\ndefaultTopic=TBW102\ndefaultTopicQueueNums=4\nqueueId=0\nsysFlag=0\nbornTimestamp=1\nflag=0\nproperties=TIMER_DELAY_SEC\x0110\x02DELAY\x01x\x02", []byte("b"))
	f.Add(uint8(8), hb, "a=P\nb=T\nc=TBW102\nd=4\ne=0\nf=0\ng=1\nh=0\ni=TIMER_DELIVER_MS\x019223372036854775807\x02\nj=0", []byte("b"))
	f.Add(uint8(9), hb, "topic=T\nkey=k\nmaxNum=-1\nbeginTimestamp=9223372036854775807\nendTimestamp=-9223372036854775808", []byte(nil))
	f.Add(uint8(10), hbV2, "clientID=c1\nproducerGroup=\nconsumerGroup=g", []byte(nil))
	f.Add(uint8(11), []byte(`{"clientID":"c1","heartbeatFingerprint":"0x","withoutSub":"true"}`), "", hbV2)
	b := newTestBroker(f, nil)
	handlers := b.Handlers()
	c := newTestConn(1)
	for _, req := range []*codec.RemotingCommand{createTopicReq("T", 4), {Code: codec.ReqHeartBeat, Body: hb}} {
		if resp, err := handlers[req.Code].ProcessRequest(context.Background(), c, req); err != nil || resp.Code != codec.RespSuccess {
			f.Fatalf("setup %d: %v %v", req.Code, resp, err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, heartbeat []byte, ext string, body []byte) {
		ctx := context.Background()
		for i, hbBody := range [][]byte{heartbeat, withoutSub(heartbeat)} {
			if hbBody == nil {
				continue
			}
			req := codec.NewRequest(codec.ReqHeartBeat)
			req.Body = hbBody
			resp, err := handlers[codec.ReqHeartBeat].ProcessRequest(ctx, c, req)
			if err == nil && resp != nil && resp.Code == codec.RespSuccess {
				if v, _ := resp.Ext.Get("IS_SUB_CHANGE"); v != "true" && v != "false" {
					t.Fatalf("heartbeat %d: IS_SUB_CHANGE %q", i, v)
				}
			}
		}
		req := codec.NewRequest(codes[int(which)%len(codes)])
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				req.Ext.Set(k, v)
			}
		}
		// A long poll is parked until its time: keep those short.
		if v, ok := req.Ext.Get("pollTime"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n > 50 {
				req.Ext.Set("pollTime", "10")
			}
		}
		req.Body = body
		if _, err := handlers[req.Code].ProcessRequest(ctx, c, req); err != nil {
			t.Logf("code %d: %v", req.Code, err)
		}
	})
}

// withoutSub is a decodable heartbeat as a V2 one that leaves its
// subscriptions out, or nil.
func withoutSub(body []byte) []byte {
	hb, err := codec.DecodeHeartbeatData(body)
	if err != nil {
		return nil
	}
	hb.WithoutSub = true
	for i := range hb.ConsumerDataSet {
		hb.ConsumerDataSet[i].SubscriptionDataSet = nil
	}
	out, err := codec.MarshalBody(hb)
	if err != nil {
		return nil
	}
	return out
}

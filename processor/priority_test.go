package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// Java 5.4's priority messages (SendMessageProcessor): a message naming a
// priority and no other type goes to the queue of that number, the send
// topic's last at most, whatever the topic's type; a transaction, delay or
// FIFO message loses the property; one Integer.parseInt cannot read keeps it
// and the header's queue.
func TestPrioritySend(t *testing.T) {
	b := newTestBroker(t, nil)
	makePriorityTopic(t, b, "PrioT")
	for _, tc := range []struct {
		topic, props string
		wantQ        string
		kept         bool
	}{
		{"PrioT", "_SYS_MSG_PRIORITY_\x012\x02", "2", true},
		{"PrioT", "_SYS_MSG_PRIORITY_\x019\x02", "3", true},
		{"PrioT", "_SYS_MSG_PRIORITY_\x010\x02", "0", true},
		{"PlainT", "_SYS_MSG_PRIORITY_\x013\x02", "3", true},
		{"PrioT", "_SYS_MSG_PRIORITY_\x012\x02__SHARDINGKEY\x01k\x02", "1", false},
		{"PrioT", "_SYS_MSG_PRIORITY_\x012\x02TIMER_DELAY_SEC\x011\x02", "1", false},
		{"PrioT", "_SYS_MSG_PRIORITY_\x01x\x02", "1", true},
		{"PrioT", "_SYS_MSG_PRIORITY_\x01-1\x02", "1", true},
	} {
		resp := sendOK(t, b, sendReq(tc.topic, 1, []byte("p"), tc.props))
		_, clOff, err := compat.DecodeOffsetMsgID(ext(t, resp, "msgId"))
		require.NoError(t, err)
		if strings.Contains(tc.props, "TIMER") {
			continue // parked in the timer's topic
		}
		stored, err := b.st.LookMessageByOffset(clOff)
		require.NoError(t, err)
		require.Equal(t, tc.wantQ, fmt.Sprint(stored.QueueID), "%q", tc.props)
		_, has := codec.PropertyValue(stored.Properties, codec.PropPriority)
		require.Equal(t, tc.kept, has, "%q stored %q", tc.props, stored.Properties)
	}
}

// message.type=PRIORITY and the group attribute priority.factor are taken
// (Java 5.4's TopicAttributes and SubscriptionGroupAttributes), the factor
// within 0-100.
func TestPriorityAttributes(t *testing.T) {
	_, remark := alterTopicAttrs(true, nil, []attrMod{{"+message.type", "PRIORITY"}}, false)
	require.Empty(t, remark)
	_, remark = alterTopicAttrs(true, nil, []attrMod{{"+message.type", "HEAVY"}}, false)
	require.Equal(t, "value is not in set: [UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]", remark)
	attrs, remark := alterAttrs(groupAttrs, true, nil, []attrMod{{"+priority.factor", "30"}})
	require.Empty(t, remark)
	require.Equal(t, 30, priorityFactor(SubscriptionGroupConfig{Attributes: attrs}))
	_, remark = alterAttrs(groupAttrs, false, attrs, []attrMod{{"+priority.factor", "101"}})
	require.Equal(t, "value is not in range(0, 100)", remark)
	require.Equal(t, 100, priorityFactor(SubscriptionGroupConfig{}))
}

// makePriorityTopic makes a 4-queue message.type=PRIORITY topic.
func makePriorityTopic(t *testing.T, b *testBroker, topic string) {
	t.Helper()
	req := createTopicReq(topic, 4)
	req.Ext.Set("attributes", "+message.type=PRIORITY")
	resp, err := b.handleUpdateAndCreateTopic(context.Background(), newTestConn(2), req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
}

// A POP of a priority topic reads the highest queue first under
// priorityOrderAsc (the default: queue 0 is the lowest priority), queue 0
// first without it, when the group's priority.factor is 100 (the default).
func TestPriorityPop(t *testing.T) {
	for _, asc := range []bool{true, false} {
		b := newTestBroker(t, func(c *BrokerConfig) { c.Pop.PriorityOrderAsc = asc })
		want := "3 3 3 2 2 2 1 1 1 0 0 0"
		if !asc {
			want = "0 0 0 1 1 1 2 2 2 3 3 3"
		}
		require.Equal(t, strings.Split(want, " "), popPriorities(t, b), "priorityOrderAsc=%v", asc)
	}
}

// popPriorities sends three messages of each priority 0-3 to a new priority
// topic and pops them one at a time: their bodies (the priority) in POP order.
func popPriorities(t *testing.T, b *testBroker) []string {
	t.Helper()
	ctx := context.Background()
	makePriorityTopic(t, b, "PrioP")
	for p := range 4 {
		for range 3 {
			sendOK(t, b, sendReq("PrioP", -1, []byte(fmt.Sprint(p)), fmt.Sprintf("_SYS_MSG_PRIORITY_\x01%d\x02", p)))
		}
	}
	c := newTestConn(5)
	popOne := func(group string) string {
		t.Helper()
		req := codec.NewRequest(codec.ReqPopMessage)
		for _, kv := range [][2]string{{"consumerGroup", group}, {"topic", "PrioP"}, {"queueId", "-1"},
			{"maxMsgNums", "1"}, {"invisibleTime", "60000"}, {"pollTime", "0"}, {"bornTime", fmt.Sprint(time.Now().UnixMilli())},
			{"initMode", "0"}, {"expType", "TAG"}, {"exp", "*"}, {"order", "false"}} {
			req.Ext.Set(kv[0], kv[1])
		}
		resp, err := b.Handlers()[req.Code].ProcessRequest(ctx, c, req)
		if err != nil && !errors.Is(err, remoting.ErrAnsweredLater) {
			t.Fatal(err)
		}
		require.NotNil(t, resp)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		var m codec.Message
		_, err = codec.DecodeRecord(resp.Body, &m)
		require.NoError(t, err)
		return string(m.Body)
	}
	var got []string
	for range 12 {
		got = append(got, popOne("PrioG"))
	}
	return got
}

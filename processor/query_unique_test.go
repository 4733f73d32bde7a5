package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// TestQueryMessageUniqueFlag: _UNIQUE_KEY_QUERY caps maxNum at the store's
// defaultQueryMaxNum (a broker.conf key, 32 by default) only when it is
// exactly "true", as QueryMessageProcessor compares it; "TRUE" is a key query.
func TestQueryMessageUniqueFlag(t *testing.T) {
	b := newTestBroker(t, func(c *BrokerConfig) {
		_, err := c.ApplyProperties(map[string]string{"defaultQueryMaxNum": "3"})
		require.NoError(t, err)
	})
	ctx := context.Background()
	c := newTestConn(7)
	for i := range 5 {
		resp, err := b.handleSendMessage(ctx, c, sendReq("UqT", 0, []byte(fmt.Sprint(i)), "KEYS\x01same\x02"))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code)
	}
	count := func(flag string) int {
		q := codec.NewRequest(codec.ReqQueryMessage)
		for _, kv := range [][2]string{{"topic", "UqT"}, {"key", "same"}, {"maxNum", "10"}, {"beginTimestamp", "0"},
			{"endTimestamp", i64s(time.Now().Add(time.Hour).UnixMilli())}} {
			q.Ext.Set(kv[0], kv[1])
		}
		if flag != "" {
			q.Ext.Set("_UNIQUE_KEY_QUERY", flag)
		}
		r, _ := b.handleQueryMessage(ctx, c, q)
		if r.Code != codec.RespSuccess {
			return 0
		}
		return len(decodeBody(t, r.Body))
	}
	require.Eventually(t, func() bool { return count("") == 5 }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, 3, count("true"))
	require.Equal(t, 5, count("TRUE"))
	require.Equal(t, 5, count(" true"))
	require.EqualValues(t, 32, store.DefaultConfig().DefaultQueryMaxNum)
}

// TestViewMessageByIDMissing: an offset with no record (deleted, beyond the
// end, or inside a record) is SYSTEM_ERROR with Java's remark.
func TestViewMessageByIDMissing(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(7)
	resp, err := b.handleSendMessage(ctx, c, sendReq("ViewT", 0, []byte("v"), ""))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, resp.Code)
	for _, off := range []int64{-1, 1, 1 << 40} {
		v := codec.NewRequest(codec.ReqViewMessageById)
		v.Ext.Set("offset", i64s(off))
		r, _ := b.handleViewMessageByID(ctx, c, v)
		require.EqualValues(t, codec.RespSystemError, r.Code, off)
		require.Equal(t, fmt.Sprintf("can not find message by the offset, %d", off), r.Remark)
	}
}

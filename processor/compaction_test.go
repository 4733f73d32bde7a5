package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// TestCompactionTopicThroughPull: a cleanup.policy=COMPACTION topic takes
// only messages with KEYS (SendMessageProcessor's check), and once compacted a
// pull at an offset compacted away answers the next kept message, offsets
// unchanged (docs/en/Example_Compaction_Topic.md).
func TestCompactionTopicThroughPull(t *testing.T) {
	b := newTestBrokerWith(t, nil, func(c *store.Config) {
		c.CompactionCqMappedFileSize = 10 * 46 // nine messages per compaction file
		c.CompactionMappedFileSize = 1
	}, nil)
	ctx := context.Background()
	resp := updateTopicAttrs(t, b, "CompT", "+cleanup.policy=COMPACTION")
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	c := newTestConn(1)

	resp, err := b.handleSendMessage(ctx, c, sendReq("CompT", 0, []byte("x"), "TAGS\x01a\x02"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespMessageIllegal, resp.Code)
	require.Equal(t, "Required message key is missing", resp.Remark)

	for i := range 20 {
		resp, err := b.handleSendMessage(ctx, c, sendReq("CompT", 0, []byte(fmt.Sprintf("v%d", i)),
			fmt.Sprintf("KEYS\x01k%d\x02", i%2)))
		require.NoError(t, err)
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("CompT", 0) == 20 }, 5e9, 1e7)
	require.NoError(t, b.st.CompactNow())

	// Files of 9, 9 and 2 messages: the first two compact to 16 (k0) and 17 (k1).
	pc := newTestConn(2)
	resp = pullOnce(t, b, pc, "G_comp", "CompT", 3)
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	msgs := decodeBody(t, resp.Body)
	var offs []int64
	var bodies []string
	for _, m := range msgs {
		offs = append(offs, m.QueueOffset)
		bodies = append(bodies, string(m.Body))
	}
	require.Equal(t, []int64{16, 17, 18, 19}, offs)
	require.Equal(t, []string{"v16", "v17", "v18", "v19"}, bodies)
	require.Equal(t, "20", ext(t, resp, "nextBeginOffset"))
	require.Equal(t, "0", ext(t, resp, "minOffset"))
	require.Equal(t, "20", ext(t, resp, "maxOffset"))
}

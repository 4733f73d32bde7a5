package pop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestPopResponseReturnActualRetryTopic: with the key on, a revived message is
// popped as stored, under its %RETRY% topic and without POP_CK
// (PopMessageProcessor adds the buffer unchanged).
func TestPopResponseReturnActualRetryTopic(t *testing.T) {
	h := newTestHost(t)
	h.topics["T"] = Topic{ReadQueueNums: 1, Perm: 6}
	h.cfg.PopResponseReturnActualRetryTopic = true
	s := startService(t, h)
	h.send(t, "T", 0, "m0", "a")
	c := newConn()
	p := popReq{topic: "T", group: "G", queue: -1, max: 32, invisible: 1000}
	_, _, ms := s.doPop(t, c, p)
	require.Len(t, ms, 1)

	got := s.waitPop(t, c, p, 1, 15*time.Second)
	require.Len(t, got, 1)
	require.Equal(t, "m0", string(got[0].m.Body))
	require.Equal(t, "%RETRY%G_T", got[0].m.Topic)
	require.Equal(t, int32(1), got[0].m.ReconsumeTimes)
	_, has := codec.PropertyValue(got[0].m.Properties, propPopCK)
	require.False(t, has, "the client builds the handle from the response header")
}

package processor

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/store"
)

// A slave's commitlog holds only what replication brought (Java's
// HookUtils.checkBeforePutMessage refuses every put on a SLAVE with
// SERVICE_NOT_AVAILABLE): a record its own requests wrote would put it off
// its master's offsets, and the next replicated bytes would no longer fit.
// POP's checkpoint, ACK's and CHANGE_INVISIBLE_TIME's revive records and a
// stored reply all go through the store, so none of them may write there.
func TestSlaveRequestsWriteNothingToTheCommitLog(t *testing.T) {
	r := newRestartable(t, nil)
	p := &popClient{t: t, r: r, c: newTestConn(1), group: "SlvG", topic: "SlvT"}
	require.EqualValues(t, codec.RespSuccess, p.call(createTopicReq("SlvT", 1)).Code)
	for i := range 4 {
		p.send(fmt.Sprint("m", i))
	}
	waitQueued(r.tb(), "SlvT", 4)
	popped, _ := p.pop(2, 60000, false) // as master: handles for the slave's ACK and CIT
	require.Len(t, popped, 2)

	r.b.setRole(RoleSlave, 1)
	end := r.st.MaxPhyOffset()

	req := codec.NewRequest(codec.ReqAckMessage)
	ack := func(m popMsg) *codec.RemotingCommand {
		req = codec.NewRequest(codec.ReqAckMessage)
		for _, kv := range [][2]string{{"consumerGroup", p.group}, {"topic", p.topic}, {"queueId", "0"},
			{"offset", fmt.Sprint(m.offset)}, {"extraInfo", m.handle}} {
			req.Ext.Set(kv[0], kv[1])
		}
		return p.call(req)
	}
	// Java answers the ack SUCCESS and logs the refused put.
	require.EqualValues(t, codec.RespSuccess, ack(popped[0]).Code)
	require.Equal(t, end, r.st.MaxPhyOffset(), "ACK wrote to the slave's commitlog")

	req = codec.NewRequest(codec.ReqChangeMessageInvisibletime)
	for _, kv := range [][2]string{{"consumerGroup", p.group}, {"topic", p.topic}, {"queueId", "0"},
		{"offset", fmt.Sprint(popped[1].offset)}, {"extraInfo", popped[1].handle}, {"invisibleTime", "9000"}} {
		req.Ext.Set(kv[0], kv[1])
	}
	// Java: the new checkpoint is refused, SYSTEM_ERROR without a remark.
	require.EqualValues(t, codec.RespSystemError, p.call(req).Code)
	require.Equal(t, end, r.st.MaxPhyOffset(), "CHANGE_INVISIBLE_TIME wrote to the slave's commitlog")

	// Without a stored checkpoint nothing is handed out (docs/replication.md).
	ms, _ := p.pop(2, 60000, false)
	require.Empty(t, ms)
	require.Equal(t, end, r.st.MaxPhyOffset(), "POP's checkpoint went to the slave's commitlog")

	// The store itself refuses, whoever asks.
	res := r.st.PutMessage(context.Background(), &codec.Message{Topic: "SlvT", Body: []byte("x")})
	require.Equal(t, store.PutServiceNotAvailable, res.Status)
	require.Equal(t, end, r.st.MaxPhyOffset())
}

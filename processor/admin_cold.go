package processor

import (
	"bytes"
	"context"
	"strconv"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

// handleUpdateColdDataFlowCtrConfig is UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001):
// the body is a properties text of group=threshold (bytes per period); an
// entry whose threshold is not a number is skipped, as Java logs and skips it.
func (b *Broker) handleUpdateColdDataFlowCtrConfig(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if len(req.Body) > 0 {
		props, err := compat.ParseProperties(bytes.NewReader(req.Body))
		if err != nil {
			return codec.NewResponse(req, codec.RespSystemError, "string2Properties error"), nil
		}
		for g, v := range props {
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.log.Warn("cold data flow control threshold is not a number", "group", g, "value", v, "remote", c.RemoteAddr())
				continue
			}
			b.cold.setGroup(g, t)
		}
		b.log.Info("cold data flow control thresholds updated", "entries", len(props), "remote", c.RemoteAddr())
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleRemoveColdDataFlowCtrConfig is REMOVE_COLD_DATA_FLOW_CTR_CONFIG
// (2002): the body is the group whose threshold goes.
func (b *Broker) handleRemoveColdDataFlowCtrConfig(_ context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if len(req.Body) > 0 {
		b.cold.removeGroup(string(req.Body))
		b.log.Info("cold data flow control threshold removed", "group", string(req.Body), "remote", c.RemoteAddr())
	}
	return codec.NewResponse(req, codec.RespSuccess, ""), nil
}

// handleGetColdDataFlowCtrInfo is GET_COLD_DATA_FLOW_CTR_INFO (2003): the
// counters and thresholds as Java's JSON (mqadmin getColdDataFlowCtrInfo).
func (b *Broker) handleGetColdDataFlowCtrInfo(_ context.Context, _ remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = b.cold.infoJSON(b.conf())
	return resp, nil
}

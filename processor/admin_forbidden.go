package processor

import (
	"context"
	"fmt"

	"rmqd/codec"
	"rmqd/processor/meta"
	"rmqd/remoting"
)

// groupForbidden is Java's GroupForbidden body (fastjson's field order).
type groupForbidden struct {
	Group    string `json:"group"`
	Readable bool   `json:"readable"`
	Topic    string `json:"topic"`
}

// handleUpdateAndGetGroupForbidden is UPDATE_AND_GET_GROUP_FORBIDDEN
// (AdminBrokerProcessor.updateAndGetGroupForbidden): readable, when given,
// bans (false) or lets (true) the group read the topic; the answer is the ban
// in force. Like Java, neither group nor topic need exist.
func (b *Broker) handleUpdateAndGetGroupForbidden(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.UpdateGroupForbiddenRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	if h.Readable != nil {
		if err := b.groups.UpdateForbidden(h.Group, h.Topic, meta.IndexPermRead, !*h.Readable); err != nil {
			return nil, err
		}
		b.log.Info("group forbidden updated", "group", h.Group, "topic", h.Topic, "readable", *h.Readable,
			"remote", c.RemoteAddr())
	}
	body, err := codec.MarshalBody(groupForbidden{Group: h.Group, Topic: h.Topic,
		Readable: !b.groups.Forbidden(h.Group, h.Topic, meta.IndexPermRead)})
	if err != nil {
		return nil, fmt.Errorf("encode group forbidden: %w", err)
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

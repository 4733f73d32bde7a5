package processor

import (
	"context"
	"sort"

	"rmqd/codec"
	"rmqd/remoting"
)

// producerInfoJSON is ProducerInfo as fastjson writes it (fields in
// alphabetical order, the language enum by name).
type producerInfoJSON struct {
	ClientID            string `json:"clientId"`
	Language            string `json:"language"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	RemoteIP            string `json:"remoteIP"`
	Version             int32  `json:"version"`
}

// handleGetAllProducerInfo is GET_ALL_PRODUCER_INFO (328), which
// rocketmq-exporter polls: ProducerTableInfo, every producer group's
// registered clients.
func (b *Broker) handleGetAllProducerInfo(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	data := map[string][]producerInfoJSON{}
	b.producers.Each(func(group string, ch *ClientChannel) {
		addr := ""
		if a := ch.Conn.RemoteAddr(); a != nil {
			addr = a.String()
		}
		data[group] = append(data[group], producerInfoJSON{ClientID: ch.ClientID, Language: languageName(ch.Language),
			LastUpdateTimestamp: ch.LastUpdate.UnixMilli(), RemoteIP: addr, Version: ch.Version})
	})
	for _, list := range data {
		sort.Slice(list, func(i, j int) bool { return list[i].ClientID < list[j].ClientID })
	}
	body, err := codec.MarshalBody(struct {
		Data map[string][]producerInfoJSON `json:"data"`
	}{data})
	if err != nil {
		return nil, err
	}
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = body
	return resp, nil
}

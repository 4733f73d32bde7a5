package processor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// GET_ALL_PRODUCER_INFO answers ProducerTableInfo as fastjson writes it.
func TestGetAllProducerInfo(t *testing.T) {
	b := newTestBroker(t, nil)
	c := newTestConn(4242)
	req := codec.NewRequest(codec.ReqGetAllProducerInfo)
	r, err := b.Handlers()[codec.ReqGetAllProducerInfo].ProcessRequest(context.Background(), c, req)
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.JSONEq(t, `{"data":{}}`, string(r.Body))

	before := time.Now().UnixMilli()
	b.producers.Register("PG", ClientChannel{Conn: c, ClientID: "p1", Language: codec.LangGo, Version: 479})
	r, err = b.handleGetAllProducerInfo(context.Background(), c, req)
	require.NoError(t, err)
	var got struct {
		Data map[string][]map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &got))
	require.Len(t, got.Data["PG"], 1)
	p := got.Data["PG"][0]
	require.GreaterOrEqual(t, p["lastUpdateTimestamp"], float64(before))
	delete(p, "lastUpdateTimestamp")
	require.Equal(t, map[string]any{"clientId": "p1", "language": "GO", "remoteIP": c.RemoteAddr().String(),
		"version": float64(479)}, p)
}

package remoting

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func TestUnknownCodeJSON(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := dialRaw(t, s)
	_, err := c.Write(rawJSONFrame(t, rawJSONHeader{Code: 9999, Language: "GO", Version: 317, Opaque: 77,
		ExtFields: map[string]string{"k": "v"}}, []byte("body")))
	require.NoError(t, err)

	st, hdr, body := readRawFrame(t, c)
	require.Equal(t, codec.SerializeJSON, st)
	assert.Empty(t, body)
	var h rawJSONHeader
	require.NoError(t, json.Unmarshal(hdr, &h), "header %s", hdr)
	assert.Equal(t, codec.RespRequestCodeNotSupported, h.Code)
	assert.Equal(t, int32(77), h.Opaque)
	assert.Equal(t, codec.FlagResponse, h.Flag)
	require.NotNil(t, h.Remark)
	assert.Equal(t, " request type 9999 not supported", *h.Remark)
	assert.Equal(t, codec.BrokerVersion, h.Version)
}

func TestUnknownCodeBinary(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := dialRaw(t, s)
	_, err := c.Write(rawBinaryFrame(rawBinaryHeader{Code: 4321, Language: byte(codec.LangJava), Version: 407,
		Opaque: -5, Ext: [][2]string{{"topic", "T"}}}, nil))
	require.NoError(t, err)

	st, hdr, body := readRawFrame(t, c)
	require.Equal(t, codec.SerializeRocketMQ, st)
	assert.Empty(t, body)
	h := parseRawBinaryHeader(t, hdr)
	assert.Equal(t, int16(codec.RespRequestCodeNotSupported), h.Code)
	assert.Equal(t, int32(-5), h.Opaque)
	assert.Equal(t, codec.FlagResponse, h.Flag)
	assert.Equal(t, " request type 4321 not supported", h.Remark)
	assert.Equal(t, int16(codec.BrokerVersion), h.Version)
}

// TestOnewayGetsNoResponse sends a oneway request and then a normal one that
// runs after it (same single worker, or inline on the loop): the first frame back
// must answer the second.
func TestOnewayGetsNoResponse(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			got := make(chan int32, 1)
			oneway := ProcessorFunc(func(_ context.Context, _ Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
				got <- req.Opaque
				return codec.NewResponse(req, 0, ""), nil
			})
			s := startServer(t, ServerConfig{}, func(s *Server) {
				opt := Inline()
				if !inline {
					opt = WithPool(NewWorkerPool("one", 1, 10))
				}
				s.Register(100, oneway, opt)
				s.Register(101, echo(), opt)
			})
			c := dialRaw(t, s)
			_, err := c.Write(rawJSONFrame(t, rawJSONHeader{Code: 100, Language: "JAVA", Opaque: 1, Flag: codec.FlagOneway}, nil))
			require.NoError(t, err)
			_, err = c.Write(rawJSONFrame(t, rawJSONHeader{Code: 101, Language: "JAVA", Opaque: 2}, nil))
			require.NoError(t, err)

			_, hdr, _ := readRawFrame(t, c)
			var h rawJSONHeader
			require.NoError(t, json.Unmarshal(hdr, &h))
			assert.Equal(t, int32(2), h.Opaque)
			assert.Equal(t, int32(0), h.Code)
			assert.Equal(t, int32(1), <-got, "the oneway request was processed")
		})
	}
}

package codec

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a 5.x Java broker writes for a static topic (fastjson, bare Integer keys)
// and what Java's name server answers clients with (BrowserCompatible: quoted).
const (
	javaMappingFromBroker = `{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":1,"scope":"__global__","topic":"StaticTopic","totalQueues":2}`
	javaMappingInRoute    = `{"bname":"broker-a","currIdMap":{"0":0,"1":1},"dirty":false,"epoch":1,"scope":"__global__","topic":"StaticTopic","totalQueues":2}`
)

func TestTopicQueueMappingInfoRoundTrip(t *testing.T) {
	for _, in := range []string{javaMappingFromBroker, javaMappingInRoute} {
		info, err := DecodeTopicQueueMappingInfo([]byte(in))
		require.NoError(t, err)
		require.Equal(t, javaMappingInRoute, string(info.AppendJSON(nil)))
	}
	// Numeric keys sort as numbers, as Java's TreeMap (MapSortField) does.
	info, err := DecodeTopicQueueMappingInfo([]byte(`{"topic":"T","bname":"b","currIdMap":{"10":3,"2":1,"-1":0}}`))
	require.NoError(t, err)
	require.Equal(t, `{"bname":"b","currIdMap":{"-1":0,"2":1,"10":3},"dirty":false,"epoch":0,"scope":"__global__","topic":"T","totalQueues":0}`,
		string(info.AppendJSON(nil)))
}

func TestTopicQueueMappingInfoKeepsOnlyJavaFields(t *testing.T) {
	pad := strings.Repeat("a", 1<<20)
	info, err := DecodeTopicQueueMappingInfo([]byte(`{"topic":"T","pad":"` + pad + `","hostedQueues":{"0":[{"gen":0}]},"bname":"b","currIdMap":{"0":0}}`))
	require.NoError(t, err)
	out := info.AppendJSON(nil)
	require.Equal(t, `{"bname":"b","currIdMap":{"0":0},"dirty":false,"epoch":0,"scope":"__global__","topic":"T","totalQueues":0}`, string(out))
}

func TestTopicQueueMappingInfoNullsAndDefaults(t *testing.T) {
	// Missing scope and currIdMap: Java's initialisers. Null: fastjson leaves them out.
	info, err := DecodeTopicQueueMappingInfo([]byte(`{"topic":"T"}`))
	require.NoError(t, err)
	require.Equal(t, `{"currIdMap":{},"dirty":false,"epoch":0,"scope":"__global__","topic":"T","totalQueues":0}`, string(info.AppendJSON(nil)))
	info, err = DecodeTopicQueueMappingInfo([]byte(`{"topic":"T","scope":null,"currIdMap":null,"bname":null,"epoch":"7","dirty":"true","totalQueues":"3"}`))
	require.NoError(t, err)
	require.Equal(t, `{"dirty":true,"epoch":7,"topic":"T","totalQueues":3}`, string(info.AppendJSON(nil)))
}

func TestTopicQueueMappingInfoBounds(t *testing.T) {
	currIDMap := func(n int) []byte {
		b := []byte(`{"topic":"T","currIdMap":{`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, ':', '0')
		}
		return append(b, `}}`...)
	}
	info, err := DecodeTopicQueueMappingInfo(currIDMap(MaxMappingQueues))
	require.NoError(t, err)
	require.Len(t, info.CurrIDMap, MaxMappingQueues)
	_, err = DecodeTopicQueueMappingInfo(currIDMap(MaxMappingQueues + 1))
	require.ErrorContains(t, err, "currIdMap")

	for _, bad := range []string{
		`{"topic":"T","currIdMap":{"0":null}}`,
		`{"topic":"T","currIdMap":{"x":1}}`,
		`{"topic":"T","currIdMap":{"0":"y"}}`,
		`{"topic":"T","currIdMap":{"4294967296":1}}`,
		`{"topic":"T","currIdMap":[]}`,
		`{"topic":"T","bname":"` + strings.Repeat("b", 1025) + `"}`,
		`{"topic":"T","scope":"` + strings.Repeat("s", 1025) + `"}`,
		`{"topic":{"x":1}}`,
		`[]`,
	} {
		_, err := DecodeTopicQueueMappingInfo([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestCompressedRegisterBodyMappingIsRewritten(t *testing.T) {
	var raw []byte
	part := func(p []byte) { raw = binary.BigEndian.AppendUint32(raw, uint32(len(p))); raw = append(raw, p...) }
	part([]byte(`{"counter":1,"timestamp":1}`))
	raw = binary.BigEndian.AppendUint32(raw, 1)
	part([]byte("T 1 1 6 SINGLE_TAG"))
	part([]byte("[]"))
	raw = binary.BigEndian.AppendUint32(raw, 1)
	part([]byte(`{"topic":"T","bname":"b","pad":"` + strings.Repeat("a", 8<<20) + `","currIdMap":{0:0}}`))
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(raw)
	require.NoError(t, zw.Close())

	b, err := DecodeRegisterBrokerBody(z.Bytes(), true, VersionV5_0_0)
	require.NoError(t, err)
	info := b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap["T"]
	require.NotNil(t, info)
	require.Equal(t, `{"bname":"b","currIdMap":{"0":0},"dirty":false,"epoch":0,"scope":"__global__","topic":"T","totalQueues":0}`,
		string(info.AppendJSON(nil)))

	// The plain form is read the same way.
	plain, err := b.Encode(false)
	require.NoError(t, err)
	require.Less(t, len(plain), 1024)
	again, err := DecodeRegisterBrokerBody(plain, false, VersionV5_0_0)
	require.NoError(t, err)
	require.Equal(t, b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap, again.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap)
}

// What mqadmin's createStaticTopic sends (TopicQueueMappingDetail.encode():
// fastjson, bare Integer keys) is read and written back byte for byte.
func TestTopicQueueMappingDetailRoundTrip(t *testing.T) {
	in := `{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":1700000000000,"hostedQueues":{0:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}],2:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":1,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"StaticTopic","totalQueues":4}`
	d, err := DecodeTopicQueueMappingDetail([]byte(in))
	require.NoError(t, err)
	require.Equal(t, in, string(d.AppendJSON(nil)))
	require.Equal(t, []LogicQueueMappingItem{{QueueID: 1, Bname: "broker-a", EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}}, d.HostedQueues[2])
	require.Equal(t, map[int32]int32{0: 0, 2: 1}, d.MappingInfo().CurrIDMap)
	require.Equal(t, d, d.Clone())

	// Java's initialisers: endOffset and the times -1, hostedQueues empty.
	d, err = DecodeTopicQueueMappingDetail([]byte(`{"topic":"T","bname":"b","hostedQueues":{"1":[{"bname":"b","queueId":3}]}}`))
	require.NoError(t, err)
	require.Equal(t, LogicQueueMappingItem{QueueID: 3, Bname: "b", EndOffset: -1, TimeOfStart: -1, TimeOfEnd: -1}, d.HostedQueues[1][0])
	d, err = DecodeTopicQueueMappingDetail([]byte(`{"topic":"T","hostedQueues":null}`))
	require.NoError(t, err)
	require.NotNil(t, d.HostedQueues)
	require.Empty(t, d.HostedQueues)
}

func TestTopicQueueMappingDetailIsBounded(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"topic":"T","hostedQueues":{0:[`)
	for i := 0; i <= MaxMappingItems; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"gen":` + strconv.Itoa(i) + `}`)
	}
	sb.WriteString(`]}}`)
	_, err := DecodeTopicQueueMappingDetail([]byte(sb.String()))
	require.ErrorContains(t, err, "more than 256 items")

	sb.Reset()
	sb.WriteString(`{"topic":"T","hostedQueues":{`)
	for i := 0; i <= MaxMappingQueues; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(i) + `:[]`)
	}
	sb.WriteString(`}}`)
	_, err = DecodeTopicQueueMappingDetail([]byte(sb.String()))
	require.ErrorContains(t, err, "more than 65535 entries")

	for _, bad := range []string{`{"hostedQueues":{"x":[]}}`, `{"hostedQueues":{0:[null]}}`, `{"hostedQueues":{0:[{"bname":"` + strings.Repeat("b", 1025) + `"}]}}`} {
		_, err = DecodeTopicQueueMappingDetail([]byte(bad))
		require.Error(t, err, bad)
	}
}

// FuzzDecodeTopicQueueMappingDetail: no UPDATE_AND_CREATE_STATIC_TOPIC body
// panics the decoder, and what it accepts, once written, reads and writes
// back the same (the broker persists it in topicQueueMapping.json and
// registers it). The first write may differ from the input: a Go string
// cannot tell fastjson's null from "", so an explicit "scope":"" is written
// as absent and read back as Java's default scope.
func FuzzDecodeTopicQueueMappingDetail(f *testing.F) {
	f.Add([]byte(`{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":1700000000000,"hostedQueues":{0:[{"bname":"broker-a","endOffset":-1,"gen":0,"logicOffset":0,"queueId":0,"startOffset":0,"timeOfEnd":-1,"timeOfStart":-1}]},"scope":"__global__","topic":"StaticTopic","totalQueues":4}`))
	f.Add([]byte(`{"topic":"T","bname":"b","hostedQueues":{"1":[{"bname":"b","queueId":3},{"bname":"c","queueId":1,"logicOffset":100}]}}`))
	f.Add([]byte(`{"topic":"T","hostedQueues":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeTopicQueueMappingDetail(b)
		if err != nil {
			return
		}
		_ = d.MappingInfo()
		_ = d.Clone()
		out := d.AppendJSON(nil)
		for range 2 {
			d2, err := DecodeTopicQueueMappingDetail(out)
			if err != nil {
				t.Fatalf("re-read of %s: %v", out, err)
			}
			again := d2.AppendJSON(nil)
			if d2.Scope == d.Scope && string(again) != string(out) {
				t.Fatalf("written again differently:\n%s\n%s", out, again)
			}
			d, out = d2, again
		}
	})
}

// A static topic's route carries each broker's mapping, read and written
// back as the name server writes it.
func TestTopicRouteDataMappingByBroker(t *testing.T) {
	in := `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[],"topicQueueMappingByBroker":{` +
		`"broker-a":{"bname":"broker-a","currIdMap":{"0":0,"2":1},"dirty":false,"epoch":5,"scope":"__global__","topic":"T","totalQueues":3},` +
		`"broker-b":{"bname":"broker-b","currIdMap":{"1":0},"dirty":false,"epoch":6,"scope":"__global__","topic":"T","totalQueues":3}}}`
	r, err := DecodeTopicRouteData([]byte(in))
	require.NoError(t, err)
	require.Len(t, r.TopicQueueMappingByBroker, 2)
	require.Equal(t, map[int32]int32{1: 0}, r.TopicQueueMappingByBroker["broker-b"].CurrIDMap)
	require.EqualValues(t, 6, r.TopicQueueMappingByBroker["broker-b"].Epoch)
	require.Equal(t, in, string(r.AppendJSON(nil)))

	plain, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[],"queueDatas":[]}`))
	require.NoError(t, err)
	require.Nil(t, plain.TopicQueueMappingByBroker)
	require.NotContains(t, string(plain.AppendJSON(nil)), "topicQueueMappingByBroker")
}

// GET_TOPIC_CONFIG's TopicConfigAndQueueMapping: the mapping when the topic
// is static there (bare keys, as fastjson writes it), else nil.
func TestDecodeTopicConfigMappingDetail(t *testing.T) {
	d, err := DecodeTopicConfigMappingDetail([]byte(`{"topicName":"T","readQueueNums":1,"mappingDetail":{"bname":"b","epoch":3,"hostedQueues":{0:[{"bname":"a","queueId":0,"logicOffset":0},{"bname":"b","queueId":0,"logicOffset":10}]},"topic":"T","totalQueues":1}}`))
	require.NoError(t, err)
	require.Equal(t, "b", d.Bname)
	require.EqualValues(t, 3, d.Epoch)
	require.Len(t, d.HostedQueues[0], 2)
	for _, none := range []string{`{"topicName":"T"}`, `{"topicName":"T","mappingDetail":null}`} {
		d, err = DecodeTopicConfigMappingDetail([]byte(none))
		require.NoError(t, err)
		require.Nil(t, d, none)
	}
	_, err = DecodeTopicConfigMappingDetail([]byte(`{"mappingDetail":{"hostedQueues":{"x":[]}}}`))
	require.Error(t, err)
}

// FuzzDecodeTopicConfigMappingDetail: no GET_TOPIC_CONFIG answer another
// broker sends panics the decoder the mapping clean reads it with.
func FuzzDecodeTopicConfigMappingDetail(f *testing.F) {
	f.Add([]byte(`{"topicName":"T","mappingDetail":{"bname":"b","epoch":3,"hostedQueues":{0:[{"bname":"a","queueId":0}]},"topic":"T","totalQueues":1}}`))
	f.Add([]byte(`{"topicName":"T","mappingDetail":null}`))
	f.Add([]byte(`{"mappingDetail":7}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeTopicConfigMappingDetail(b)
		if err == nil && d != nil {
			_ = d.AppendJSON(nil)
		}
	})
}

package codec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Literal outputs of fastjson 1.2.83 (captured with the recipe in
// codec/testdata/java): JSON.toJSONString of {"s": <the string below>}.
func TestAppendJSONStringMatchesFastjson(t *testing.T) {
	s := "a\u0001b\"c\\d/e\u007f\u00e9\u4e2d\U0001F600\n\t\b\f\r<>&'\u2028"
	want := `"a\u0001b\"c\\d/e\u007Fé中😀\n\t\b\f\r<>&'\u2028"`
	require.Equal(t, want, string(AppendJSONString(nil, s)))

	var ctl []byte
	for c := 0; c < 0x20; c++ {
		ctl = append(ctl, byte(c))
	}
	s = string(ctl) + "|\u0080\u009f\u00a0\u2029\ufeff\ufffd|"
	want = `"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000B\f\r\u000E\u000F\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001A\u001B\u001C\u001D\u001E\u001F|\u0080\u009F` + "\u00a0" + `\u2029` + "\ufeff\ufffd" + `|"`
	require.Equal(t, want, string(AppendJSONString(nil, s)))

	require.Equal(t, `"a\uFFFDb"`, string(AppendJSONString(nil, "a\xffb")))
	var back string
	require.NoError(t, json.Unmarshal(AppendJSONString(nil, "x\x00\u2028y"), &back))
	require.Equal(t, "x\x00\u2028y", back)
}

// TestJSONStringLen: the length matches what AppendJSONString writes for every
// kind of byte it escapes differently.
func TestJSONStringLen(t *testing.T) {
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{"", "abc", string(all), "\u0080\u009f\u00a0\u2028\u2029\ufffd\U0001F600", "a\xffb\xc3", "\xe2\x80"} {
		require.Equal(t, len(AppendJSONString(nil, s)), JSONStringLen(s), "%q", s)
	}
}

func FuzzJSONStringLen(f *testing.F) {
	f.Add("a\x01\u2028\xff\"")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := JSONStringLen(s), len(AppendJSONString(nil, s)); got != want {
			t.Fatalf("JSONStringLen(%q) = %d, AppendJSONString wrote %d", s, got, want)
		}
	})
}

func TestAppendJSONCollectionsNeverNull(t *testing.T) {
	require.Equal(t, `[]`, string(AppendJSONStringSlice(nil, nil)))
	require.Equal(t, `["a","b"]`, string(AppendJSONStringSlice(nil, []string{"a", "b"})))
	require.Equal(t, `{}`, string(AppendJSONStringMap(nil, nil)))
	require.Equal(t, `{"a":"1","b":"2"}`, string(AppendJSONStringMap(nil, map[string]string{"b": "2", "a": "1"})))
	str := func(d []byte, v string) []byte { return AppendJSONString(d, v) }
	require.Equal(t, `{}`, string(AppendJSONLongKeyMap[string](nil, nil, str)))
	require.Equal(t, `{"0":"10.0.0.5:10911"}`,
		string(AppendJSONLongKeyMap(nil, map[int64]string{0: "10.0.0.5:10911"}, str)))
	// BrowserCompatible output of Java for a HashMap<Long,String>.
	require.Equal(t, `{"-1":"x","0":"10.0.0.5:10911","12345678901":"y"}`,
		string(AppendJSONLongKeyMap(nil, map[int64]string{12345678901: "y", 0: "10.0.0.5:10911", -1: "x"}, str)))
}

func TestAppendMessageQueueKey(t *testing.T) {
	dst := append([]byte{'{'}, nil...)
	dst = AppendMessageQueueKey(dst, "broker-a", 3, "TopicTest")
	dst = append(dst, ":12}"...)
	require.Equal(t, `{{"brokerName":"broker-a","queueId":3,"topic":"TopicTest"}:12}`, string(dst))
}

func TestStrictJSON(t *testing.T) {
	valid := []byte(`{"a":[1,2,{"b":null}]}`)
	out, err := StrictJSON(valid)
	require.NoError(t, err)
	require.Same(t, &valid[0], &out[0], "valid JSON is not copied")

	cases := map[string]string{
		// ClusterInfo as the Java 5.3.3 name server sends it (captured).
		`{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.5:10911",1:"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`: `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`,
		`{-1:"x", 12345678901 : "y"}`: `{"-1":"x","12345678901":"y"}`,
		`{{"brokerName":"b","queueId":0,"topic":"t"}:12,{"brokerName":"b","queueId":1,"topic":"t"}:13}`: `{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"t\"}":12,"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"t\"}":13}`,
		`{'a':'it\'s "q"',b:true,}`: `{"a":"it's \"q\"","b":true}`,
		`[{0:[]}, {1:{}}]`:          `[{"0":[]},{"1":{}}]`,
		`{{0:1}:2}`:                 `{"{\"0\":1}":2}`,
		// consumerOffset.json as Java writes it, and key-like text in strings.
		"{\"offsetTable\":{\"T@g\":{0:250,-1:3, 12 :7\n\t},\"x\":\"{1:2}\"}}": `{"offsetTable":{"T@g":{"0":250,"-1":3,"12":7},"x":"{1:2}"}}`,
		`{"a":{0:1, 12:"x{3:4}"},"b":[1,2]}`:                                  `{"a":{"0":1,"12":"x{3:4}"},"b":[1,2]}`,
	}
	for in, want := range cases {
		out, err := StrictJSON([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, string(out), in)
		require.True(t, json.Valid(out), in)
	}
	for _, bad := range []string{``, `{`, `{0:}`, `{"a" 1}`, `[1 2]`, `{"a":tru}`, `'abc`, `{"a":"\x"}`, `{a:1}}`} {
		_, err := StrictJSON([]byte(bad))
		require.Error(t, err, bad)
	}
	deep := make([]byte, 0, 2000)
	for i := 0; i < 1000; i++ {
		deep = append(deep, '[')
	}
	_, err = StrictJSON(deep)
	require.Error(t, err)
}

func FuzzStrictJSON(f *testing.F) {
	f.Add([]byte(`{0:"a",{"brokerName":"b","queueId":0,"topic":"t"}:1,'s':[1,2]}`))
	f.Add([]byte(`{"a":1}`))
	f.Add([]byte(`{"offsetTable":{"T@g":{0:250,1:250}}}`))
	f.Add([]byte(`{"a":"{1:2}","b":[1,2],-3:4}`))
	f.Add([]byte(`{"x\"":{7 :1}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := StrictJSON(in)
		if err == nil && !json.Valid(out) {
			t.Fatalf("StrictJSON(%q) = %q, not valid JSON", in, out)
		}
		if json.Valid(in) && string(out) != string(in) {
			t.Fatalf("valid JSON changed: %q → %q", in, out)
		}
	})
}

func TestObjectKeyMapRoundTrip(t *testing.T) {
	type mq struct {
		broker string
		qid    int32
		topic  string
	}
	m := map[mq]int64{{"b", 1, "t"}: 13, {"b", 0, "t"}: 12}
	out := AppendJSONObjectKeyMap(nil, m,
		func(a, b mq) int {
			if a.topic != b.topic {
				return strings.Compare(a.topic, b.topic)
			}
			if a.broker != b.broker {
				return strings.Compare(a.broker, b.broker)
			}
			return int(a.qid - b.qid)
		},
		func(d []byte, k mq) []byte { return AppendMessageQueueKey(d, k.broker, k.qid, k.topic) },
		func(d []byte, v int64) []byte { return strconv.AppendInt(d, v, 10) })
	require.Equal(t, `{{"brokerName":"b","queueId":0,"topic":"t"}:12,{"brokerName":"b","queueId":1,"topic":"t"}:13}`, string(out))
	require.Equal(t, `{}`, string(AppendJSONObjectKeyMap[mq, int64](nil, nil, nil, nil, nil)))

	strict, err := StrictJSON(out)
	require.NoError(t, err)
	var back map[string]int64
	require.NoError(t, json.Unmarshal(strict, &back))
	got := map[mq]int64{}
	for k, v := range back {
		b, q, topic, err := ParseMessageQueueKey(k)
		require.NoError(t, err)
		got[mq{b, q, topic}] = v
	}
	require.Equal(t, m, got)
	_, _, _, err = ParseMessageQueueKey("{")
	require.Error(t, err)
}

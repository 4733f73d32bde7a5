package codec

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// jsonFrame wraps a JSON header (and body) into a frame without the total-length
// field, as DecodeCommand takes it.
func jsonFrame(header string, body string) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	f = append(f, header...)
	return append(f, body...)
}

func binFrame(header []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(header)))
	return append(f, header...)
}

func TestDecodeGoClientJSON(t *testing.T) {
	// The Go client's jsoniter output: struct order, remark "", language "GO",
	// HTML-escaped and \u-escaped strings.
	h := `{"code":10,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"",` +
		`"extFields":{"producerGroup":"PG","topic":"T","queueId":"0","sysFlag":"0",` +
		`"bornTimestamp":"1700000000000","flag":"0","reconsumeTimes":"0","unitMode":"false",` +
		`"maxReconsumeTimes":"0","defaultTopic":"TBW102","defaultTopicQueueNums":"4","batch":"false",` +
		`"properties":"KEYS\u0001a\u003cb\u0002UNIQ_KEY\u0001X\u0002"}}`
	var cmd RemotingCommand
	if err := DecodeCommand(jsonFrame(h, "body"), &cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.Code != 10 || cmd.Language != LangGo || cmd.Version != 317 || cmd.Opaque != 1 ||
		!cmd.HasRemark || cmd.Remark != "" || string(cmd.Body) != "body" {
		t.Fatalf("%+v", cmd)
	}
	var sh SendMessageRequestHeader
	if err := sh.DecodeSend(cmd.Code, cmd.Ext); err != nil {
		t.Fatal(err)
	}
	if sh.Properties != "KEYS\x01a<b\x02UNIQ_KEY\x01X\x02" || sh.DefaultTopicQueueNums != 4 ||
		!sh.HasMaxReconsumeTimes || sh.BornTimestamp != 1700000000000 {
		t.Fatalf("%+v", sh)
	}
}

func TestDecodeJSONLenient(t *testing.T) {
	h := ` { "code" : "12", "unknown": {"a":[1,2,{"b":null}],"c":"\"}"}, "language": 9,` +
		` "opaque": -7, "flag": null, "remark": null, "serializeTypeCurrentRPC": "JSON",` +
		` "extFields": {"n": 5, "b": true, "z": null, "s": "x", "s": "y", "o": {"k":1}, "e\u0041": "v"},` +
		` "version": 1 } `
	var cmd RemotingCommand
	if err := DecodeCommand(jsonFrame(h, ""), &cmd); err != nil {
		t.Fatal(err)
	}
	if cmd.Code != 12 || cmd.Language != LangGo || cmd.Opaque != -7 || cmd.Flag != 0 ||
		cmd.HasRemark || cmd.Version != 1 || cmd.Body != nil {
		t.Fatalf("%+v", cmd)
	}
	want := map[string]string{"n": "5", "b": "true", "s": "y", "o": `{"k":1}`, "eA": "v"}
	got := extMap(cmd.Ext)
	if len(got) != len(want) || len(cmd.Ext) != len(want) {
		t.Fatalf("ext %q", cmd.Ext)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("ext %q = %q, want %q", k, got[k], v)
		}
	}

	for _, h := range []string{`{"extFields":null}`, `{}`, `{"language":"SMALLTALK"}`} {
		if err := DecodeCommand(jsonFrame(h, ""), &cmd); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
	if cmd.Language != LangOther {
		t.Fatalf("unknown language name: %v", cmd.Language)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	for _, h := range []string{
		``, `[]`, `{`, `{"code":1`, `{"code":1}x`, `{"code":1.5}`, `{"code":"x"}`,
		`{"code":2147483648}`, `{"extFields":[]}`, `{"extFields":{"a":}}`, `{"remark":"\q"}`,
		`{"remark":"\u12"}`, `{"remark":"abc}`, `{code:1}`, `{"a":tru}`, `{"a":-}`, `{"a":1e}`,
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		var cmd RemotingCommand
		err := DecodeCommand(jsonFrame(h, ""), &cmd)
		if err == nil {
			t.Fatalf("%q decoded: %+v", h, cmd)
		}
		if !errors.Is(err, ErrBadHeader) {
			t.Fatalf("%q: %v does not wrap ErrBadHeader", h, err)
		}
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	var cmd RemotingCommand
	cases := []struct {
		frame []byte
		want  error
	}{
		{nil, ErrShortFrame},
		{[]byte{0, 0, 0}, ErrShortFrame},
		{[]byte{0, 0, 0, 5, '{', '}'}, ErrHeaderLength},
		{[]byte{2, 0, 0, 2, '{', '}'}, ErrSerializeType},
		{binFrame(make([]byte, 20)), ErrShortFrame},
		// remark length beyond the header
		{binFrame(append(make([]byte, 13), 0, 0, 0, 9, 0, 0, 0, 0)), ErrBadHeader},
		// negative remark length
		{binFrame(append(make([]byte, 13), 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0)), ErrBadHeader},
		// ext length beyond the header
		{binFrame(append(make([]byte, 17), 0, 0, 0, 9)), ErrBadHeader},
		// key length beyond the map
		{binFrame(append(make([]byte, 17), 0, 0, 0, 3, 0, 9, 'a')), ErrBadHeader},
		// negative key length
		{binFrame(append(make([]byte, 17), 0, 0, 0, 6, 0xff, 0xff, 0, 0, 0, 0)), ErrBadHeader},
		// value length beyond the map
		{binFrame(append(make([]byte, 17), 0, 0, 0, 7, 0, 1, 'a', 0, 0, 0, 9)), ErrBadHeader},
		// truncated value length
		{binFrame(append(make([]byte, 17), 0, 0, 0, 5, 0, 1, 'a', 0, 0)), ErrBadHeader},
	}
	for i, c := range cases {
		err := DecodeCommand(c.frame, &cmd)
		if !errors.Is(err, c.want) {
			t.Fatalf("case %d: got %v, want %v", i, err, c.want)
		}
	}
	// A negative ext length is ignored, as in Java.
	if err := DecodeCommand(binFrame(append(make([]byte, 17), 0xff, 0xff, 0xff, 0xff)), &cmd); err != nil || len(cmd.Ext) != 0 {
		t.Fatalf("negative ext length: %v %q", err, cmd.Ext)
	}
}

func TestDecodeLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"extFields":{`)
	for i := 0; i < 10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('a'+i)) + `":"v"`)
	}
	b.WriteString(`}}`)
	frame := jsonFrame(b.String(), "")
	var cmd RemotingCommand
	if err := (Limits{MaxExtFields: 10}).DecodeCommand(frame, &cmd); err != nil {
		t.Fatal(err)
	}
	if err := (Limits{MaxExtFields: 9}).DecodeCommand(frame, &cmd); !errors.Is(err, ErrLimit) {
		t.Fatalf("ext limit: %v", err)
	}
	if err := (Limits{MaxHeaderLen: 20}).DecodeCommand(frame, &cmd); !errors.Is(err, ErrLimit) {
		t.Fatalf("header limit: %v", err)
	}
	// the binary map counts too
	c := NewRequest(1)
	c.SerializeType = SerializeRocketMQ
	for i := 0; i < 5; i++ {
		c.Ext = append(c.Ext, ExtField{"k", "v"}) // duplicates count
	}
	if err := (Limits{MaxExtFields: 4}).DecodeCommand(c.Encode(nil)[4:], &cmd); !errors.Is(err, ErrLimit) {
		t.Fatalf("binary ext limit: %v", err)
	}
}

func TestBinaryDuplicatesAndNulls(t *testing.T) {
	// Java HashMap semantics: last value wins, a null (length 0) value removes.
	c := NewRequest(1)
	c.SerializeType = SerializeRocketMQ
	c.Ext = ExtFields{{"a", "1"}, {"b", "2"}, {"a", "3"}, {"b", ""}, {"", "nullkey"}}
	var d RemotingCommand
	if err := DecodeCommand(c.Encode(nil)[4:], &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Ext) != 1 || d.Ext[0] != (ExtField{"a", "3"}) {
		t.Fatalf("%q", d.Ext)
	}
}

func TestDecodeReusesCommand(t *testing.T) {
	big := readGolden(t, "send_v2_request", SerializeJSON)[4:]
	small := readGolden(t, "no_ext", SerializeRocketMQ)[4:]
	var cmd RemotingCommand
	if err := DecodeCommand(big, &cmd); err != nil {
		t.Fatal(err)
	}
	ext := cmd.Ext
	if err := DecodeCommand(small, &cmd); err != nil {
		t.Fatal(err)
	}
	if len(cmd.Ext) != 0 || cmd.Body != nil || cmd.Code != 0 || cmd.Opaque != 5 || cmd.SerializeType != SerializeRocketMQ {
		t.Fatalf("stale state: %+v", cmd)
	}
	if ext[0] != (ExtField{}) {
		t.Fatalf("old entries still reference the previous frame: %q", ext[:1])
	}
	// After warm-up, decoding allocates nothing, escapes included.
	for _, name := range []string{"send_v2_request", "send_response", "pull_request"} {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			f := readGolden(t, name, st)[4:]
			var c RemotingCommand
			allocs := testing.AllocsPerRun(100, func() {
				if err := DecodeCommand(f, &c); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%s/%d: %.1f allocs per decode", name, st, allocs)
			}
		}
	}
}

func TestEncodeTypedHeadersAllocationFree(t *testing.T) {
	buf := make([]byte, 0, 1024)
	req := &RemotingCommand{Opaque: 3, SerializeType: SerializeJSON}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req.SerializeType = st
		ph := goldenPullResponse()
		sh := goldenSendResponse()
		pull := NewResponse(req, RespSuccess, "FOUND")
		pull.CustomHeader = &ph
		send := NewResponse(req, RespSuccess, "")
		send.CustomHeader = &sh
		allocs := testing.AllocsPerRun(100, func() {
			buf = pull.EncodeHeader(buf[:0], 100)
			buf = send.Encode(buf[:0])
		})
		if allocs != 0 {
			t.Fatalf("type %d: %.1f allocs per encode", st, allocs)
		}
	}
}

func TestResponseMirrorsRequest(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := NewRequest(ReqSendMessageV2)
		req.SerializeType = st
		req.Opaque = 77
		resp := NewResponse(req, RespSuccess, "")
		h := SendMessageResponseHeader{MsgID: "X", QueueID: 2, QueueOffset: 9, TraceOn: true, MsgRegion: "DefaultRegion"}
		resp.CustomHeader = &h
		var d RemotingCommand
		if err := DecodeCommand(resp.Encode(nil)[4:], &d); err != nil {
			t.Fatal(err)
		}
		if d.SerializeType != st || d.Opaque != 77 || !d.IsResponse() || d.Version != BrokerVersion {
			t.Fatalf("%+v", d)
		}
		// What the Java client reads unconditionally is there.
		for _, k := range []string{"msgId", "queueId", "queueOffset", ExtMsgRegion, ExtTraceOn} {
			if _, ok := d.Ext.Get(k); !ok {
				t.Fatalf("type %d: %s missing", st, k)
			}
		}
	}
	// A JSON response with a CustomHeader that writes nothing still has extFields.
	resp := NewResponse(&RemotingCommand{}, RespSuccess, "")
	resp.CustomHeader = headerFunc(func(*ExtWriter) {})
	if s := string(resp.Encode(nil)); !strings.Contains(s, `"extFields":{}`) {
		t.Fatalf("%s", s)
	}
}

type headerFunc func(*ExtWriter)

func (f headerFunc) WriteExt(w *ExtWriter) { f(w) }

func TestEncodeRemarkWithoutHasRemark(t *testing.T) {
	c := NewRequest(1)
	c.Remark = "set directly"
	var d RemotingCommand
	if err := DecodeCommand(c.Encode(nil)[4:], &d); err != nil || d.Remark != "set directly" || !d.HasRemark {
		t.Fatalf("%v %+v", err, d)
	}
}

func TestOwnDetachesFromFrame(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		frame := append([]byte(nil), readGolden(t, "send_v2_request", st)[4:]...)
		var c RemotingCommand
		if err := DecodeCommand(frame, &c); err != nil {
			t.Fatal(err)
		}
		c.Own()
		var want RemotingCommand
		if err := DecodeCommand(readGolden(t, "send_v2_request", st)[4:], &want); err != nil {
			t.Fatal(err)
		}
		clear(frame)
		// reusing the scratch of another command must not matter either
		equalDecoded(t, &want, &c)
	}
}

func TestConcurrentEncodeOfOneCommand(t *testing.T) {
	// A broadcast may encode the same command on several connections at once.
	h := goldenSendResponse()
	c := NewResponse(&RemotingCommand{Opaque: 1}, RespSuccess, "")
	c.CustomHeader = &h
	c.Ext.Set("x", "y")
	want := string(c.Encode(nil))
	done := make(chan string, 8)
	for g := 0; g < 8; g++ {
		go func() {
			var out []byte
			for i := 0; i < 200; i++ {
				out = c.Encode(out[:0])
			}
			done <- string(out)
		}()
	}
	for g := 0; g < 8; g++ {
		if got := <-done; got != want {
			t.Fatalf("concurrent encode differs")
		}
	}
}

func TestJSONRepeatedExtFieldsReplaces(t *testing.T) {
	var cmd RemotingCommand
	if err := DecodeCommand(jsonFrame(`{"extFields":{"a":"1"},"extFields":{"b":"2"}}`, ""), &cmd); err != nil {
		t.Fatal(err)
	}
	if len(cmd.Ext) != 1 || cmd.Ext[0] != (ExtField{"b", "2"}) {
		t.Fatalf("%q", cmd.Ext)
	}
	if err := DecodeCommand(jsonFrame(`{"extFields":{"a":"1"},"extFields":null}`, ""), &cmd); err != nil || len(cmd.Ext) != 0 {
		t.Fatalf("%v %q", err, cmd.Ext)
	}
}

// str reads the first shortString bytes one by one and the rest with IndexByte:
// strings on both sides of that edge, with and without escapes, decode alike.
func TestDecodeJSONStringLengths(t *testing.T) {
	for _, n := range []int{0, 1, shortString - 2, shortString - 1, shortString, shortString + 1, 3 * shortString} {
		plain := strings.Repeat("p", n)
		for _, c := range []struct{ json, want string }{
			{plain, plain},
			{plain + `\u0001x`, plain + "\x01x"},
			{`\"` + plain, `"` + plain},
			{plain + `\\`, plain + `\`},
			{plain + `\u0002` + plain + `\u0001` + plain, plain + "\x02" + plain + "\x01" + plain},
		} {
			var cmd RemotingCommand
			if err := DecodeCommand(jsonFrame(`{"extFields":{"k":"`+c.json+`","z":"`+plain+`"}}`, ""), &cmd); err != nil {
				t.Fatalf("%d %q: %v", n, c.json, err)
			}
			if got := extMap(cmd.Ext); got["k"] != c.want || got["z"] != plain {
				t.Fatalf("%d %q: got k=%q z=%q", n, c.json, got["k"], got["z"])
			}
		}
		// Unterminated, ending inside and beyond the byte-by-byte window.
		var cmd RemotingCommand
		if err := DecodeCommand(jsonFrame(`{"remark":"`+plain, ""), &cmd); !errors.Is(err, ErrBadHeader) {
			t.Fatalf("unterminated %d: %v", n, err)
		}
	}
}

package codec

import (
	"errors"
	"testing"
)

func TestExtTypedGetters(t *testing.T) {
	e := ExtFields{{"i", "+42"}, {"n", "-2147483648"}, {"big", "2147483648"}, {"l", "-9223372036854775808"},
		{"lbig", "9223372036854775808"}, {"sp", " 1"}, {"empty", ""}, {"t", "TrUe"}, {"y", "yes"}, {"minus", "-"}}
	if v, ok, err := e.GetInt32("i"); v != 42 || !ok || err != nil {
		t.Fatal(v, ok, err)
	}
	if v, _, err := e.GetInt32("n"); v != -2147483648 || err != nil {
		t.Fatal(v, err)
	}
	for _, k := range []string{"big", "sp", "empty", "minus", "lbig"} {
		var fe *FieldError
		if _, ok, err := e.GetInt32(k); !ok || !errors.As(err, &fe) || fe.Field != k {
			t.Fatalf("%s: %v", k, err)
		}
	}
	if v, _, err := e.GetInt64("l"); v != -9223372036854775808 || err != nil {
		t.Fatal(v, err)
	}
	if _, _, err := e.GetInt64("lbig"); err == nil {
		t.Fatal("long overflow accepted")
	}
	if v, ok, err := e.GetInt64("absent"); v != 0 || ok || err != nil {
		t.Fatal(v, ok, err)
	}
	if v, ok := e.GetBool("t"); !v || !ok {
		t.Fatal("TrUe")
	}
	if v, ok := e.GetBool("y"); v || !ok {
		t.Fatal("yes is false in Java")
	}
	var mf *MissingFieldError
	if _, err := e.Require("absent"); !errors.As(err, &mf) || mf.Field != "absent" || err.Error() != "the custom field <absent> is null" {
		t.Fatal(err)
	}
	if _, err := e.RequireInt32("absent"); !errors.As(err, &mf) {
		t.Fatal(err)
	}
	if v, err := e.RequireInt64("i"); v != 42 || err != nil {
		t.Fatal(v, err)
	}
}

func TestExtSetDel(t *testing.T) {
	var e ExtFields
	e.SetInt32("a", -1)
	e.SetInt64("b", 1<<40)
	e.SetBool("c", true)
	e.Set("a", "x")
	if len(e) != 3 || e[0] != (ExtField{"a", "x"}) || e[1].Value != "1099511627776" || e[2].Value != "true" {
		t.Fatalf("%q", e)
	}
	e.Del("a")
	e.Del("zz")
	if len(e) != 2 || e[0].Key != "b" || e[1].Key != "c" {
		t.Fatalf("%q", e)
	}
	e.Reset()
	if len(e) != 0 || cap(e) == 0 {
		t.Fatalf("%q", e)
	}
}

func TestLanguageNames(t *testing.T) {
	for l := LangJava; l <= LangNodeJS; l++ {
		got, ok := ParseLanguage(l.String())
		if !ok || got != l {
			t.Fatalf("%d %q", l, l.String())
		}
	}
	if LanguageCode(99).String() != "" || LanguageCode(99).Known() {
		t.Fatal("unknown language has a name")
	}
	// An unknown binary language byte survives a binary round trip and is
	// omitted from JSON (Java: null language).
	c := NewRequest(1)
	c.Language = 99
	c.SerializeType = SerializeRocketMQ
	var d RemotingCommand
	if err := DecodeCommand(c.Encode(nil)[4:], &d); err != nil || d.Language != 99 {
		t.Fatal(err, d.Language)
	}
	c.SerializeType = SerializeJSON
	if err := DecodeCommand(c.Encode(nil)[4:], &d); err != nil || d.Language != LangJava {
		t.Fatal(err, d.Language)
	}
}

func TestSendHeaderDecodeErrors(t *testing.T) {
	full := ExtFields{{"a", "PG"}, {"b", "T"}, {"c", "TBW102"}, {"d", "4"}, {"e", "1"}, {"f", "0"}, {"g", "1"}, {"h", "0"}}
	var h SendMessageRequestHeader
	if err := h.DecodeSend(ReqSendBatchMessage, full); err != nil {
		t.Fatal(err)
	}
	if h.HasMaxReconsumeTimes || h.Batch || h.Properties != "" {
		t.Fatalf("%+v", h)
	}
	var mf *MissingFieldError
	if err := h.DecodeSend(ReqSendMessageV2, full[:4]); !errors.As(err, &mf) || mf.Field != "e" {
		t.Fatal(err)
	}
	if err := h.DecodeSend(ReqSendMessage, full); !errors.As(err, &mf) || mf.Field != "producerGroup" {
		t.Fatal(err) // V1 keys expected for code 10
	}
	bad := append(ExtFields{}, full...)
	bad[6].Value = "12x"
	var fe *FieldError
	if err := h.DecodeV2(bad); !errors.As(err, &fe) || fe.Field != "g" {
		t.Fatal(err)
	}
	// a..h are all required, as Java's getAndCheckNotNull / @CFNotNull make them
	if err := h.DecodeV2(full[1:2:2]); !errors.As(err, &mf) || mf.Field != "a" {
		t.Fatal(err)
	}
	if err := h.DecodeV2(ExtFields{{"a", "PG"}, {"b", "T"}, {"e", "1"}, {"f", "0"}, {"g", "1"}, {"h", "0"}}); !errors.As(err, &mf) || mf.Field != "c" {
		t.Fatal(err)
	}

	var sr SendMessageResponseHeader
	if err := sr.Decode(ExtFields{{"msgId", "x"}, {"queueId", "1"}}); !errors.As(err, &mf) || mf.Field != "queueOffset" {
		t.Fatal(err)
	}
	if err := sr.Decode(ExtFields{{"msgId", "x"}, {"queueId", "1"}, {"queueOffset", "2"}}); err != nil || !sr.TraceOn {
		t.Fatal(err, sr.TraceOn) // absent TRACE_ON means on, as in the Java client
	}
	var pr PullMessageResponseHeader
	if err := pr.Decode(ExtFields{{"suggestWhichBrokerId", "0"}, {"nextBeginOffset", "1"}, {"minOffset", "0"}}); !errors.As(err, &mf) || mf.Field != "maxOffset" {
		t.Fatal(err)
	}
	var pq PullMessageRequestHeader
	if err := pq.Decode(ExtFields{{"consumerGroup", "g"}, {"topic", "t"}, {"queueId", "x"}}); !errors.As(err, &fe) {
		t.Fatal(err)
	}
	if err := pq.Decode(ExtFields{{"consumerGroup", "g"}, {"topic", "t"}, {"queueId", "1"}, {"queueOffset", "1"}, {"sysFlag", "1"}}); !errors.As(err, &mf) || mf.Field != "maxMsgNums" {
		t.Fatal(err)
	}
	if err := pq.Decode(ExtFields{{"consumerGroup", "g"}, {"topic", "t"}, {"queueId", "1"}, {"queueOffset", "1"}, {"maxMsgNums", "1"},
		{"sysFlag", "1"}, {"commitOffset", "0"}, {"suspendTimeoutMillis", "0"}}); !errors.As(err, &mf) || mf.Field != "subVersion" {
		t.Fatal(err) // @CFNotNull in Java, as the broker requires
	}
}

func TestTypedHeadersRoundTrip(t *testing.T) {
	send := goldenSendHeader()
	send.BrokerName = "b"
	pull := goldenPullRequest()
	pull.HasRequestSource, pull.RequestSource = true, -1
	pull.ProxyForwardClientID, pull.Namespace = "cid", "ns"
	pull.Logical, pull.Namespaced, pull.Oneway = BoolTrue, BoolFalse, BoolTrue
	presp := PullMessageResponseHeader{1, 2, 3, 4, 5, true, 6, true, 7, true, 8, true}
	sresp := SendMessageResponseHeader{"m", 1, 2, "t", "b", "r", "reg", false}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		enc := func(h HeaderWriter) ExtFields {
			c := NewRequest(1)
			c.SerializeType = st
			c.CustomHeader = h
			var d RemotingCommand
			if err := DecodeCommand(c.Encode(nil)[4:], &d); err != nil {
				t.Fatal(err)
			}
			return d.Ext
		}
		var s1, s2 SendMessageRequestHeader
		if err := s1.Decode(enc(&send)); err != nil || s1 != send {
			t.Fatalf("v1 %v\n%+v\n%+v", err, s1, send)
		}
		if err := s2.DecodeV2(enc((*SendMessageRequestHeaderV2)(&send))); err != nil || s2 != send {
			t.Fatalf("v2 %v %+v", err, s2)
		}
		var p PullMessageRequestHeader
		if err := p.Decode(enc(&pull)); err != nil || p != pull {
			t.Fatalf("pull %v\n%+v\n%+v", err, p, pull)
		}
		var pr PullMessageResponseHeader
		if err := pr.Decode(enc(&presp)); err != nil || pr != presp {
			t.Fatalf("pull resp %v %+v", err, pr)
		}
		var sr SendMessageResponseHeader
		if err := sr.Decode(enc(&sresp)); err != nil || sr != sresp {
			t.Fatalf("send resp %v %+v", err, sr)
		}
	}
}

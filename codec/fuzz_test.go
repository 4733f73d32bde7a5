package codec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// Fuzz targets. Seeds: the Java golden frames (testdata/golden) and the corpus in
// testdata/fuzz. Besides "never panic", each checks decode(encode(x)) == x.

func goldenSeeds(t interface{ Fatal(...any) }) [][]byte {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b[4:]) // DecodeCommand takes the frame after the total length
	}
	return out
}

// equalDecoded compares two decoded commands exactly (ext in order).
func equalDecoded(t *testing.T, a, b *RemotingCommand) {
	t.Helper()
	if a.Code != b.Code || a.Language != b.Language || a.Version != b.Version || a.Opaque != b.Opaque ||
		a.Flag != b.Flag || a.Remark != b.Remark || a.HasRemark != b.HasRemark ||
		a.SerializeType != b.SerializeType || !bytes.Equal(a.Body, b.Body) || len(a.Ext) != len(b.Ext) {
		t.Fatalf("round trip differs:\n%+v\n%+v", *a, *b)
	}
	for i := range a.Ext {
		if a.Ext[i] != b.Ext[i] {
			t.Fatalf("ext %d: %q != %q", i, a.Ext[i], b.Ext[i])
		}
	}
}

// reencode checks that what decoded once encodes to something that decodes the same.
func reencode(t *testing.T, c *RemotingCommand) {
	t.Helper()
	enc := c.Encode(nil)
	var d RemotingCommand
	if err := DecodeCommand(enc[4:], &d); err != nil {
		t.Fatalf("re-decode of our own encoding: %v\n%q", err, enc)
	}
	equalDecoded(t, c, &d)
}

func FuzzDecodeCommand(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		orig := bytes.Clone(frame)
		var c RemotingCommand
		err := DecodeCommand(frame, &c)
		if !bytes.Equal(frame, orig) {
			t.Fatal("DecodeCommand modified the frame")
		}
		if err != nil {
			return
		}
		reencode(t, &c)
		crossCheckHeader(t, c.Ext) // the admin header decoder agrees with ExtReader on any ext
		// A reused command decodes the same as a fresh one.
		var d RemotingCommand
		_ = DecodeCommand(goldenSeeds(t)[0], &d)
		if err := DecodeCommand(frame, &d); err != nil {
			t.Fatalf("second decode failed: %v", err)
		}
		equalDecoded(t, &c, &d)
	})
}

func FuzzJSONHeader(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		if s[0] == byte(SerializeJSON) {
			hl := int(s[1])<<16 | int(s[2])<<8 | int(s[3])
			f.Add(s[4 : 4+hl])
		}
	}
	f.Add([]byte(`{"code":10,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"a":"\u00e9\ud83d\ude00\ud800x"}}`))
	f.Fuzz(func(t *testing.T, h []byte) {
		var c RemotingCommand
		c.reset()
		if err := decodeJSONHeader(h, &c, Limits{}); err != nil {
			return
		}
		reencode(t, &c)
		crossCheckJSON(t, h, &c)
	})
}

// crossCheckJSON compares string-valued fields with encoding/json when the input
// is plain valid JSON.
func crossCheckJSON(t *testing.T, h []byte, c *RemotingCommand) {
	if !json.Valid(h) || !utf8.Valid(h) {
		return
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(h, &top) != nil {
		return
	}
	if raw, ok := top["remark"]; ok {
		var s *string
		if json.Unmarshal(raw, &s) == nil && s != nil && (!c.HasRemark || c.Remark != *s) {
			t.Fatalf("remark: encoding/json %q, ours %q (%v)", *s, c.Remark, c.HasRemark)
		}
	}
	if raw, ok := top["extFields"]; ok {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		for k, v := range m {
			s, isString := v.(string)
			got, present := c.Ext.Get(k)
			if isString && (!present || got != s) {
				t.Fatalf("ext %q: encoding/json %q, ours %q (%v)", k, s, got, present)
			}
			if v == nil && present {
				t.Fatalf("ext %q is null but present as %q", k, got)
			}
		}
	}
}

func FuzzBinaryHeader(f *testing.F) {
	for _, s := range goldenSeeds(f) {
		if s[0] == byte(SerializeRocketMQ) {
			hl := int(s[1])<<16 | int(s[2])<<8 | int(s[3])
			f.Add(s[4 : 4+hl])
		}
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		var c RemotingCommand
		c.reset()
		if err := decodeBinaryHeader(h, &c, Limits{}); err != nil {
			return
		}
		c.SerializeType = SerializeRocketMQ
		reencode(t, &c)
	})
}

// FuzzRoundTrip builds a command from parts and checks decode(encode(x)) == x,
// after the changes each serialize type makes by design.
func FuzzRoundTrip(f *testing.F) {
	f.Add(int32(310), byte(0), int32(479), int32(42), int32(0), "", false, "a", "PG", "i", "x\x01y\x02", []byte("body"), false)
	f.Add(int32(200050), byte(9), int32(-1), int32(-5), int32(3), "FOUND", true, "k", "", "", "v", []byte(nil), true)
	f.Fuzz(func(t *testing.T, code int32, lang byte, version, opaque, flag int32, remark string, hasRemark bool,
		k1, v1, k2, v2 string, body []byte, bin bool) {
		c := &RemotingCommand{Code: code, Language: LanguageCode(lang), Version: version, Opaque: opaque,
			Flag: flag, Remark: remark, HasRemark: hasRemark, Body: body}
		c.Ext.Set(k1, v1)
		c.Ext.Set(k2, v2)
		want := *c
		want.Ext = append(ExtFields(nil), c.Ext...)
		if len(want.Body) == 0 {
			want.Body = nil
		}
		if bin {
			c.SerializeType = SerializeRocketMQ
			want.SerializeType = SerializeRocketMQ
			want.Code = int32(int16(code))
			want.Version = int32(int16(version))
			want.HasRemark = remark != ""
			var ext ExtFields
			for _, e := range want.Ext {
				if len(e.Key) > maxBinaryKeyLen {
					e.Key = e.Key[:maxBinaryKeyLen]
				}
				if e.Key != "" && e.Value != "" { // null key skipped, null value absent
					ext = append(ext, e)
				}
			}
			want.Ext = ext
			if len(want.Ext) == 2 && want.Ext[0].Key == want.Ext[1].Key { // truncation made a duplicate
				want.Ext = ExtFields{{want.Ext[0].Key, want.Ext[1].Value}}
			}
		} else {
			want.HasRemark = hasRemark || remark != ""
			if !c.Language.Known() {
				want.Language = LangJava // omitted from JSON, Java's default on read
			}
		}
		enc := c.Encode(nil)
		var d RemotingCommand
		if err := DecodeCommand(enc[4:], &d); err != nil {
			t.Fatalf("decode own encoding: %v\n%q", err, enc)
		}
		equalDecoded(t, &want, &d)
	})
}

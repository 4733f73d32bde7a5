package store

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
)

// FuzzQueryMessage: QUERY_MESSAGE's key, topic, maxNum and time range come
// from the wire; no mix of them panics the index, and what is found is whole
// records of that topic carrying that key, within maxNum.
func FuzzQueryMessage(f *testing.F) {
	f.Add("QF", "k1", int32(32), int64(0), int64(math.MaxInt64))
	f.Add("QF", "k 2", int32(1), int64(-1), int64(-1))
	f.Add("QF", "", int32(0), int64(math.MinInt64), int64(math.MaxInt64))
	f.Add("", "k1", int32(-5), int64(math.MaxInt64), int64(0))
	f.Add("QF", "uniq-0", int32(math.MaxInt32), int64(1), int64(2))
	s := openStore(f, testConfig(f.TempDir()))
	f.Cleanup(func() { s.Shutdown() })
	keys := []string{"k1", "k1 k 2", "", " ", "k1 k1"}
	for i, k := range keys {
		m := newMsg("QF", 0, "body", map[string]string{codec.PropKeys: k, codec.PropUniqKey: "uniq-" + string(rune('0'+i))})
		if r := s.PutMessage(context.Background(), m); r.Status != PutOK {
			f.Fatalf("put: %v", r.Status)
		}
	}
	waitDispatched(f, s, "QF", 0, int64(len(keys)))
	deadline := time.Now().Add(5 * time.Second)
	for { // the index lags the consume queue
		_, n, _, _ := s.QueryMessage("QF", "k1", 32, math.MaxInt, 0, math.MaxInt64)
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			f.Fatalf("k1 finds %d records, want 3", n)
		}
		time.Sleep(time.Millisecond)
	}
	f.Fuzz(func(t *testing.T, topic, key string, maxNum int32, begin, end int64) {
		body, n, _, _ := s.QueryMessage(topic, key, maxNum, 1<<20, begin, end)
		if n > s.cfg.MaxMsgsNumBatch || (maxNum > 0 && n > int(maxNum)) {
			t.Fatalf("%d records for maxNum %d", n, maxNum)
		}
		var m codec.Message
		for i := 0; i < n; i++ {
			used, err := codec.DecodeRecord(body, &m)
			if err != nil {
				t.Fatalf("record %d of %d: %v", i, n, err)
			}
			body = body[used:]
			if m.Topic != topic {
				t.Fatalf("record of %q for topic %q", m.Topic, topic)
			}
			uniq, _ := codec.PropertyValue(m.Properties, codec.PropUniqKey)
			ks, _ := codec.PropertyValue(m.Properties, codec.PropKeys)
			if uniq != key && !strings.Contains(" "+ks+" ", " "+key+" ") {
				t.Fatalf("record (UNIQ_KEY %q, KEYS %q) for key %q", uniq, ks, key)
			}
		}
		if len(body) != 0 {
			t.Fatalf("%d bytes after %d records", len(body), n)
		}
	})
}

package store

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// crcRecords reads the raw records of a queue.
func crcRecords(t *testing.T, s *DefaultStore, topic string, qid int32) [][]byte {
	t.Helper()
	var out [][]byte
	for _, m := range readAll(t, s, topic, qid) {
		rec, err := s.ReadRecordByOffset(m.CommitLogOffset)
		require.NoError(t, err)
		out = append(out, rec)
	}
	return out
}

// requirePropCRC asserts rec carries one CRC property, last, that matches.
func requirePropCRC(t *testing.T, rec []byte) codec.Message {
	t.Helper()
	var m codec.Message
	n, err := codec.DecodeRecord(rec, &m)
	require.NoError(t, err)
	require.Equal(t, len(rec), n)
	require.Equal(t, 1, strings.Count(m.Properties, codec.PropCRC32), "%q", m.Properties)
	require.Equal(t, codec.PropCRC32+"\x01", string(rec[n-codec.PropCRCReservedLen:n-codec.PropCRCReservedLen+9]))
	require.Equal(t, byte(codec.PropSep), rec[n-1])
	ok, found := codec.RecordPropCRC(rec, &m)
	require.True(t, found)
	require.True(t, ok)
	return m
}

func TestEnabledAppendPropCRC(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EnabledAppendPropCRC = true
	s := openStore(t, cfg)
	m := newMsg("P", 0, "one", map[string]string{"TAGS": "t", "KEYS": "k1"})
	plain := codec.RecordSize(m)
	r := s.PutMessage(context.Background(), m)
	require.Equal(t, PutOK, r.Status)
	require.Equal(t, int32(plain+codec.PropCRCReservedLen), r.WroteBytes, "the record length includes the property")
	// A re-put stored record brings its old property: it is replaced.
	stale := newMsg("P", 0, "two", map[string]string{"TAGS": "t", codec.PropCRC32: "0000000001"})
	require.Equal(t, PutOK, s.PutMessage(context.Background(), stale).Status)
	// A batch entry whose properties lack the closing 0x02 gets one.
	var body []byte
	body = codec.AppendBatchEntry(body, 0, []byte("b0"), codec.FormatProperties(map[string]string{"KEYS": "bk0"}))
	body = codec.AppendBatchEntry(body, 0, []byte("b1"), "KEYS\x01bk1")
	require.Equal(t, PutOK, s.PutMessages(context.Background(), newMsg("P", 0, "", nil), body, nil).Status)
	waitDispatched(t, s, "P", 0, 4)

	recs := crcRecords(t, s, "P", 0)
	require.Len(t, recs, 4)
	wantKeys := []string{"k1", "", "bk0", "bk1"}
	for i, rec := range recs {
		got := requirePropCRC(t, rec)
		props := codec.ParseProperties(got.Properties)
		require.Equal(t, wantKeys[i], props[codec.PropKeys], "record %d: %q", i, got.Properties)
	}
	_, n, _, _ := s.QueryMessage("P", "bk1", 10, 1<<20, 0, time.Now().UnixMilli()+1000)
	require.Equal(t, 1, n, "keys before the property are indexed")
	require.NoError(t, s.Shutdown())

	// Crash recovery verifying the property keeps them all.
	cfg.ForceVerifyPropCRC = true
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	require.Equal(t, int64(4), s.MaxOffsetInQueue("P", 0))
	require.NoError(t, s.Shutdown())
}

func TestPropCRCTooLongProperties(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EnabledAppendPropCRC = true
	s := openStore(t, cfg)
	defer s.Shutdown()
	m := newMsg("P", 0, "x", nil)
	m.Properties = "K\x01" + strings.Repeat("v", 32767-3-codec.PropCRCReservedLen+1) + "\x02"
	require.Equal(t, PutPropertiesSizeExceeded, s.PutMessage(context.Background(), m).Status)
	m.Properties = "K\x01" + strings.Repeat("v", 32767-3-codec.PropCRCReservedLen) + "\x02"
	require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
}

// rmqd check verifies the CRC property of the records that carry one.
func TestCheckVerifiesPropCRC(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EnabledAppendPropCRC = true
	s := openStore(t, cfg)
	putN(t, s, "K", 1, 5)
	waitDispatched(t, s, "K", 0, 5)
	phy, _, _, ok := s.findCQ("K", 0).unitAt(3)
	require.True(t, ok)
	require.NoError(t, s.Shutdown())
	require.Empty(t, Check(cfg.StorePathRootDir))

	writeAt(t, commitLogFiles(t, cfg)[0], phy+16, []byte{0x7F}) // FLAG: the body CRC still matches
	probs := Check(cfg.StorePathRootDir)
	require.NotEmpty(t, probs)
	require.Contains(t, fmt.Sprint(probs), "CRC property mismatch")
}

// forceVerifyPropCRC checks the property over the whole record, so damage the
// body CRC cannot see (here the FLAG field) ends the log, as in Java.
func TestForceVerifyPropCRCTruncates(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EnabledAppendPropCRC = true
	s := openStore(t, cfg)
	putN(t, s, "F", 1, 10)
	waitDispatched(t, s, "F", 0, 10)
	phy, _, _, ok := s.findCQ("F", 0).unitAt(6)
	require.True(t, ok)
	require.NoError(t, s.Shutdown())
	writeAt(t, commitLogFiles(t, cfg)[0], phy+16, []byte{0x7F}) // FLAG

	// Body CRC only: the record passes.
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	require.Equal(t, int64(10), s.MaxOffsetInQueue("F", 0))
	require.NoError(t, s.Shutdown())

	cfg.ForceVerifyPropCRC = true
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, phy, s.MaxPhyOffset())
	require.Equal(t, int64(6), s.MaxOffsetInQueue("F", 0))
}

// Under forceVerifyPropCRC a record without the property ends the log, as
// Java's "not found CRC in properties" does.
func TestForceVerifyPropCRCMissingProperty(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.EnabledAppendPropCRC = true
	s := openStore(t, cfg)
	putN(t, s, "M", 1, 3)
	waitDispatched(t, s, "M", 0, 3)
	end := s.MaxPhyOffset()
	require.NoError(t, s.Shutdown())
	cfg.EnabledAppendPropCRC = false
	s = openStore(t, cfg)
	putN(t, s, "M", 1, 2)
	waitDispatched(t, s, "M", 0, 5)
	require.NoError(t, s.Shutdown())

	cfg.ForceVerifyPropCRC = true
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, end, s.MaxPhyOffset())
	require.Equal(t, int64(3), s.MaxOffsetInQueue("M", 0))
}

// javaPropCRCStore writes n records of topic J queue 0 as a Java broker with
// enabledAppendPropCRC leaves them (codec's TestEncodeRecordPropCRCMatchesJava
// holds EncodeRecordPropCRC to Java's bytes): a commitlog file and nothing
// else, so recovery dispatches every record. It returns the log's end.
func javaPropCRCStore(t *testing.T, cfg Config, n int) int64 {
	t.Helper()
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	log := make([]byte, cfg.MappedFileSizeCommitLog)
	at := 0
	for i := range n {
		m := codec.Message{QueueOffset: int64(i), CommitLogOffset: int64(at), BornHost: host, StoreHost: host,
			BornTimestamp: time.Now().UnixMilli(), StoreTimestamp: time.Now().UnixMilli(), Topic: "J",
			Body: []byte(fmt.Sprintf("java-%d", i)), Properties: fmt.Sprintf("TAGS\x01t\x02KEYS\x01jk%d\x02", i)}
		at += codec.EncodeRecordPropCRC(log[at:], &m)
	}
	dir := cfg.commitLogDir()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000000"), log, 0o644))
	return int64(at)
}

// A store Java wrote with enabledAppendPropCRC opens whole whatever this
// store's settings, and its records read back with their properties intact.
func TestRecoveryAcceptsPropCRCRecords(t *testing.T) {
	for _, tc := range []struct{ appendCRC, force, crashed bool }{
		{false, false, false}, {false, false, true}, {true, false, true}, {true, true, true},
	} {
		t.Run(fmt.Sprintf("append=%v,force=%v,crashed=%v", tc.appendCRC, tc.force, tc.crashed), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.EnabledAppendPropCRC, cfg.ForceVerifyPropCRC = tc.appendCRC, tc.force
			end := javaPropCRCStore(t, cfg, 10)
			if tc.crashed {
				markCrashed(t, cfg)
			}
			s := openStore(t, cfg)
			require.Equal(t, end, s.MaxPhyOffset())
			waitDispatched(t, s, "J", 0, 10)
			recs := crcRecords(t, s, "J", 0)
			require.Len(t, recs, 10)
			for i, rec := range recs {
				m := requirePropCRC(t, rec)
				props := codec.ParseProperties(m.Properties)
				require.Equal(t, "t", props[codec.PropTags])
				require.Equal(t, fmt.Sprintf("jk%d", i), props[codec.PropKeys])
			}
			_, n, _, _ := s.QueryMessage("J", "jk7", 10, 1<<20, 0, time.Now().UnixMilli()+1000)
			require.Equal(t, 1, n)
			r := s.PutMessage(context.Background(), newMsg("J", 0, "after", nil))
			require.Equal(t, end, r.WroteOffset)
			require.Equal(t, int64(10), r.QueueOffset)
			require.NoError(t, s.Shutdown())
		})
	}
}

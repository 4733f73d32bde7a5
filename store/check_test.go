package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// checkedStore writes a small store through rmqd (two queues, keys, a config
// file) and shuts it down cleanly.
func checkedStore(t *testing.T) (string, Config) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStore(t, cfg)
	for i := 0; i < 30; i++ {
		m := newMsg("CK", int32(i%2), fmt.Sprintf("body-%d-%s", i, strings.Repeat("x", i*10)), map[string]string{
			"KEYS": fmt.Sprintf("k%d other", i), "UNIQ_KEY": fmt.Sprintf("U%d", i), "TAGS": "T"})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "CK", 1, 15)
	require.NoError(t, s.Shutdown())
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "config"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config", "consumerOffset.json"),
		[]byte(`{"offsetTable":{"CK@g":{0:3,1:4}}}`), 0o644))
	return dir, cfg
}

func TestCheckPassesOnCleanStore(t *testing.T) {
	dir, _ := checkedStore(t)
	require.Empty(t, Check(dir))
}

func firstCommitLog(t *testing.T, dir string) string {
	names, _, err := numbered(filepath.Join(dir, "commitlog"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	return names[0]
}

// TestCheckReportsPlantedCorruptions plants one corruption per case and wants
// a problem naming the file it is in.
func TestCheckReportsPlantedCorruptions(t *testing.T) {
	cases := []struct {
		name   string
		plant  func(t *testing.T, dir string) string // returns the damaged file
		repair bool                                  // -repair fixes it
	}{
		{"flipped body byte", func(t *testing.T, dir string) string {
			p := firstCommitLog(t, dir)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			i := strings.Index(string(b), "body-7-")
			require.Positive(t, i)
			b[i+8] ^= 0x40 // inside the body of message 7
			require.NoError(t, os.WriteFile(p, b, 0o644))
			return p
		}, true},
		{"truncated record", func(t *testing.T, dir string) string {
			p := firstCommitLog(t, dir)
			require.NoError(t, os.Truncate(p, 1500))
			return p
		}, false},
		{"consume queue past the end", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "consumequeue", "CK", "0", "00000000000000000000")
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			require.NoError(t, err)
			defer f.Close()
			var u [cqUnitSize]byte
			binary.BigEndian.PutUint64(u[:], 1<<30)
			binary.BigEndian.PutUint32(u[8:], 100)
			_, err = f.WriteAt(u[:], 15*cqUnitSize) // the unit after the 15 written
			require.NoError(t, err)
			return p
		}, true},
		{"bad json", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "config", "topics.json")
			require.NoError(t, os.WriteFile(p, []byte(`{"topicConfigTable":{"a":`), 0o644))
			return p
		}, false},
		{"unit pointing at the wrong record", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "consumequeue", "CK", "1", "00000000000000000000")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			copy(b[0:cqUnitSize], b[cqUnitSize:2*cqUnitSize]) // unit 0 repeats unit 1
			require.NoError(t, os.WriteFile(p, b, 0o644))
			return p
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg := checkedStore(t)
			damaged := tc.plant(t, dir)
			probs := Check(dir)
			require.NotEmpty(t, probs)
			var named bool
			for _, p := range probs {
				t.Log(p)
				named = named || p.Path == damaged
			}
			require.True(t, named, "no problem names %s", damaged)
			if !tc.repair {
				return
			}
			done, err := Repair(dir, probs)
			require.NoError(t, err)
			require.NotEmpty(t, done)
			require.Empty(t, Check(dir), "after repair")
			// The repaired store opens.
			s := openStore(t, cfg)
			require.NoError(t, s.Shutdown())
		})
	}
}

// handWrittenStore writes n records of topic T queue 0 into one commitlog file
// and the matching consume queue, byte by byte as a broker leaves them (no
// rmqd code), and returns its root and the records' offsets.
func handWrittenStore(t *testing.T, n int) (string, []int64) {
	t.Helper()
	root := t.TempDir()
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	log := make([]byte, 0, 4096)
	cq := make([]byte, 0, 20*n)
	var offs []int64
	for i := range n {
		m := codec.Message{QueueID: 0, QueueOffset: int64(i), CommitLogOffset: int64(len(log)), BornHost: host,
			StoreHost: host, Topic: "T", Body: []byte(fmt.Sprintf("body-%d", i))}
		buf := make([]byte, codec.RecordSize(&m))
		codec.EncodeRecord(buf, &m)
		offs = append(offs, int64(len(log)))
		cq = binary.BigEndian.AppendUint64(cq, uint64(len(log)))
		cq = binary.BigEndian.AppendUint32(cq, uint32(len(buf)))
		cq = binary.BigEndian.AppendUint64(cq, 0)
		log = append(log, buf...)
	}
	log = append(log, make([]byte, 4096)...) // the zero tail of a mapped file
	write := func(dir string, b []byte) {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000000"), b, 0o644))
	}
	write(filepath.Join(root, "commitlog"), log)
	write(filepath.Join(root, "consumequeue", "T", "0"), append(cq, make([]byte, 200)...))
	return root, offs
}

// TestCheckHandWrittenStore: the corruptions the chaos runs must catch, each
// planted into a store written without rmqd, each named by a problem.
func TestCheckHandWrittenStore(t *testing.T) {
	root, offs := handWrittenStore(t, 5)
	r := Inspect(root)
	if len(r.Problems) != 0 || r.Records != 5 || r.Units != 5 || r.PerTopic["T"] != 5 {
		t.Fatalf("clean store: %+v", r)
	}

	corrupt := func(t *testing.T, path string, at int64, b []byte, want string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		old := make([]byte, len(b))
		_, _ = f.ReadAt(old, at)
		_, _ = f.WriteAt(b, at)
		defer func() { _, _ = f.WriteAt(old, at); _ = f.Close() }()
		probs := Check(root)
		found := false
		for _, p := range probs {
			found = found || strings.Contains(p.String(), want)
		}
		if !found {
			t.Errorf("corrupted at %d: %v; want a problem saying %q", at, probs, want)
		}
	}
	log := filepath.Join(root, "commitlog", "00000000000000000000")
	cq := filepath.Join(root, "consumequeue", "T", "0", "00000000000000000000")
	// The body starts 88 bytes into a record with IPv4 hosts.
	t.Run("body", func(t *testing.T) { corrupt(t, log, offs[2]+90, []byte("X"), "body CRC") })
	t.Run("unit points nowhere", func(t *testing.T) { corrupt(t, cq, 20*3+7, []byte{1}, "no record starts there") })
	t.Run("unit missing", func(t *testing.T) { corrupt(t, cq, 20*4+8, []byte{0, 0, 0, 0}, "in no consume queue") })
	t.Run("offset field", func(t *testing.T) { corrupt(t, log, offs[1]+35, []byte{9}, "PHYSICALOFFSET") })
	// Unit 1 repeats unit 0: record 0 would be indexed twice.
	t.Run("indexed twice", func(t *testing.T) {
		corrupt(t, cq, 20, binary.BigEndian.AppendUint64(nil, uint64(offs[0])), "points to a record of queue offset 0")
	})
}

// TestCheckAcceptsPreallocatedNextFile: Apache makes the next commitlog file ahead of need, so an empty file
// may follow one that is not full; a next file holding anything still makes the gap a problem.
func TestCheckAcceptsPreallocatedNextFile(t *testing.T) {
	root, _ := handWrittenStore(t, 5)
	first := filepath.Join(root, "commitlog", "00000000000000000000")
	st, err := os.Stat(first)
	require.NoError(t, err)
	next := filepath.Join(root, "commitlog", fmt.Sprintf("%020d", st.Size()))
	require.NoError(t, os.WriteFile(next, make([]byte, 8192), 0o644))
	r := Inspect(root)
	require.Empty(t, r.Problems)
	require.Equal(t, 5, r.Records)

	b := make([]byte, 8192)
	b[100] = 1
	require.NoError(t, os.WriteFile(next, b, 0o644))
	r = Inspect(root)
	require.NotEmpty(t, r.Problems)
	require.Contains(t, r.Problems[0].String(), "zeros before the file's end record")
}

// TestCheckSkipsUndispatchedTailAfterCrash: an abort file says the broker did
// not stop cleanly, so records recovery will dispatch again are no problem.
func TestCheckSkipsUndispatchedTailAfterCrash(t *testing.T) {
	root, _ := handWrittenStore(t, 3)
	cq := filepath.Join(root, "consumequeue", "T", "0", "00000000000000000000")
	require.NoError(t, os.Truncate(cq, 2*cqUnitSize))
	require.NotEmpty(t, Check(root))
	require.NoError(t, os.WriteFile(filepath.Join(root, "abort"), nil, 0o644))
	require.Empty(t, Check(root))
}

package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

func TestQuoteBareKeys(t *testing.T) {
	require.Equal(t, `{"a":{"0":1, "12":"x{3:4}"},"b":[1,2]}`,
		string(quoteBareKeys([]byte(`{"a":{0:1, 12:"x{3:4}"},"b":[1,2]}`))))
}

package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

func putN(t testing.TB, s *DefaultStore, topic string, queues int32, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		m := newMsg(topic, int32(i)%queues, fmt.Sprintf("%s-%d", topic, i), map[string]string{"TAGS": "t", "KEYS": fmt.Sprintf("key%d", i)})
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
}

func TestReopenKeepsMessagesAndOffsets(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 16 * 1024
	s := openStore(t, cfg)
	putN(t, s, "R", 3, 300)
	waitDispatched(t, s, "R", 2, 100)
	maxPhy := s.MaxPhyOffset()
	require.NoError(t, s.Shutdown())

	s = openStore(t, cfg)
	require.Equal(t, maxPhy, s.MaxPhyOffset())
	for q := int32(0); q < 3; q++ {
		require.Equal(t, int64(100), s.MaxOffsetInQueue("R", q))
		got := readAll(t, s, "R", q)
		require.Len(t, got, 100)
		for i, m := range got {
			require.Equal(t, fmt.Sprintf("R-%d", i*3+int(q)), string(m.Body))
		}
	}
	r := s.PutMessage(context.Background(), newMsg("R", 1, "after", nil))
	require.Equal(t, int64(100), r.QueueOffset)
	require.Equal(t, maxPhy, r.WroteOffset)
	require.NoError(t, s.Shutdown())
}

// lastFile returns the path and data of the commitlog tail file through a fresh open.
func commitLogFiles(t *testing.T, cfg Config) []string {
	t.Helper()
	entries, err := os.ReadDir(cfg.commitLogDir())
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, filepath.Join(cfg.commitLogDir(), e.Name()))
	}
	return out
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func markCrashed(t *testing.T, cfg Config) {
	require.NoError(t, os.WriteFile(filepath.Join(cfg.StorePathRootDir, "abort"), nil, 0o644))
}

func TestTornTailIsCut(t *testing.T) {
	for _, tc := range []struct {
		clean bool
		cut   int // bytes missing at the end of the torn record
	}{{true, 5}, {false, 5}, {false, 20}, {true, 40}} {
		clean := tc.clean
		t.Run(fmt.Sprintf("clean=%v,cut=%d", clean, tc.cut), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			s := openStore(t, cfg)
			putN(t, s, "Torn", 1, 20)
			waitDispatched(t, s, "Torn", 0, 20)
			end := s.MaxPhyOffset()
			require.NoError(t, s.Shutdown())

			// A half-written record after the last good one.
			m := newMsg("Torn", 0, "half written record body", map[string]string{"TAGS": "x"})
			m.QueueOffset = 20
			m.CommitLogOffset = end
			rec := make([]byte, codec.RecordSize(m))
			codec.EncodeRecord(rec, m)
			files := commitLogFiles(t, cfg)
			writeAt(t, files[len(files)-1], end, rec[:len(rec)-tc.cut])
			if !clean {
				markCrashed(t, cfg)
			}
			s = openStore(t, cfg)
			require.Equal(t, end, s.MaxPhyOffset())
			require.Equal(t, int64(20), s.MaxOffsetInQueue("Torn", 0))
			f := s.commitLog.q.last()
			require.True(t, allZero(f.data[end:end+int64(len(rec))]), "tail zeroed")
			r := s.PutMessage(context.Background(), newMsg("Torn", 0, "next", nil))
			require.Equal(t, end, r.WroteOffset)
			require.Equal(t, int64(20), r.QueueOffset)
			waitDispatched(t, s, "Torn", 0, 21)
			got := readAll(t, s, "Torn", 0)
			require.Len(t, got, 21)
			require.Equal(t, "next", string(got[20].Body))
			require.NoError(t, s.Shutdown())
		})
	}
}

func TestBadCRCTailCutsQueueToo(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	putN(t, s, "C", 1, 10)
	waitDispatched(t, s, "C", 0, 10)
	cq := s.findCQ("C", 0)
	phy, size, _, ok := cq.unitAt(9)
	require.True(t, ok)
	require.NoError(t, s.Shutdown())
	// Flip a body byte of the last record: its CRC no longer matches.
	require.Greater(t, size, int32(90))
	writeAt(t, commitLogFiles(t, cfg)[0], phy+88, []byte{0xFF}) // first body byte (IPv4 hosts)
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, phy, s.MaxPhyOffset())
	require.Equal(t, int64(9), s.MaxOffsetInQueue("C", 0))
	r := s.PutMessage(context.Background(), newMsg("C", 0, "again", nil))
	require.Equal(t, int64(9), r.QueueOffset)
}

func TestAbnormalRecoveryRebuildsLostQueue(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	putN(t, s, "L", 2, 40)
	waitDispatched(t, s, "L", 1, 20)
	require.NoError(t, s.Shutdown())
	// Lose the consume queue files entirely; a crash restart rebuilds them.
	require.NoError(t, os.RemoveAll(filepath.Join(cfg.StorePathRootDir, "consumequeue")))
	markCrashed(t, cfg)
	s = openStore(t, cfg)
	defer s.Shutdown()
	require.Equal(t, int64(20), s.MaxOffsetInQueue("L", 0))
	require.Len(t, readAll(t, s, "L", 1), 20)
	_, n, _, _ := s.QueryMessage("L", "key7", 10, 1<<20, 0, time.Now().UnixMilli()+1000)
	require.Equal(t, 1, n)
}

func TestSyncFlushPut(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	defer s.Shutdown()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				r := s.PutMessage(context.Background(), newMsg("S", int32(g), "sync", nil))
				if r.Status != PutOK {
					t.Errorf("status %v", r.Status)
					return
				}
				if s.commitLog.q.flushedWhere.Load() < r.WroteOffset+int64(r.WroteBytes) {
					t.Errorf("acknowledged before flush")
					return
				}
			}
		}()
	}
	wg.Wait()
	// WAIT=false does not wait for the flush.
	r := s.PutMessage(context.Background(), newMsg("S", 0, "nowait", map[string]string{"WAIT": "false"}))
	require.Equal(t, PutOK, r.Status)
}

// The crash child appends under SYNC_FLUSH and prints every acknowledged message;
// the parent kills it with SIGKILL at a random moment and checks what survived.
const (
	crashChildEnv       = "RMQD_STORE_CRASH_CHILD"
	crashChildJavaSizes = "RMQD_STORE_CRASH_CHILD_JAVA_SIZES"
)

// crashConfig has small files so that a kill often falls while one is made:
// a commitlog file every ~40 messages, an index file every ~20.
func crashConfig(dir string) Config {
	cfg := testConfig(dir)
	cfg.MappedFileSizeCommitLog = 64 * 1024
	cfg.MappedFileSizeConsumeQueue = 20 * 100
	cfg.MaxIndexNum = 40
	return cfg
}

func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("helper process for TestCrashRecovery")
	}
	cfg := crashConfig(dir)
	if os.Getenv(crashChildJavaSizes) != "" {
		cfg = testConfig(dir) // StoreCheck's sizes
	}
	cfg.FlushDiskType = SyncFlush
	s, err := Open(cfg, testLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	if err := s.Start(); err != nil {
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf("g%d-%d-%d-%s", g, i, time.Now().UnixNano(), strings.Repeat("x", rand.IntN(3000)))
				key := fmt.Sprintf("k%d-%d-%d", os.Getpid(), g, i)
				r := s.PutMessage(context.Background(), newMsg("Crash", int32(g), body, map[string]string{"KEYS": "k " + key}))
				if r.Status != PutOK {
					continue
				}
				mu.Lock()
				fmt.Fprintf(out, "%d %d %d %s %s\n", g, r.QueueOffset, r.WroteOffset, body[:strings.IndexByte(body[3:], '-')+3+20], key)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	// Leftovers of an interrupted file creation are removed at load.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "commitlog"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "commitlog", fileName(0)+".tmp"), []byte("x"), 0o644))
	type ack struct {
		qid       int32
		qoff, phy int64
		prefix    string
		key       string
	}
	var acked []ack
	rounds := 10
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		lines := make(chan string, 1024)
		go func(out chan<- string) {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				out <- sc.Text()
			}
			close(out)
		}(lines)
		record := func(l string) {
			f := strings.Fields(l)
			if len(f) != 5 {
				return // a line cut by the kill
			}
			q, _ := strconv.Atoi(f[0])
			qoff, _ := strconv.ParseInt(f[1], 10, 64)
			phy, _ := strconv.ParseInt(f[2], 10, 64)
			acked = append(acked, ack{int32(q), qoff, phy, f[3], f[4]})
		}
		// Let it write a little, then kill it at a random moment.
		time.Sleep(time.Duration(50+rand.IntN(250)) * time.Millisecond)
		if round == 0 {
			// The running child holds the store's fcntl lock.
			first, ok := <-lines
			require.True(t, ok, "child wrote nothing")
			record(first)
			_, err := Open(testConfig(dir), testLogger())
			require.ErrorIs(t, err, ErrLocked)
		}
		require.NoError(t, cmd.Process.Kill())
		for l := range lines {
			record(l)
		}
		_ = cmd.Wait()

		cfg := crashConfig(dir)
		s, err := Open(cfg, testLogger())
		require.NoError(t, err, "round %d", round)
		for _, a := range acked {
			m, err := s.LookMessageByOffset(a.phy)
			require.NoError(t, err, "round %d: acked record at %d", round, a.phy)
			require.True(t, strings.HasPrefix(string(m.Body), a.prefix), "round %d: body at %d", round, a.phy)
			require.Equal(t, a.qoff, m.QueueOffset)
			cq := s.findCQ("Crash", a.qid)
			require.NotNil(t, cq)
			phy, _, _, ok := cq.unitAt(a.qoff)
			require.True(t, ok, "round %d: unit %d-%d", round, a.qid, a.qoff)
			require.Equal(t, a.phy, phy)
		}
		// Every consume-queue unit points at a valid record of its own queue and offset.
		for q := int32(0); q < 3; q++ {
			cq := s.findCQ("Crash", q)
			if cq == nil {
				continue
			}
			for off := cq.minOffset(); off < cq.maxOffset(); off++ {
				phy, size, _, ok := cq.unitAt(off)
				require.True(t, ok)
				m, err := s.LookMessageByOffset(phy)
				require.NoError(t, err, "round %d unit %d-%d", round, q, off)
				require.Equal(t, size, m.StoreSize)
				require.Equal(t, off, m.QueueOffset)
				require.Equal(t, q, m.QueueID)
			}
		}
		// The index answers for acknowledged keys, rebuilt where the crash cost
		// index files: the newest ones and a sample of the rest.
		until := time.Now().UnixMilli() + 60_000
		for i := range acked {
			if i < len(acked)-50 && rand.IntN(max(1, len(acked)/100)) != 0 {
				continue
			}
			_, n, _, _ := s.QueryMessage("Crash", acked[i].key, 4, 1<<20, 0, until)
			require.Equal(t, 1, n, "round %d: key %s", round, acked[i].key)
		}
		require.NoError(t, s.Shutdown())
		if round%3 == 2 {
			// Sometimes restart after an unclean exit on purpose.
			markCrashed(t, cfg)
		}
	}
	t.Logf("%d acknowledged messages checked over %d kills", len(acked), rounds)
	require.NotEmpty(t, acked)
}

// TestGarbageTailNeverServed writes random bytes (sometimes after a plausible
// record header) past the end of the log and checks that reopening keeps every
// real message, serves nothing else and accepts new appends.
func TestGarbageTailNeverServed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	putN(t, s, "G", 1, 10)
	waitDispatched(t, s, "G", 0, 10)
	require.NoError(t, s.Shutdown())
	rng := rand.New(rand.NewPCG(1, 2))
	want := int64(10)
	for round := 0; round < 25; round++ {
		s = openStore(t, cfg)
		end := s.MaxPhyOffset()
		require.NoError(t, s.Shutdown())
		garbage := make([]byte, 1+rng.IntN(600))
		for i := range garbage {
			garbage[i] = byte(rng.IntN(256))
		}
		if round%2 == 0 && len(garbage) >= 8 {
			// A believable TOTALSIZE and magic, then noise.
			copy(garbage, []byte{0, 0, byte(len(garbage) >> 8), byte(len(garbage)), 0xDA, 0xA3, 0x20, 0xA7})
		}
		files := commitLogFiles(t, cfg)
		writeAt(t, files[len(files)-1], end%int64(cfg.MappedFileSizeCommitLog), garbage)
		if round%3 == 0 {
			markCrashed(t, cfg)
		}
		s = openStore(t, cfg)
		require.Equal(t, end, s.MaxPhyOffset(), "round %d", round)
		got := readAll(t, s, "G", 0)
		require.Len(t, got, int(want))
		for i, m := range got {
			require.Equal(t, int64(i), m.QueueOffset)
			require.Equal(t, codec.BodyCRC(m.Body), m.BodyCRC)
		}
		require.Equal(t, PutOK, s.PutMessage(context.Background(), newMsg("G", 0, fmt.Sprint(round), nil)).Status)
		want++
		waitDispatched(t, s, "G", 0, want)
		require.NoError(t, s.Shutdown())
	}
}

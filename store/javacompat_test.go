package store

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestJavaStoreCompat checks the on-disk format both ways against the Java
// DefaultMessageStore (rocketmq-store 5.3.3 from Maven Central): rmqd writes a
// store, Java reads every message, queries the index and appends; rmqd then reads
// Java's records. Needs java, javac and mvn; run with RMQD_JAVA_COMPAT=1.
func TestJavaStoreCompat(t *testing.T) {
	runJava, work := javaStoreCheck(t)
	var out []byte
	var err error
	dir := filepath.Join(work, "store")
	cfg := testConfig(dir)
	cfg.MappedFileSizeCommitLog = 1 << 20 // must match StoreCheck
	s := openStore(t, cfg)
	const n = 40
	body := strings.Repeat("b", 30000) // 40 x 30 KB spans two commitlog files
	for i := 0; i < n; i++ {
		m := newMsg("JT", int32(i%2), fmt.Sprintf("go-%d-%s", i, body[:i*750]), map[string]string{
			"TAGS": "GoTag", "KEYS": fmt.Sprintf("key%d extra", i), "UNIQ_KEY": fmt.Sprintf("GUNIQ%d", i)})
		if i == 7 {
			m.BornHost = netip.MustParseAddrPort("[::1]:5555") // an IPv6 born host
		}
		require.Equal(t, PutOK, s.PutMessage(context.Background(), m).Status)
	}
	waitDispatched(t, s, "JT", 1, n/2)
	require.NoError(t, s.Shutdown())

	out = runJava(dir, "JT", "2", "6")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var msgs, puts int
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) >= 7 && f[0] == "MSG":
			var q, off int
			fmt.Sscan(f[1], &q)
			fmt.Sscan(f[2], &off)
			i := off*2 + q
			require.True(t, strings.HasPrefix(f[3], fmt.Sprintf("go-%d-", i)), l)
			require.Equal(t, len(fmt.Sprintf("go-%d-", i))+i*750, len(f[3]), "body length of %d", i)
			require.Equal(t, "GoTag", f[4])
			require.Equal(t, fmt.Sprintf("key%d+extra", i), f[5])
			require.Equal(t, "crc=true", f[6])
			msgs++
		case len(f) == 2 && f[0] == "QUERY":
		case len(f) == 3 && f[0] == "QUERY":
			require.Equal(t, "1", f[2], l)
		case len(f) == 4 && f[0] == "PUT":
			require.Equal(t, "PUT_OK", f[1], l)
			puts++
		}
	}
	require.Equal(t, n, msgs, "java read: %s", out)
	require.Equal(t, 6, puts)
	require.Equal(t, "DONE", lines[len(lines)-1])
	// The store Java's DefaultMessageStore appended to (and shut down) checks clean.
	require.Empty(t, Check(dir), "rmqd check on the store Java wrote")

	// A second Java run appends and then dies without shutdown (abort file left).
	out = runJava(dir, "JT", "2", "4", "halt", "crash-")
	require.Contains(t, string(out), "HALT")
	_, err = os.Stat(filepath.Join(dir, "abort"))
	require.NoError(t, err, "java left its abort file")

	// Java's appends continue our queue offsets and read back here, the crashed
	// run's through rmqd's abnormal recovery.
	s = openStore(t, cfg)
	defer s.Shutdown()
	for q := int32(0); q < 2; q++ {
		got := readAll(t, s, "JT", q)
		require.Len(t, got, n/2+3+2)
		for k, m := range got[n/2:] {
			want := fmt.Sprintf("java-%d", k*2+int(q))
			if k >= 3 {
				want = fmt.Sprintf("crash-%d", (k-3)*2+int(q))
			}
			require.Equal(t, want, string(m.Body))
			require.Equal(t, int64(n/2+k), m.QueueOffset)
			tags, _ := codec.PropertyValue(m.Properties, "TAGS")
			require.Equal(t, "JTag", tags)
		}
	}
	recs, _, _ := queryRecords(s, "JT", "jkey3", 10, 0, 1<<62)
	require.Len(t, recs, 2) // one from each Java run
	recs, _, _ = queryRecords(s, "JT", "jkey5", 10, 0, 1<<62)
	require.Len(t, recs, 1) // only the first run had six
	r := s.PutMessage(context.Background(), newMsg("JT", 0, "after-java", nil))
	require.Equal(t, int64(n/2+5), r.QueueOffset)
}

// javaStoreCheck compiles StoreCheck against rocketmq-store from Maven and returns
// a runner and a scratch directory; it skips unless RMQD_JAVA_COMPAT=1.
func javaStoreCheck(t *testing.T) (func(args ...string) []byte, string) {
	t.Helper()
	if os.Getenv("RMQD_JAVA_COMPAT") != "1" {
		t.Skip("set RMQD_JAVA_COMPAT=1 (needs java, javac, mvn)")
	}
	src, err := filepath.Abs("testdata/javacompat")
	require.NoError(t, err)
	work := t.TempDir()
	cpFile := filepath.Join(work, "cp.txt")
	mvn := exec.Command("mvn", "-q", "dependency:build-classpath", "-Dmdep.outputFile="+cpFile)
	mvn.Dir = src
	out, err := mvn.CombinedOutput()
	require.NoError(t, err, "%s", out)
	cp, err := os.ReadFile(cpFile)
	require.NoError(t, err)
	classes := filepath.Join(work, "classes")
	out, err = exec.Command("javac", "-d", classes, "-cp", string(cp), filepath.Join(src, "src/main/java/StoreCheck.java")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return func(args ...string) []byte {
		java := exec.Command("java", append([]string{"-cp", classes + string(os.PathListSeparator) + string(cp), "StoreCheck"}, args...)...)
		java.Env = append(os.Environ(), "HOME="+work) // Java logs under ~/logs
		out, err := java.Output()
		require.NoError(t, err, "%s", out)
		return out
	}, work
}

// TestJavaOpensCrashedStore kills an rmqd SYNC_FLUSH writer with SIGKILL and lets
// the Java store recover the directory: every acknowledged message must be there,
// so the checkpoint rmqd leaves steers Java's abnormal recovery correctly.
func TestJavaOpensCrashedStore(t *testing.T) {
	runJava, work := javaStoreCheck(t)
	dir := filepath.Join(work, "store")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashChildJavaSizes+"=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, cmd.Process.Kill())
	raw, _ := io.ReadAll(stdout)
	_ = cmd.Wait()
	acked := map[string]string{} // "q offset" -> body prefix
	for _, l := range strings.Split(string(raw), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 { // queue, offset, phy, body prefix, key
			acked[f[0]+" "+f[1]] = f[3]
		}
	}
	require.NotEmpty(t, acked)
	out := runJava(dir, "Crash", "3", "0")
	seen := 0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 4 && f[0] == "MSG" {
			if p, ok := acked[f[1]+" "+f[2]]; ok {
				require.True(t, strings.HasPrefix(f[3], p), "java %s: %.40s vs %s", f[1]+" "+f[2], f[3], p)
				seen++
			}
		}
	}
	require.Equal(t, len(acked), seen, "acknowledged messages Java recovered")
	t.Logf("java recovered all %d acknowledged messages", seen)
}

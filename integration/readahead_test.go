package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestMqadminCommitLogReadAheadMode runs `mqadmin setCommitLogReadAheadMode` (SET_COMMITLOG_READ_MODE, 2004)
// against each target: the answer's text, getBrokerConfig's dataReadAheadEnable, and the broker process's
// commitlog mappings (the kernel's "rr" VmFlag of MADV_RANDOM in /proc/<pid>/smaps) after mode 1 and mode 0,
// and of the file the writer takes next under each; then the refusals a raw request gets, which must be
// Apache's codes and remarks.
func TestMqadminCommitLogReadAheadMode(t *testing.T) {
	harness.RequireJars(t, "mqadmin")
	answers := map[string][]string{}
	for _, kind := range targetsFromEnv(t) {
		t.Run(kind, func(t *testing.T) {
			if kind == harness.KindApache {
				harness.RequireJars(t, "apache")
			}
			tg := harness.Start(t, kind, harness.Options{BrokerConf: map[string]string{
				"mappedFileSizeCommitLog": fmt.Sprint(1 << 20),
			}})
			const topic = "IT_readahead"
			r := newRawClient(t, tg)
			r.createTopic(topic, 1)
			body := []byte(strings.Repeat("r", 16<<10))
			send := func(n int) {
				for i := 0; i < n; i++ {
					if resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body, 30*time.Second); resp.Code != codec.RespSuccess {
						t.Fatalf("send %d: code %d %q", i, resp.Code, resp.Remark)
					}
				}
			}
			pid := tg.Procs[len(tg.Procs)-1].Pid()
			dir := filepath.Join(tg.StoreDir, "commitlog")
			check := func(what string, random bool) {
				mapped, rr := commitLogReadFlags(t, pid, dir, commitLogMaxOffset(t, r))
				if mapped == 0 {
					t.Logf("%s: no commitlog mapping found in /proc/%d/smaps; flags not checked", kind, pid)
					return
				}
				if random && rr != mapped || !random && rr != 0 {
					t.Fatalf("%s: %d of %d commitlog mappings random-read", what, rr, mapped)
				}
				t.Logf("%s: %d of %d commitlog mappings random-read", what, rr, mapped)
			}
			send(100) // about 1.6 MiB: two 1 MiB commitlog files
			for _, m := range []struct {
				mode   string
				random bool
			}{{"1", true}, {"0", false}} {
				out := harness.Mqadmin(t, tg, "setCommitLogReadAheadMode", "-b", tg.BrokerAddr, "-m", m.mode)
				if !strings.Contains(out, "set commitlog readahead mode success, mode: "+m.mode) {
					t.Fatalf("setCommitLogReadAheadMode -m %s:\n%s", m.mode, out)
				}
				out = harness.Mqadmin(t, tg, "getBrokerConfig", "-b", tg.BrokerAddr)
				want := fmt.Sprintf(`dataReadAheadEnable\s*=\s*%t\s*\n`, !m.random)
				if !regexp.MustCompile(want).MatchString(out) {
					t.Fatalf("getBrokerConfig after -m %s lacks %s:\n%s", m.mode, want, out)
				}
				check("after -m "+m.mode, m.random)
				send(70) // into the next file, which the writer takes under this mode
				check("new file after -m "+m.mode, m.random)
			}
			for _, ext := range []map[string]string{nil, {"READ_AHEAD_MODE": "x"}, {"other": "1"}, {"READ_AHEAD_MODE": "2"}} {
				resp := r.invoke(codec.ReqSetCommitlogReadMode, ext, nil, 10*time.Second)
				answers[kind] = append(answers[kind], fmt.Sprintf("%v: %d %q", ext, resp.Code, resp.Remark))
			}
		})
	}
	a, b := answers[harness.KindApache], answers[harness.KindRmqd]
	if a == nil || b == nil {
		t.Logf("comparison skipped; answers %v", answers)
		return
	}
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("refusals differ:\napache:\n%s\nrmqd:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	t.Logf("refusals as Apache's:\n%s", strings.Join(b, "\n"))
}

// commitLogMaxOffset is GET_BROKER_RUNTIME_INFO's commitLogMaxOffset.
func commitLogMaxOffset(t *testing.T, r *rawClient) int64 {
	t.Helper()
	resp := r.invoke(codec.ReqGetBrokerRuntimeInfo, nil, nil, 10*time.Second)
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(resp.Body, &kv); resp.Code != codec.RespSuccess || err != nil {
		t.Fatalf("runtime info: code %d %q: %v", resp.Code, resp.Remark, err)
	}
	n, err := strconv.ParseInt(kv.Table["commitLogMaxOffset"], 10, 64)
	if err != nil {
		t.Fatalf("commitLogMaxOffset %q: %v", kv.Table["commitLogMaxOffset"], err)
	}
	return n
}

// commitLogReadFlags counts pid's mappings of commitlog files under dir that start below maxPhy, and those
// with the random-read VmFlag. The next file, made ahead by rmqd's page keeper or Java's
// AllocateMappedFileService, is left out: both advise it only when the writer takes it.
func commitLogReadFlags(t *testing.T, pid int, dir string, maxPhy int64) (mapped, rr int) {
	t.Helper()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		t.Logf("smaps: %v", err)
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	in := false
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if in && strings.Contains(v+" ", " rr ") {
				rr++
			}
			continue
		}
		if fs := strings.Fields(line); len(fs) >= 6 && strings.Contains(fs[0], "-") {
			from, err := strconv.ParseInt(filepath.Base(fs[5]), 10, 64)
			in = filepath.Dir(fs[5]) == dir && err == nil && from < maxPhy
			if in {
				mapped++
			}
		}
	}
	return mapped, rr
}

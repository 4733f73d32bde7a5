package integration

import (
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

// TestLiveStoreConfig lowers fileReservedTime with `mqadmin updateBrokerConfig` on a running rmqd whose
// commitlog files are two hours old, and expects getBrokerConfig to show the new value and the broker's
// cleaner to remove those files (the queue's min offset moves up) without a restart, as a Java broker does.
// rmqd only: the test ages the store's files by hand, and Apache's are the same only once it is stopped.
func TestLiveStoreConfig(t *testing.T) {
	harness.RequireJars(t, "mqadmin")
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	h := time.Now().Hour()
	tg := harness.StartRmqd(t, harness.Options{BrokerConf: map[string]string{
		"mappedFileSizeCommitLog":      strconv.Itoa(1 << 20),
		"cleanResourceInterval":        "200",
		"deleteCommitLogFilesInterval": "0",
		"deleteWhen":                   fmt.Sprintf("%02d;%02d", h, (h+1)%24),
		"fileReservedTime":             "72",
	}})
	const topic = "IT_livestore"
	r := newRawClient(t, tg)
	r.createTopic(topic, 1)
	body := []byte(strings.Repeat("r", 16<<10))
	for i := 0; i < 300; i++ { // about 5 MiB: several 1 MiB commitlog files
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body, 30*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send %d: code %d %q", i, resp.Code, resp.Remark)
		}
	}
	dir := filepath.Join(tg.StoreDir, "commitlog")
	files, err := os.ReadDir(dir)
	if err != nil || len(files) < 3 {
		t.Fatalf("commitlog files: %d (%v), want at least 3", len(files), err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, f := range files {
		if err := os.Chtimes(filepath.Join(dir, f.Name()), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.minOffset(topic, 0); n != 0 {
		t.Fatalf("min offset %d before the update: fileReservedTime 72 keeps two-hour-old files", n)
	}

	out := harness.Mqadmin(t, tg, "updateBrokerConfig", "-b", tg.BrokerAddr, "-k", "fileReservedTime", "-v", "1")
	if !strings.Contains(out, "update broker config success, "+tg.BrokerAddr) {
		t.Fatalf("updateBrokerConfig:\n%s", out)
	}
	out = harness.Mqadmin(t, tg, "getBrokerConfig", "-b", tg.BrokerAddr)
	if !regexp.MustCompile(`fileReservedTime\s*=\s*1\s*\n`).MatchString(out) {
		t.Fatalf("getBrokerConfig after updateBrokerConfig lacks fileReservedTime = 1:\n%s", out)
	}
	waitFor(t, 30*time.Second, "the aged commitlog files to go after fileReservedTime=1", func() bool {
		return r.minOffset(topic, 0) > 0
	})
	left, err := os.ReadDir(dir)
	if err != nil || len(left) >= len(files) {
		t.Fatalf("commitlog files: %d before, %d after (%v)", len(files), len(left), err)
	}
	t.Logf("commitlog files %d → %d, queue min offset %d", len(files), len(left), r.minOffset(topic, 0))
}

// minOffset is GET_MIN_OFFSET.
func (r *rawClient) minOffset(topic string, queue int) int64 {
	r.tb.Helper()
	resp := r.invoke(codec.ReqGetMinOffset, map[string]string{"topic": topic, "queueId": strconv.Itoa(queue)}, nil, 10*time.Second)
	v, _ := resp.Ext.Get("offset")
	n, err := strconv.ParseInt(v, 10, 64)
	if resp.Code != codec.RespSuccess || err != nil {
		r.tb.Fatalf("min offset %s/%d: code %d %s offset %q", topic, queue, resp.Code, resp.Remark, v)
	}
	return n
}

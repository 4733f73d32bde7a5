package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"rmqd/codec"
	"rmqd/integration/harness"
)

// TestDiskFull runs rmqd with its store on a 64 MiB tmpfs and a filler file beside it, sends until the
// broker refuses, and expects: refusals with SERVICE_NOT_AVAILABLE (14) naming the store's disk (a
// CREATE_MAPPED_FILE_FAILED SYSTEM_ERROR (1) is allowed before the disk check notices), pulls going on,
// every acknowledged message read back, and sends accepted again once the filler is deleted. rmqd only
// (the harness cannot put Apache's store on a mount of its own); skipped when this process may not
// mount a tmpfs (not root).
func TestDiskFull(t *testing.T) {
	if !containsKind(targetsFromEnv(t), harness.KindRmqd) {
		t.Skip("RMQD_TARGET excludes rmqd")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("skipping: cannot mount a 64 MiB tmpfs for the store (needs root / CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	store := filepath.Join(mnt, "store")
	tg := harness.StartRmqd(t, harness.Options{BrokerConf: map[string]string{
		"storePathRootDir":        store,
		"storePathCommitLog":      filepath.Join(store, "commitlog"),
		"mappedFileSizeCommitLog": strconv.Itoa(4 << 20),
		"maxHashSlotNum":          "10000",
		"maxIndexNum":             "40000",
	}})
	const topic = "IT_diskfull"
	r := newRawClient(t, tg)
	r.createTopic(topic, 1)

	// Fill the file system to about 80 %: the rest goes to messages.
	filler := filepath.Join(mnt, "filler")
	fillTo(t, filler, mnt, 0.80)

	body := func(i int) []byte {
		return fmt.Appendf(nil, "%06d-%s", i, strings.Repeat("d", 8<<10))
	}
	var acked []int
	refused := map[int32]int{}
	var remark string
	deadline := time.Now().Add(90 * time.Second)
	for i := 0; refused[codec.RespServiceNotAvailable] < 3; i++ {
		if time.Now().After(deadline) || i > 20000 {
			t.Fatalf("still no SERVICE_NOT_AVAILABLE after %d sends (%d acknowledged, refusals %v)", i, len(acked), refused)
		}
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body(i), 30*time.Second)
		switch resp.Code {
		case codec.RespSuccess:
			if len(refused) > 0 {
				t.Fatalf("send %d accepted after a refusal (%v) with the disk still full", i, refused)
			}
			acked = append(acked, i)
		case codec.RespServiceNotAvailable:
			refused[resp.Code]++
			remark = resp.Remark
			time.Sleep(50 * time.Millisecond)
		case codec.RespSystemError:
			// The file system filled before the once-a-second disk check saw it.
			refused[resp.Code]++
			t.Logf("send %d: SYSTEM_ERROR %q before the disk check", i, resp.Remark)
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("send %d: code %d %q, want SUCCESS, SERVICE_NOT_AVAILABLE or SYSTEM_ERROR", i, resp.Code, resp.Remark)
		}
	}
	t.Logf("%d sends acknowledged, then refused %v: %q", len(acked), refused, remark)
	if len(acked) == 0 {
		t.Fatal("no send acknowledged before the disk filled")
	}
	if !strings.Contains(remark, "the broker's disk is full [CL: ") || !strings.Contains(remark, "Disk full: the store at "+filepath.Join(store, "commitlog")) {
		t.Fatalf("SERVICE_NOT_AVAILABLE remark does not name the disk: %q", remark)
	}

	// Reads go on: every acknowledged message comes back, in order.
	pullAll(t, r, topic, acked, body)

	// Space freed: sends are accepted again within a few seconds, and nothing was lost.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	next := acked[len(acked)-1] + 1_000_000
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body(next), 30*time.Second)
		if resp.Code == codec.RespSuccess {
			acked = append(acked, next)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sends still refused 30 s after space was freed: code %d %q", resp.Code, resp.Remark)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 1; i <= 20; i++ {
		resp := r.invoke(codec.ReqSendMessage, sendHeader(topic, 0, ""), body(next+i), 30*time.Second)
		if resp.Code != codec.RespSuccess {
			t.Fatalf("send after recovery: code %d %q", resp.Code, resp.Remark)
		}
		acked = append(acked, next+i)
	}
	pullAll(t, r, topic, acked, body)
	for _, p := range tg.Procs {
		if exited, err := p.Exited(); exited {
			t.Fatalf("rmqd exited: %v", err)
		}
	}
}

// fillTo writes a filler file until the file system at dir is ratio used.
func fillTo(t *testing.T, path, dir string, ratio float64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	total := int64(st.Blocks) * st.Bsize
	used := int64(st.Blocks-st.Bfree) * st.Bsize
	n := int64(float64(total)*ratio) - used
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for ; n > 0; n -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), n)]); err != nil {
			t.Fatalf("filler: %v", err)
		}
	}
}

// pullAll pulls queue 0 of topic from offset 0 with raw PULL_MESSAGE and expects exactly the bodies of
// want, in order.
func pullAll(t *testing.T, r *rawClient, topic string, want []int, body func(int) []byte) {
	t.Helper()
	var got [][]byte
	off := int64(0)
	for deadline := time.Now().Add(30 * time.Second); len(got) < len(want); {
		if time.Now().After(deadline) {
			t.Fatalf("pulled %d of %d acknowledged messages", len(got), len(want))
		}
		resp := r.invoke(codec.ReqPullMessage, map[string]string{"consumerGroup": "IT_diskfull_cg", "topic": topic,
			"queueId": "0", "queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32",
			"sysFlag": strconv.Itoa(pullFlagSubscription), "commitOffset": "0", "suspendTimeoutMillis": "0",
			"subscription": "*", "subVersion": "0", "expressionType": "TAG"}, nil, 30*time.Second)
		switch resp.Code {
		case codec.RespSuccess:
			for b := resp.Body; len(b) > 0; {
				var m codec.Message
				n, err := codec.DecodeRecord(b, &m)
				if err != nil {
					t.Fatalf("pulled record at offset %d: %v", off, err)
				}
				got = append(got, bytes.Clone(m.Body))
				b = b[n:]
			}
			v, _ := resp.Ext.Get("nextBeginOffset")
			off, _ = strconv.ParseInt(v, 10, 64)
		case codec.RespPullNotFound, codec.RespPullRetryImmediately:
			time.Sleep(50 * time.Millisecond) // not dispatched yet
		default:
			t.Fatalf("pull at %d: code %d %q", off, resp.Code, resp.Remark)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("pulled %d messages, acknowledged %d", len(got), len(want))
	}
	for i, w := range want {
		if !bytes.Equal(got[i], body(w)) {
			t.Fatalf("message %d: got %.16q, want %.16q", i, got[i], body(w))
		}
	}
}

package chaos

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rmqd/codec"
)

// fakeStore writes n records of topic T queue 0 into one commitlog file and the matching consume queue,
// the layout a broker leaves, and returns its root and the records' offsets.
func fakeStore(t *testing.T, n int) (string, []int64) {
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
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "commitlog"), log)
	write(filepath.Join(root, "consumequeue", "T", "0"), append(cq, make([]byte, 200)...))
	return root, offs
}

func TestCheckStore(t *testing.T) {
	root, offs := fakeStore(t, 5)
	st, err := CheckStore(root)
	if err != nil || !st.OK() || st.Records != 5 || st.Units != 5 {
		t.Fatalf("clean store: %v, %v", st, err)
	}

	corrupt := func(t *testing.T, path string, at int64, b []byte, want string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		old := make([]byte, len(b))
		_, _ = f.ReadAt(old, at)
		_, _ = f.WriteAt(b, at)
		defer func() { _, _ = f.WriteAt(old, at); _ = f.Close() }()
		st, err := CheckStore(root)
		if err != nil {
			t.Fatal(err)
		}
		if st.OK() || !strings.Contains(st.String(), want) {
			t.Errorf("corrupted at %d: %s; want a problem saying %q", at, st, want)
		}
	}
	log := filepath.Join(root, "commitlog", "00000000000000000000")
	cq := filepath.Join(root, "consumequeue", "T", "0", "00000000000000000000")
	// The body starts 88 bytes into a record with IPv4 hosts.
	t.Run("body", func(t *testing.T) { corrupt(t, log, offs[2]+90, []byte("X"), "body CRC") })
	t.Run("unit points nowhere", func(t *testing.T) { corrupt(t, cq, 20*3+7, []byte{1}, "no record starts there") })
	t.Run("unit missing", func(t *testing.T) { corrupt(t, cq, 20*4+8, []byte{0, 0, 0, 0}, "in no consume queue") })
	t.Run("offset field", func(t *testing.T) { corrupt(t, log, offs[1]+35, []byte{9}, "PHYSICALOFFSET") })
}

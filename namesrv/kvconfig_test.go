package namesrv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/remoting"
)

func putKV(t *testing.T, ns *NameServer, namespace, key, value string) *codec.RemotingCommand {
	t.Helper()
	return call(t, ns, newReq(codec.ReqPutKvConfig, nil, "namespace", namespace, "key", key, "value", value))
}

// registerBare is a REGISTER_BROKER with no body, as brokers older than
// V3_0_11 send it; the answer is what matters.
func registerBare(t *testing.T, ns *NameServer) *codec.RemotingCommand {
	t.Helper()
	reg := newReq(codec.ReqRegisterBroker, nil, "brokerName", "broker-a", "brokerAddr", "10.0.0.5:10911",
		"clusterName", "DefaultCluster", "haServerAddr", "10.0.0.5:10912", "brokerId", "0")
	reg.Version = 0
	return call(t, ns, reg)
}

// TestPutKVConfigAboveBoundsRefused: a value, key or namespace above its bound
// is refused with SYSTEM_ERROR and a remark naming the bound, nothing is
// stored and the file is not written. A value is measured escaped: 4 MiB of
// \x01 took 24 MiB in every registration answer.
func TestPutKVConfigAboveBoundsRefused(t *testing.T) {
	ns := newTestNameServer(t, nil, nil)
	cases := []struct{ name, namespace, key, value, remark string }{
		{"raw value", NamespaceOrderTopicConfig, "T", strings.Repeat("a", MaxKVValueSize+1), "value is 65537 bytes"},
		{"escaped value", NamespaceOrderTopicConfig, "T", strings.Repeat("\x01", MaxKVValueSize/6+1), "escaped as JSON"},
		{"huge value", NamespaceOrderTopicConfig, "T", strings.Repeat("\x01", 4<<20-1024), "above the 65536 a value may take"},
		{"key", NamespaceOrderTopicConfig, strings.Repeat("k", MaxKVNameSize+1), "v", "a key may take"},
		{"escaped key", NamespaceOrderTopicConfig, strings.Repeat("\u2028", MaxKVNameSize/6+1), "v", "a key may take"},
		{"namespace", strings.Repeat("n", MaxKVNameSize+1), "k", "v", "a namespace may take"},
	}
	for _, c := range cases {
		resp := putKV(t, ns, c.namespace, c.key, c.value)
		require.Equal(t, codec.RespSystemError, resp.Code, c.name)
		require.Contains(t, resp.Remark, "PUT_KV_CONFIG refused", c.name)
		require.Contains(t, resp.Remark, c.remark, c.name)
		_, ok := ns.KV().Get(c.namespace, c.key)
		require.False(t, ok, c.name)
	}
	_, err := os.Stat(ns.Config().KvConfigPath)
	require.ErrorIs(t, err, os.ErrNotExist, "a refused PUT writes nothing")
	require.Empty(t, registerBare(t, ns).Body, "no ORDER_TOPIC_CONFIG namespace was made")
}

// TestPutKVConfigAtBounds: a value, key and namespace exactly at their bounds
// are taken; the registration answer then carries the full namespace, and only
// a change that grows the namespace further is refused.
func TestPutKVConfigAtBounds(t *testing.T) {
	ns := newTestNameServer(t, nil, nil)
	ctl := strings.Repeat("\x01", MaxKVValueSize/6) + strings.Repeat("a", MaxKVValueSize%6) // escapes to the bound
	require.Equal(t, MaxKVValueSize, codec.JSONStringLen(ctl)-2)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, "n", "ctl", ctl).Code)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, "n", strings.Repeat("k", MaxKVNameSize), "v").Code)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, strings.Repeat("n", MaxKVNameSize), "k", "v").Code)
	v, ok := ns.KV().Get("n", "ctl")
	require.True(t, ok)
	require.Equal(t, ctl, v)

	// Fill ORDER_TOPIC_CONFIG to exactly MaxKVNamespaceSize: full values, then
	// one that takes what is left. Keys are kNN: "kNN": is 6 bytes, a value
	// its length plus 2, each entry after the first a comma.
	full := strings.Repeat("a", MaxKVValueSize)
	list := func() *codec.RemotingCommand {
		return call(t, ns, newReq(codec.ReqGetKvlistByNamespace, nil, "namespace", NamespaceOrderTopicConfig))
	}
	lastKey, lastLen := "", 0
	for i := 0; lastKey == ""; i++ {
		require.Less(t, i, 100)
		obj := 0
		if i > 0 {
			obj = len(list().Body) - kvTableBodyOverhead
		} else {
			obj = 2
		}
		left := MaxKVNamespaceSize - obj - 6 - 2
		if i > 0 {
			left-- // the comma
		}
		if left >= MaxKVValueSize {
			require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, fmt.Sprintf("k%02d", i), full).Code)
			continue
		}
		require.GreaterOrEqual(t, left, 0)
		lastKey, lastLen = fmt.Sprintf("k%02d", i), left
		require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, lastKey, strings.Repeat("b", left)).Code)
	}
	require.Len(t, list().Body, maxOrderConfBody, "the namespace is at its bound")
	resp := registerBare(t, ns)
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Len(t, resp.Body, maxOrderConfBody, "a namespace at its bound is still answered")

	more := putKV(t, ns, NamespaceOrderTopicConfig, "TopicTest", "broker-a:4")
	require.Equal(t, codec.RespSystemError, more.Code)
	require.Contains(t, more.Remark, "namespace ORDER_TOPIC_CONFIG would take")
	_, ok = ns.KV().Get(NamespaceOrderTopicConfig, "TopicTest")
	require.False(t, ok)
	require.Equal(t, codec.RespSystemError, putKV(t, ns, NamespaceOrderTopicConfig, "k00", full+"a").Code)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, "k00", "short").Code, "shrinking is fine")
	require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, "TopicTest", "broker-a:4").Code)

	// What was written reads back whole.
	ns2, err := New(ns.Config(), quietLogger())
	require.NoError(t, err)
	require.Equal(t, ns.KV().TableSize(), ns2.KV().TableSize())
	v, ok = ns2.KV().Get(NamespaceOrderTopicConfig, lastKey)
	require.True(t, ok)
	require.Len(t, v, lastLen)
}

// TestKVTableBound: the whole table stops at MaxKVTableSize exactly; past it
// only changes that do not grow it are taken.
func TestKVTableBound(t *testing.T) {
	m := NewKVConfigManager("")
	full := strings.Repeat("v", MaxKVValueSize)
	filled := false
	for i := 0; i < 1000 && !filled; i++ {
		// A new namespace "nNNN" with key "k": "nNNN":{"k":"…"} is 15 bytes
		// and the value, plus a comma after the first.
		add := 15
		if i > 0 {
			add++
		}
		left := MaxKVTableSize - m.TableSize() - add
		require.GreaterOrEqual(t, left, 0, "the fill missed the bound")
		val := full
		if left <= MaxKVValueSize {
			val, filled = full[:left], true
		}
		require.NoError(t, m.Put(fmt.Sprintf("n%03d", i), "k", val))
	}
	require.True(t, filled)
	require.Equal(t, MaxKVTableSize, m.TableSize())
	require.Len(t, m.snapshot(), MaxKVTableSize)

	err := m.Put("other", "k", "")
	require.ErrorIs(t, err, ErrKVLimit)
	require.Contains(t, err.Error(), "the kv config table would take")
	_, ok := m.Get("other", "k")
	require.False(t, ok)
	require.ErrorIs(t, m.Put("n000", "k2", ""), ErrKVLimit)
	require.NoError(t, m.Put("n000", "k", "short"))
	require.NoError(t, m.Put("n000", "k2", "")) // fits in what "short" freed
	require.NoError(t, m.Delete("n001", "k"))
	require.Len(t, m.snapshot(), m.TableSize())
}

// TestKVSizesTrackTheEncoding: after puts, overwrites and deletes of names and
// values with every kind of escape, the tracked sizes are those of the file
// and of the list answer, before and after a reload.
func TestKVSizesTrackTheEncoding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	m := NewKVConfigManager(path)
	ops := [][3]string{
		{"\xff", "k", "v1"}, {"\xfe", "k", "v2"},
		{"ns", "\x00\x01\u2028\u2029", "\x7f\"\\"},
		{"ns2", "a\xffb", "c\xc3"}, {"ns2", "a\xfeb", "d"},
		{"", "", ""}, {"ns", "x", "\u0085é中"}, {"ns", "x", "y"},
	}
	for _, op := range ops {
		require.NoError(t, m.Put(op[0], op[1], op[2]))
		require.Len(t, m.snapshot(), m.TableSize())
	}
	require.NoError(t, m.Delete("ns", "x"))
	require.NoError(t, m.Delete("ns2", "a\xffb"))
	require.NoError(t, m.Delete("ns2", "missing"))
	require.NoError(t, m.Delete("nope", "k"))
	require.Len(t, m.snapshot(), m.TableSize())
	for _, ns := range []string{"\xff", "ns", "ns2", ""} {
		body, size, ok := m.AppendNamespaceJSON(nil, ns, 1<<20)
		require.True(t, ok, "%q", ns)
		require.Len(t, body, size, "%q", ns)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, b, m.TableSize())

	m2 := NewKVConfigManager(path)
	require.NoError(t, m2.Load())
	require.Len(t, m2.snapshot(), m2.TableSize())
	v, ok := m2.Get("ns", "\x00\x01\u2028\u2029")
	require.True(t, ok)
	require.Equal(t, "\x7f\"\\", v)
}

// oversizeKVFile writes a kvConfig.json such as an unbounded name server (Java,
// or rmqd before the bounds) could leave: ORDER_TOPIC_CONFIG with two 2 MiB
// values of \x01, 24 MiB as JSON, and one real order topic.
func oversizeKVFile(t *testing.T, path string) {
	t.Helper()
	big := strings.Repeat("\x01", 2<<20)
	b := []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"0":`)
	b = codec.AppendJSONString(b, big)
	b = append(b, `,"1":`...)
	b = codec.AppendJSONString(b, big)
	b = append(b, `,"TopicTest":"broker-a:4"}}}`...)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// TestOversizeKVFileLoadsButRegistrationAnswerStaysBounded: a kvConfig.json
// above every bound loads whole (the operator's data is kept), yet a
// registration answer leaves the order config out instead of growing past the
// frame limit, GET_KVLIST refuses to list it, a PUT may not grow it, and once
// the operator deletes the junk the answer carries the order config again.
func TestOversizeKVFileLoadsButRegistrationAnswerStaysBounded(t *testing.T) {
	cfg := testConfig(t, nil)
	oversizeKVFile(t, cfg.KvConfigPath)
	ns, err := New(cfg, quietLogger())
	require.NoError(t, err)
	require.Greater(t, ns.KV().TableSize(), MaxKVTableSize)
	v, ok := ns.KV().Get(NamespaceOrderTopicConfig, "TopicTest")
	require.True(t, ok, "loaded data is kept")
	require.Equal(t, "broker-a:4", v)
	v, _ = ns.KV().Get(NamespaceOrderTopicConfig, "0")
	require.Len(t, v, 2<<20)

	resp := registerBare(t, ns)
	require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Empty(t, resp.Body, "an order config above the bound is left out")
	_, ok = ns.Routes().BrokerAddrs("broker-a")[0]
	require.True(t, ok, "the broker is registered")

	list := call(t, ns, newReq(codec.ReqGetKvlistByNamespace, nil, "namespace", NamespaceOrderTopicConfig))
	require.Equal(t, codec.RespSystemError, list.Code)
	require.Contains(t, list.Remark, "an answer may carry")
	require.Empty(t, list.Body)

	require.Equal(t, codec.RespSystemError, putKV(t, ns, NamespaceOrderTopicConfig, "Other", "broker-a:4").Code)
	require.Equal(t, codec.RespSystemError, putKV(t, ns, "fresh", "k", "v").Code, "the table is above its bound")
	require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, "TopicTest", "broker-a:8").Code,
		"a change that does not grow it is taken")

	for _, k := range []string{"0", "1"} {
		require.Equal(t, codec.RespSuccess, call(t, ns, newReq(codec.ReqDeleteKvConfig, nil,
			"namespace", NamespaceOrderTopicConfig, "key", k)).Code)
	}
	resp = registerBare(t, ns)
	require.Equal(t, codec.RespSuccess, resp.Code)
	require.Equal(t, `{"table":{"TopicTest":"broker-a:8"}}`, string(resp.Body))
	b, err := os.ReadFile(cfg.KvConfigPath)
	require.NoError(t, err)
	require.Equal(t, `{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:8"}}}`, string(b))
}

// TestOversizeOrderConfigOverLoopback: the audit's attack through the real
// server. A 4 MiB PUT (binary header) is refused, so a broker's registration
// answer stays small and its topics routable; with an oversize file loaded
// from disk the broker still registers over the wire.
func TestOversizeOrderConfigOverLoopback(t *testing.T) {
	for _, fromDisk := range []bool{false, true} {
		cfg := testConfig(t, nil)
		if fromDisk {
			oversizeKVFile(t, cfg.KvConfigPath)
		}
		ns, err := New(cfg, quietLogger())
		require.NoError(t, err)
		addr, stop := startLoopback(t, ns)

		atk := remoting.NewClient(remoting.ClientConfig{Logger: quietLogger()})
		for i := range 2 {
			req := codec.NewRequest(codec.ReqPutKvConfig)
			req.SerializeType = codec.SerializeRocketMQ
			req.Ext.Set("namespace", NamespaceOrderTopicConfig)
			req.Ext.Set("key", fmt.Sprint("atk", i))
			req.Ext.Set("value", strings.Repeat("\x01", 4<<20-1024))
			resp := invoke(t, atk, addr, req)
			require.Equal(t, codec.RespSystemError, resp.Code)
		}
		atk.Close()

		broker := remoting.NewClient(remoting.ClientConfig{Logger: quietLogger()})
		resp := registerAsJavaBroker(t, broker, addr)
		require.Equal(t, codec.RespSuccess, resp.Code, resp.Remark)
		require.LessOrEqual(t, len(resp.Body), maxOrderConfBody)
		_, ok := ns.Routes().TopicRouteData("TopicTest")
		require.True(t, ok, "fromDisk=%v", fromDisk)
		broker.Close()
		stop()
	}
}

// TestConcurrentKVPutsShareWrites: PUTs that arrive while a write of
// kvConfig.json runs share the next write instead of each rewriting the file;
// each returns only once a write holding its value is done, and the .bak that
// write left (the file before it) holds none of them.
func TestConcurrentKVPutsShareWrites(t *testing.T) {
	ns := newTestNameServer(t, nil, nil)
	m := ns.KV()
	path := ns.Config().KvConfigPath
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var writes atomic.Int32
	m.writeFile = func(p string, data []byte) error {
		if writes.Add(1) == 1 {
			started <- struct{}{}
			<-release
		}
		return compat.WriteConfigFile(p, data)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		require.Equal(t, codec.RespSuccess, putKV(t, ns, "first", "k", "v").Code)
	}()
	<-started
	const waiting = 16
	for i := range waiting {
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, fmt.Sprintf("Shared%02d", i), "broker-a:4").Code)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(b), fmt.Sprintf(`"Shared%02d"`, i), "answered before its value was written")
		}()
	}
	for m.file.Calls() < waiting+1 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 2, writes.Load(), "the waiting PUTs share one write")
	bak, err := os.ReadFile(path + ".bak")
	require.NoError(t, err)
	require.NotContains(t, string(bak), "Shared")

	// Deletes go the same way, and a failed write is reported to its callers.
	m.writeFile = func(string, []byte) error { return errors.New("disk full") }
	require.Error(t, m.Delete(NamespaceOrderTopicConfig, "Shared00"))
	m.writeFile = compat.WriteConfigFile
	require.NoError(t, m.Delete(NamespaceOrderTopicConfig, "Shared01"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"Shared00"`)
	require.NotContains(t, string(b), `"Shared01"`)
}

// TestRegisterOrderConfigWarningIsRateLimited: the "too large" warning is
// logged once, not on every registration.
func TestRegisterOrderConfigWarningIsRateLimited(t *testing.T) {
	ns := newTestNameServer(t, nil, nil)
	ns.warnOrderConfTooBig(1)
	first := ns.orderConfWarned.Load()
	require.NotZero(t, first)
	ns.warnOrderConfTooBig(1)
	require.Equal(t, first, ns.orderConfWarned.Load())
	ns.orderConfWarned.Store(time.Now().Add(-2 * time.Minute).UnixNano())
	ns.warnOrderConfTooBig(1)
	require.Greater(t, ns.orderConfWarned.Load(), first)
}

package processor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/store"
)

func updateConfigReq(body string) *codec.RemotingCommand {
	up := codec.NewRequest(codec.ReqUpdateBrokerConfig)
	up.Body = []byte(body)
	return up
}

// Live keys change the running broker at once; every update lands in the -c file.
func TestUpdateBrokerConfigLiveAndPersisted(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	orig := "# my broker\nbrokerName=broker-a\nautoCreateTopicEnable = true\n\nlistenPort=10911\n"
	require.NoError(t, os.WriteFile(conf, []byte(orig), 0o644))
	b := newTestBroker(t, func(c *BrokerConfig) {
		c.BrokerConfigPath = conf
	})
	ctx := context.Background()
	c := newTestConn(5)

	// Before: a send creates its topic, a pull is served.
	resp, _ := b.handleSendMessage(ctx, c, sendReq("LiveA", 0, []byte("x"), "TAGS\x01a\x02"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq(
		"autoCreateTopicEnable=false\nbrokerPermission=2\nflushDiskType=SYNC_FLUSH\nunknownKey=1\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	// Live at once: no auto-created topic, no pulls from a write-only broker.
	resp, _ = b.handleSendMessage(ctx, c, sendReq("LiveB", 0, []byte("x"), "TAGS\x01a\x02"))
	require.EqualValues(t, codec.RespTopicNotExist, resp.Code, resp.Remark)
	_, ok := b.topics.Select("LiveB")
	require.False(t, ok)
	_, err := b.handleHeartBeat(ctx, c, heartbeatReq(t, "cid-live", "LiveG", "LiveA"))
	require.NoError(t, err)
	resp, err = b.handlePullMessage(ctx, c, pullReq("LiveG", "LiveA", 0, 0, 0, 0))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespNoPermission, resp.Code, resp.Remark)
	require.False(t, b.conf().AutoCreateTopicEnable)

	// GET_BROKER_CONFIG shows all of them; an unknown key is dropped as Java's mergeIfExist does.
	resp, _ = b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
	body := string(resp.Body)
	for _, want := range []string{"autoCreateTopicEnable=false\n", "brokerPermission=2\n", "flushDiskType=SYNC_FLUSH\n", "brokerConfigPath=" + conf + "\n"} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "unknownKey")

	// The file keeps its comment, blank line and order; changed keys in place, new ones appended.
	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, "# my broker\nbrokerName=broker-a\nautoCreateTopicEnable=false\n\nlistenPort=10911\n"+
		"brokerPermission=2\nflushDiskType=SYNC_FLUSH\n", string(got))
	bak, err := os.ReadFile(conf + ".bak")
	require.NoError(t, err)
	require.Equal(t, orig, string(bak))

	// Restart-equivalent: the file read back gives the updated configuration.
	cfg := DefaultBrokerConfig()
	props, err := loadPropsFile(conf)
	require.NoError(t, err)
	_, err = cfg.ApplyProperties(props)
	require.NoError(t, err)
	require.False(t, cfg.AutoCreateTopicEnable)
	require.EqualValues(t, 2, cfg.BrokerPermission)

	// A value the next start would refuse is refused now and the file stays.
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("flushDiskType=SOMETIMES\n"))
	require.EqualValues(t, codec.RespSystemError, resp.Code)
	got2, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, string(got), string(got2))

	// Back to read-write: pulls are served again without a restart.
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("brokerPermission=6\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("LiveA", 0) == 1 }, 5*time.Second, 10*time.Millisecond)
	c.mu.Lock()
	wrote := len(c.resps)
	c.mu.Unlock()
	resp, err = b.handlePullMessage(ctx, c, pullReq("LiveG", "LiveA", 0, 0, 0, 0))
	require.NoError(t, err)
	if resp == nil { // found messages go straight to the connection, maybe from a reader goroutine
		require.Eventually(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.resps) > wrote
		}, 5*time.Second, time.Millisecond)
		c.mu.Lock()
		resp = c.resps[wrote]
		c.mu.Unlock()
	}
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)

	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("brokerConfigPath=/tmp/elsewhere\n"))
	require.EqualValues(t, codec.RespNoPermission, resp.Code)
	require.Equal(t, "Can not update config in black list.", resp.Remark)

	// Settings the next start would refuse are refused now, and not written.
	for _, upd := range []string{"metricsExporterType=OTLP_GRPC\n", "metricsPromExporterPort=99999\n",
		"aclEnable=true\nauthenticationEnabled=true\n", "enableControllerMode=true\n"} {
		resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq(upd))
		require.NotEqualValues(t, codec.RespSuccess, resp.Code, upd)
		after, err := loadPropsFile(conf)
		require.NoError(t, err)
		k, _, _ := strings.Cut(upd, "=")
		require.NotContains(t, after, k, upd)
	}
}

func loadPropsFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return compat.ParseProperties(f)
}

func TestMergePropertiesFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.conf")
	orig := "a=1\r\n! bang comment \\\nb = long \\\n   value\nc:3\na=dup\n  # indented comment\nlast=x"
	require.NoError(t, os.WriteFile(p, []byte(orig), 0o644))
	require.NoError(t, mergePropertiesFile(p, map[string]string{"a": "9", "b": "short", "new key": " v"}))
	got, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "a=9\n! bang comment \\\nb=short\nc:3\n  # indented comment\nlast=x\nnew\\ key=\\ v\n", string(got))
	props, err := loadPropsFile(p)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "9", "b": "short", "c": "3", "last": "x", "new key": " v"}, props)

	// A missing file is created.
	q := filepath.Join(dir, "sub", "n.conf")
	require.NoError(t, mergePropertiesFile(q, map[string]string{"k": "v"}))
	got, err = os.ReadFile(q)
	require.NoError(t, err)
	require.Equal(t, "k=v\n", string(got))
}

// Whatever the file holds, the merged text reads back as the old settings with the update laid over them,
// and every other byte of it is kept.
func FuzzMergePropertiesText(f *testing.F) {
	for _, seed := range []string{"", "a=1\n", "a=1\r\nb=2", "a=1\\", "# c \\\na=1\\\n  2\n\nb : 3\rc 4",
		"a=1\nc=3\ra=5\n", "k\\ ey=v\n!x\n", "a=\\u0041\\\n\n"} {
		f.Add([]byte(seed), "a", "9")
	}
	f.Fuzz(func(t *testing.T, old []byte, key, value string) {
		want, err := compat.ParseProperties(bytes.NewReader(old))
		if err != nil || key == "" {
			return
		}
		want[key] = value
		merged := mergePropertiesText(old, map[string]string{key: value})
		got, err := compat.ParseProperties(bytes.NewReader(merged))
		require.NoError(t, err, "merged %q", merged)
		require.Equal(t, want, got, "old %q merged %q", old, merged)
	})
}

// Updates swap the whole configuration: sends that read it while an update runs
// see either the old or the new one (go test -race flags any shared write).
func TestUpdateBrokerConfigWhileSending(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx := context.Background()
	c := newTestConn(6)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			v := []string{"true", "false"}[i%2]
			resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("traceOn="+v+"\nautoCreateTopicEnable=true\n"))
			assert.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-done:
			require.Positive(t, i)
			return
		default:
		}
		resp, _ := b.handleSendMessage(ctx, c, sendReq("LiveRace", 0, []byte("x"), "TAGS\x01a\x02"))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
}

// Path and identity keys are refused before anything is applied or persisted:
// Java's list with Java's remark, rmqd's stricter ones with the key named.
func TestUpdateBrokerConfigBlackList(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "broker.conf")
	orig := "brokerName=broker-a\n"
	require.NoError(t, os.WriteFile(conf, []byte(orig), 0o644))
	b := newTestBroker(t, func(c *BrokerConfig) { c.BrokerConfigPath = conf })
	ctx := context.Background()
	c := newTestConn(5)
	root := b.conf().Store.StorePathRootDir
	for _, key := range []string{"configBlackList", "brokerConfigPath", "rocketmqHome"} {
		resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq(key+"=/tmp/x\n"))
		require.EqualValues(t, codec.RespNoPermission, resp.Code, key)
		require.Equal(t, "Can not update config in black list.", resp.Remark, key)
	}
	for _, key := range []string{"storePathRootDir", "storePathCommitLog", "storePathConsumeQueue", "storePathIndex",
		"storePathEpochFile", "storePathBrokerIdentity", "kvConfigPath", "configStorePath", "brokerName",
		"brokerClusterName", "brokerId", "brokerRole", "listenPort", "haListenPort", "brokerIP1", "brokerIP2",
		"bindAddress", "namesrvListenPort"} {
		// A refused key refuses the whole update, a harmless key beside it included.
		resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("traceOn=false\n"+key+"=../../elsewhere\n"))
		require.EqualValues(t, codec.RespNoPermission, resp.Code, key)
		require.Equal(t, "Can not update config in black list. "+key+
			" is a path or identity setting: change it in the broker's config file and restart.", resp.Remark)
	}
	got, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Equal(t, orig, string(got), "a refused update wrote the config file")
	require.Equal(t, root, b.conf().Store.StorePathRootDir)
	require.True(t, b.conf().TraceOn)

	// broker.conf's configBlackList adds keys, as in Java.
	b2 := newTestBroker(t, func(c *BrokerConfig) { c.ConfigBlackList = "traceOn;msgTraceTopicName" })
	resp, _ := b2.handleUpdateBrokerConfig(ctx, c, updateConfigReq("traceOn=false\n"))
	require.EqualValues(t, codec.RespNoPermission, resp.Code)
	require.Equal(t, "Can not update config in black list.", resp.Remark)
	require.True(t, b2.conf().TraceOn)

	// namesrvAddr stays an admin setting, as in Java (this broker started
	// without name servers, so it is refused for that, not black-listed).
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("namesrvAddr=127.0.0.1:9876\n"))
	require.EqualValues(t, codec.RespSystemError, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "started without name servers")
}

// Store settings Java's store reads at each use change the running store: a
// lowered fileReservedTime removes the aged commitlog files at the cleaner's
// next pass, a lowered transfer count bounds the next pull, without a restart.
func TestUpdateBrokerConfigLiveStoreKeys(t *testing.T) {
	h := time.Now().Hour()
	b := newTestBrokerWith(t, nil, func(c *store.Config) {
		c.MappedFileSizeCommitLog = 8192
		c.CleanResourceInterval = 20
		c.DeleteCommitLogFilesInterval = 0
		c.DeleteConsumeQueueFilesInterval = 0
		c.DeleteWhen = strconv.Itoa(h) + ";" + strconv.Itoa((h+1)%24)
	}, nil)
	ctx := context.Background()
	c := newTestConn(5)
	body := make([]byte, 1000)
	for range 30 {
		resp, _ := b.handleSendMessage(ctx, c, sendReq("Aged", 0, body, ""))
		require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.st.MaxOffsetInQueue("Aged", 0) == 30 }, 5*time.Second, time.Millisecond)
	dir := filepath.Join(b.conf().Store.StorePathRootDir, "commitlog")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Greater(t, len(ents), 2)
	old := time.Now().Add(-2 * time.Hour)
	for _, e := range ents {
		require.NoError(t, os.Chtimes(filepath.Join(dir, e.Name()), old, old))
	}
	require.Zero(t, b.st.MinPhyOffset(), "fileReservedTime 72 keeps two-hour-old files")

	get := func() int {
		r := b.st.GetMessage("g", "Aged", 0, b.st.MinOffsetInQueue("Aged", 0), 32, 1<<20, nil)
		defer r.Release()
		return len(r.Records)
	}
	require.Greater(t, get(), 3)

	resp, _ := b.handleUpdateBrokerConfig(ctx, c, updateConfigReq(
		"fileReservedTime=1\nmaxTransferCountOnMessageInMemory=3\nmaxTransferCountOnMessageInDisk=3\nflushIntervalCommitLog=100\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.st.MinPhyOffset() > 0 }, 30*time.Second, 10*time.Millisecond,
		"aged files not removed after fileReservedTime went to 1")
	require.Equal(t, 3, get())

	// Shown as in force, not as pending overrides; the transaction checker
	// discards half messages older than the new retention.
	require.Equal(t, 1, b.conf().Store.FileReservedTime)
	b.admin.cfgMu.Lock()
	require.Empty(t, b.admin.overrides)
	b.admin.cfgMu.Unlock()
	_, _, reserved := b.trans.Limits()
	require.Equal(t, time.Hour, reserved)
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("transactionCheckMax=3\ntransactionTimeOut=1000\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	timeout, checkMax, _ := b.trans.Limits()
	require.Equal(t, time.Second, timeout)
	require.Equal(t, 3, checkMax)
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("transactionCheckInterval=2000\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, 2*time.Second, b.transCheckInterval())
	resp, _ = b.handleBrokerConfig(ctx, c, codec.NewRequest(codec.ReqGetBrokerConfig))
	require.Contains(t, string(resp.Body), "fileReservedTime=1\n")
	require.Contains(t, string(resp.Body), "flushIntervalCommitLog=100\n")

	// A key the store captures at start is only recorded.
	was := b.conf().Store.MappedFileSizeCommitLog
	resp, _ = b.handleUpdateBrokerConfig(ctx, c, updateConfigReq("mappedFileSizeCommitLog=4096\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	require.Equal(t, was, b.conf().Store.MappedFileSizeCommitLog)
	b.admin.cfgMu.Lock()
	require.Equal(t, map[string]string{"mappedFileSizeCommitLog": "4096"}, b.admin.overrides)
	b.admin.cfgMu.Unlock()
}

// The classic HA keys reach the store's live snapshot, which store/ha reads
// at each frame (cmd/rmqd wires ha.Config.Live to it): applied, not pending.
func TestUpdateBrokerConfigLiveHAKeys(t *testing.T) {
	b := newTestBroker(t, nil)
	resp, _ := b.handleUpdateBrokerConfig(context.Background(), newTestConn(5), updateConfigReq(
		"haSendHeartbeatInterval=1000\nhaHousekeepingInterval=9000\nhaTransferBatchSize=65536\n"+
			"haFlowControlEnable=true\nmaxHaTransferByteInSecond=4096\n"))
	require.EqualValues(t, codec.RespSuccess, resp.Code, resp.Remark)
	live := b.st.LiveConfig()
	require.Equal(t, 1000, live.HaSendHeartbeatInterval)
	require.Equal(t, 9000, live.HaHousekeepingInterval)
	require.Equal(t, 65536, live.HaTransferBatchSize)
	require.True(t, live.HaFlowControlEnable)
	require.EqualValues(t, 4096, live.MaxHaTransferByteInSecond)
	b.admin.cfgMu.Lock()
	require.Empty(t, b.admin.overrides)
	b.admin.cfgMu.Unlock()
}

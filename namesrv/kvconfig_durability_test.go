package namesrv

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// TestKVConfigSurvivesKill: PUT_KV_CONFIG and DELETE_KV_CONFIG are on disk
// when they are answered, so a name server killed without a shutdown starts
// again with them; a torn, empty or missing kvConfig.json gives way to its
// .bak (the file before the last change) instead of stopping the name server
// or starting it with no keys.
func TestKVConfigSurvivesKill(t *testing.T) {
	cfg := testConfig(t, nil)
	ns, err := New(cfg, quietLogger())
	require.NoError(t, err)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, "A", "broker-a:4").Code)
	require.Equal(t, codec.RespSuccess, putKV(t, ns, NamespaceOrderTopicConfig, "B", "broker-a:8").Code)
	del := call(t, ns, newReq(codec.ReqDeleteKvConfig, nil, "namespace", NamespaceOrderTopicConfig, "key", "A"))
	require.Equal(t, codec.RespSuccess, del.Code)

	reopen := func() *KVConfigManager {
		t.Helper()
		ns2, err := New(cfg, quietLogger()) // no Shutdown of the first: a kill -9
		require.NoError(t, err)
		return ns2.KV()
	}
	kv := reopen()
	v, ok := kv.Get(NamespaceOrderTopicConfig, "B")
	require.True(t, ok)
	require.Equal(t, "broker-a:8", v)
	_, ok = kv.Get(NamespaceOrderTopicConfig, "A")
	require.False(t, ok, "the delete was persisted")

	main, err := os.ReadFile(cfg.KvConfigPath)
	require.NoError(t, err)
	for name, damage := range map[string]func(){
		"torn":    func() { require.NoError(t, os.WriteFile(cfg.KvConfigPath, main[:len(main)/2], 0o644)) },
		"empty":   func() { require.NoError(t, os.WriteFile(cfg.KvConfigPath, nil, 0o644)) },
		"missing": func() { require.NoError(t, os.Remove(cfg.KvConfigPath)) },
	} {
		damage()
		kv = reopen()
		// .bak is the table before the delete: A and B.
		v, ok = kv.Get(NamespaceOrderTopicConfig, "B")
		require.True(t, ok, name)
		require.Equal(t, "broker-a:8", v, name)
		_, ok = kv.Get(NamespaceOrderTopicConfig, "A")
		require.True(t, ok, name)
		require.NoError(t, os.WriteFile(cfg.KvConfigPath, main, 0o644))
	}

	// Both bad: the name server does not start on a guess.
	require.NoError(t, os.WriteFile(cfg.KvConfigPath, []byte(`{"configTable":{`), 0o644))
	require.NoError(t, os.WriteFile(cfg.KvConfigPath+".bak", []byte(`{"configTable"`), 0o644))
	_, err = New(cfg, quietLogger())
	require.Error(t, err)
}

package processor

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"rmqd/codec"
)

// CHECK_ROCKSDB_CQ_WRITE_PROGRESS answers as a Java broker without RocksDB:
// SUCCESS with CHECK_IN_PROGRESS, the outcome in the log.
func TestCheckRocksdbCqWriteProgress(t *testing.T) {
	b := newTestBroker(t, nil)
	r, err := b.handleCheckRocksdbCqWriteProgress(context.Background(), newTestConn(7),
		adminReq(codec.ReqCheckRocksdbCqWriteProgress, "topic", "", "checkStoreTime", "0"))
	require.NoError(t, err)
	require.EqualValues(t, codec.RespSuccess, r.Code)
	require.Equal(t, `{"checkStatus":2}`, string(r.Body))
	r, _ = b.handleCheckRocksdbCqWriteProgress(context.Background(), newTestConn(7), adminReq(codec.ReqCheckRocksdbCqWriteProgress))
	require.EqualValues(t, codec.RespSystemError, r.Code, "topic is @CFNotNull")
}

// EXPORT_ROCKSDB_CONFIG_TO_JSON writes the named JSON configurations now
// (consumer offsets before their periodic flush) and answers "export done.";
// an unknown type fails it.
func TestExportRocksDBConfigToJSON(t *testing.T) {
	b := newTestBroker(t, nil)
	ctx, c := context.Background(), newTestConn(7)
	offsets := filepath.Join(b.conf().ConfigDir(), "consumerOffset.json")
	b.offsets.Commit("EG", "ET", 0, 42)
	export := func(types string) *codec.RemotingCommand {
		r, err := b.handleExportRocksDBConfigToJSON(ctx, c, adminReq(codec.ReqExportRocksdbConfigToJson, "configType", types))
		require.NoError(t, err)
		return r
	}
	r := export("topics; bogus;")
	require.EqualValues(t, codec.RespSystemError, r.Code)
	require.Equal(t, "Unknown config type:  bogus", r.Remark)
	r = export("topics;SubscriptionGroups;consumerOffsets;")
	require.EqualValues(t, codec.RespSuccess, r.Code, r.Remark)
	require.Equal(t, "export done.", r.Remark)
	got, err := os.ReadFile(offsets)
	require.NoError(t, err)
	require.Contains(t, string(got), `"ET@EG":{0:42}`)
	r, _ = b.handleExportRocksDBConfigToJSON(ctx, c, adminReq(codec.ReqExportRocksdbConfigToJson))
	require.EqualValues(t, codec.RespSystemError, r.Code, "configType is @CFNotNull")
}

package processor

import (
	"context"
	"strings"

	"rmqd/codec"
	"rmqd/remoting"
)

// The RocksDB admin codes (mqadmin checkRocksdbCqWriteProgress and
// rocksDBConfigToJson). rmqd keeps Java's file consume queues and JSON config
// files and no RocksDB store, so both answer as a Java broker without one.

// handleCheckRocksdbCqWriteProgress is CHECK_ROCKSDB_CQ_WRITE_PROGRESS. Java
// answers CHECK_IN_PROGRESS at once and logs the check's outcome, which
// without rocksdbCQDoubleWriteEnable is CHECK_NOT_OK with the remark below.
func (b *Broker) handleCheckRocksdbCqWriteProgress(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.CheckRocksdbCqWriteProgressRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	b.log.Info("checkRocksdbCqWriteProgress", "topic", h.Topic, "checkStatus", 1,
		"checkResult", "rocksdbCQWriteEnable is false, checkRocksdbCqWriteProgressCommand is invalid", "remote", c.RemoteAddr())
	resp := codec.NewResponse(req, codec.RespSuccess, "")
	resp.Body = []byte(`{"checkStatus":2}`) // CheckRocksdbCqWriteResult: CHECK_IN_PROGRESS, no result yet
	return resp, nil
}

// handleExportRocksDBConfigToJSON is EXPORT_ROCKSDB_CONFIG_TO_JSON: Java writes
// the named configurations kept in RocksDB to their JSON files. rmqd keeps them
// in those files, so it writes each named one now, which brings consumer
// offsets (otherwise flushed every few seconds) up to date. An unknown type
// fails the request as Java's ConfigType.getConfigTypeByName does.
func (b *Broker) handleExportRocksDBConfigToJSON(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ExportRocksDBConfigToJSONRequestHeader
	if err := codec.DecodeHeader(req.Ext, &h); err != nil {
		return headerError(req, err), nil
	}
	persist := map[string]func() error{
		"topics":             b.topics.Persist,
		"subscriptiongroups": b.groups.Persist,
		"consumeroffsets":    b.offsets.Persist,
	}
	var names []string
	for _, t := range strings.Split(h.ConfigType, ";") {
		if t == "" {
			continue
		}
		name := strings.ToLower(strings.TrimSpace(t))
		if persist[name] == nil {
			return codec.NewResponse(req, codec.RespSystemError, "Unknown config type: "+t), nil
		}
		names = append(names, name)
	}
	for _, name := range names {
		if err := persist[name](); err != nil {
			b.log.Error("export config to json", "config", name, "err", err)
			return codec.NewResponse(req, codec.RespSystemError, "export "+name+": "+err.Error()), nil
		}
	}
	b.log.Info("export config to json", "configs", names, "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, "export done."), nil
}

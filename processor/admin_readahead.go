package processor

import (
	"context"
	"strconv"

	"rmqd/codec"
	"rmqd/remoting"
)

// readAheadMode is the header key of SET_COMMITLOG_READ_MODE's mode
// (FIleReadaheadMode.READ_AHEAD_MODE): 0 MADV_NORMAL, 1 MADV_RANDOM (LibC).
const readAheadMode = "READ_AHEAD_MODE"

// readAheadStore is a store whose commitlog read mode can change while it
// runs (*store.DefaultStore, store/readahead.go).
type readAheadStore interface {
	SetCommitLogReadAhead(enable bool) error
}

// handleSetCommitLogReadMode is SET_COMMITLOG_READ_MODE (mqadmin
// setCommitLogReadAheadMode): mode 0 turns dataReadAheadEnable on, 1 off, and
// every commitlog file gets the matching madvise, as AdminBrokerProcessor
// .setCommitLogReadaheadMode. The answers are Java's, remarks verbatim. Like
// Java it persists nothing: the config file's value holds at the next start.
// A file the kernel refuses is logged and the answer is still SUCCESS (Java's
// setFileReadMode logs and carries on).
func (b *Broker) handleSetCommitLogReadMode(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	b.log.Info("set commitlog read-ahead mode", "remote", c.RemoteAddr())
	// Java's null extFields; a JSON header with an empty "extFields" map
	// (Java: non-null, then the parse below fails) is answered so too.
	if len(req.Ext) == 0 {
		return codec.NewResponse(req, codec.RespSystemError, "set commitlog readahead mode param error"), nil
	}
	// Integer.parseInt of the value, a missing one included; its
	// NumberFormatException lands in Java's catch-all.
	mode, ok, err := req.Ext.GetInt32(readAheadMode)
	if !ok || err != nil {
		v, _ := req.Ext.Get(readAheadMode)
		b.log.Warn("set commitlog read-ahead mode failed: mode is not an int", "mode", v, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespSystemError, "set commitlog readahead mode failed"), nil
	}
	if mode != 0 && mode != 1 {
		return codec.NewResponse(req, codec.RespInvalidParameter, "set commitlog readahead mode param value error"), nil
	}
	if rs, ok := b.store.(readAheadStore); ok {
		b.setDataReadAhead(rs, mode == 0)
	}
	return codec.NewResponse(req, codec.RespSuccess, "set commitlog readahead mode success, mode: "+strconv.Itoa(int(mode))), nil
}

// setDataReadAhead puts enable in the broker's configuration (GET_BROKER_CONFIG
// shows it, as Java's shows the field the handler set) and has the store apply
// it. Under admin.cfgMu, so an UPDATE_BROKER_CONFIG of the key is not
// interleaved with it.
func (b *Broker) setDataReadAhead(rs readAheadStore, enable bool) {
	b.admin.cfgMu.Lock()
	defer b.admin.cfgMu.Unlock()
	next := *b.conf()
	next.Store.DataReadAheadEnable = enable
	b.cfg.Store(&next)
	if err := rs.SetCommitLogReadAhead(enable); err != nil {
		b.log.Error("set commitlog read-ahead mode", "enable", enable, "err", err)
	}
}

package processor

import (
	"context"
	"errors"

	"rmqd/codec"
	"rmqd/remoting"
)

// The engines SWITCH_TIMER_ENGINE names in its E_T field (Java 5.4's MessageConst).
const (
	timerEngineField     = "E_T"
	timerEngineRocksDB   = "R" // ROCKSDB_TIMELINE
	timerEngineFileWheel = "F" // FILE_TIME_WHEEL
)

// handleSwitchTimerEngine is SWITCH_TIMER_ENGINE (Java 5.4's mqadmin switchTimerEngine). rmqd's timer is
// the file time wheel and it has no RocksDB timeline, so it answers as a Java broker started without
// timerRocksDBEnable: R is refused, F sets the wheel taking timers again (timerStopEnqueue=false, written
// to the config file as UPDATE_BROKER_CONFIG writes it).
func (b *Broker) handleSwitchTimerEngine(ctx context.Context, c remoting.Conn, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	if !b.conf().TimerWheelEnable {
		return codec.NewResponse(req, codec.RespInvalidParameter, "broker timerWheelEnable is false"), nil
	}
	if len(req.Ext) == 0 {
		return codec.NewResponse(req, codec.RespInvalidParameter, "param error, extFields is null"), nil
	}
	switch engine, _ := req.Ext.Get(timerEngineField); engine {
	case timerEngineRocksDB:
		return codec.NewResponse(req, codec.RespInvalidParameter, "timerRocksDBEnable must be configured true when broker start"), nil
	case timerEngineFileWheel:
	default:
		return codec.NewResponse(req, codec.RespInvalidParameter, "param error"), nil
	}
	// Java updates its Configuration directly; rmqd goes through UPDATE_BROKER_CONFIG's path, so an
	// operator's configBlackList holding timerStopEnqueue holds here too.
	applied, _, err := b.updateConfig(map[string]string{"timerStopEnqueue": "false"})
	switch {
	case errors.Is(err, errConfigBlackList):
		return codec.NewResponse(req, codec.RespNoPermission, blackListRemark(err)), nil
	case err != nil && applied == nil:
		b.log.Warn("switch timer engine failed", "err", err, "remote", c.RemoteAddr())
		return codec.NewResponse(req, codec.RespSystemError, "switch timer engine error"), nil
	case err != nil:
		b.log.Error("switch timer engine: config updated but not persisted", "err", err)
	}
	b.log.Info("switch timer engine success", "engine", "FILE_TIME_WHEEL", "remote", c.RemoteAddr())
	return codec.NewResponse(req, codec.RespSuccess, "switch timer engine success"), nil
}

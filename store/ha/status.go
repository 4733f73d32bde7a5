package ha

import "time"

// RuntimeInfo is Java's HARuntimeInfo, the body of GET_BROKER_HA_STATUS
// (mqadmin haStatus). Field names are fastjson's, in its alphabetical order.
type RuntimeInfo struct {
	HaClientRuntimeInfo ClientRuntimeInfo       `json:"haClientRuntimeInfo"`
	HaConnectionInfo    []ConnectionRuntimeInfo `json:"haConnectionInfo"`
	InSyncSlaveNums     int                     `json:"inSyncSlaveNums"`
	Master              bool                    `json:"master"`
	MasterCommitLogMax  int64                   `json:"masterCommitLogMaxOffset"`
}

// ConnectionRuntimeInfo is HARuntimeInfo.HAConnectionRuntimeInfo: one slave.
type ConnectionRuntimeInfo struct {
	Addr                    string `json:"addr"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	TransferFromWhere       int64  `json:"transferFromWhere"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// ClientRuntimeInfo is HARuntimeInfo.HAClientRuntimeInfo: a slave's client.
type ClientRuntimeInfo struct {
	Activated               bool   `json:"activated"`
	LastReadTimestamp       int64  `json:"lastReadTimestamp"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp"`
	MasterAddr              string `json:"masterAddr"`
	MasterFlushOffset       int64  `json:"masterFlushOffset"`
	MaxOffset               int64  `json:"maxOffset"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond"`
}

// RuntimeInfo reports the connected slaves; maxGap is haMaxGapNotInSync.
func (m *Master) RuntimeInfo(maxGap int64) RuntimeInfo {
	end := m.st.MaxPhyOffset()
	info := RuntimeInfo{Master: true, MasterCommitLogMax: end, HaConnectionInfo: []ConnectionRuntimeInfo{}}
	for _, c := range m.Status() {
		ack := max(c.AckOffset, 0)
		in := end-ack < maxGap
		if in {
			info.InSyncSlaveNums++
		}
		info.HaConnectionInfo = append(info.HaConnectionInfo, ConnectionRuntimeInfo{Addr: c.Addr, SlaveAckOffset: ack,
			Diff: end - ack, InSync: in, TransferFromWhere: c.TransferredOffset, TransferredByteInSecond: c.BytesPerSecond})
	}
	return info
}

// RuntimeInfo reports the client's side.
func (s *Slave) RuntimeInfo() RuntimeInfo {
	return RuntimeInfo{HaConnectionInfo: []ConnectionRuntimeInfo{}, HaClientRuntimeInfo: ClientRuntimeInfo{
		Activated: s.Connected(), MasterAddr: s.MasterAddr(), MaxOffset: s.st.MaxPhyOffset(),
		LastReadTimestamp: s.lastRead.Load(), LastWriteTimestamp: s.lastWrite.Load(),
	}}
}

func nowMs() int64 { return time.Now().UnixMilli() }

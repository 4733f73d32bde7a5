package delivery

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/meta"
	"rmqd/store"
)

// DelayLevel reads the DELAY property (0 when absent, malformed or below 0):
// a message asks for a delay when it is above 0 (getDelayTimeLevel() > 0).
func DelayLevel(pv *codec.PropView) int {
	v, ok := pv.Get(codec.PropDelay)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ParkDelay is HookUtils.transformDelayLevelMessage: a message with DELAY > 0
// (and not a prepared or rolled-back transaction) is stored in
// SCHEDULE_TOPIC_XXXX queue level-1 with its real destination in REAL_TOPIC and
// REAL_QID, without timer properties; a level past the last of levels is the last. The store's dispatch
// turns the level into the deliver time. pv, when not nil, indexes
// msg.Properties and is kept in step with them.
func ParkDelay(msg *codec.Message, pv *codec.PropView, levels int) {
	if t := msg.SysFlag & sysFlagTransactionMask; t != 0 && t != 0x8 {
		return
	}
	var own codec.PropView
	pv = viewOf(msg, pv, &own)
	level := DelayLevel(pv)
	if level <= 0 {
		return
	}
	e := codec.EditProperties(msg.Properties)
	if level > levels {
		level = levels
		e.SetInt(codec.PropDelay, int64(level))
	}
	// A delay level wins over timer properties, which Java's hook drops
	// (checkIfTimerMessage) whatever put the message: a send, a commit, a send-back.
	e.Delete(codec.PropTimerDeliverMs)
	e.Delete(codec.PropTimerDelaySec)
	e.Delete(codec.PropTimerDelayMs)
	e.Set(codec.PropRealTopic, msg.Topic)
	e.SetInt(codec.PropRealQueueID, int64(msg.QueueID))
	msg.Properties = e.StringView(pv)
	msg.Topic = TopicSchedule
	msg.QueueID = int32(level - 1)
}

// viewOf is pv, or msg's properties indexed into own when pv is nil. own
// is the caller's local, so a caller without a view allocates none.
func viewOf(msg *codec.Message, pv, own *codec.PropView) *codec.PropView {
	if pv == nil {
		*own = codec.ViewProperties(msg.Properties)
		pv = own
	}
	return pv
}

// Schedule is ScheduleMessageService: it walks each delay level's queue of
// SCHEDULE_TOPIC_XXXX and re-puts messages whose time has come to their real
// topic. Progress is kept in delayOffset.json ({"offsetTable":{1:0,2:17}}).
type Schedule struct {
	h       *Host
	levels  []time.Duration // levels[i] is the delay of level i+1
	path    string
	mu      sync.Mutex
	offsets map[int32]int64  // delay level (1-based) → next schedule-queue offset
	file    compat.DirtyFile // marked when an offset moves
	version meta.Version
	tick    time.Duration
	kick    chan struct{} // a message reached SCHEDULE_TOPIC_XXXX
	// PersistInterval is how often Run writes delayOffset.json
	// (flushDelayOffsetInterval); set before Run.
	PersistInterval time.Duration
	// parked and real are the delivering goroutine's scratch: a schedule
	// record decoded in place and the message put back for it.
	parked codec.Message
	real   codec.Message
}

// NewSchedule makes the delay-level service; its progress lives in
// dir/delayOffset.json.
func NewSchedule(h *Host, levels []time.Duration, dir string) *Schedule {
	return &Schedule{h: h, levels: levels, path: filepath.Join(dir, "delayOffset.json"),
		offsets: map[int32]int64{}, tick: 100 * time.Millisecond, kick: make(chan struct{}, 1),
		PersistInterval: 10 * time.Second}
}

// Levels is how many delay levels there are.
func (s *Schedule) Levels() int { return len(s.levels) }

// Kick tells the service a message reached its topic.
func (s *Schedule) Kick() { Kick(s.kick) }

// Offset is the next schedule-queue offset of a level (1-based).
func (s *Schedule) Offset(level int32) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets[level]
}

// Load reads delayOffset.json (or its .bak).
func (s *Schedule) Load() error {
	return meta.LoadConfigFile(s.path, func(data []byte) error {
		w, err := decodeDelayOffsets(data)
		if err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for k, v := range w.OffsetTable {
			s.offsets[k] = v
		}
		s.version.Set(w.DataVersion)
		return nil
	})
}

type delayOffsets struct {
	DataVersion meta.DataVersion `json:"dataVersion"`
	OffsetTable map[int32]int64  `json:"offsetTable"`
}

func decodeDelayOffsets(data []byte) (delayOffsets, error) {
	var w delayOffsets
	err := codec.UnmarshalBody(data, &w)
	return w, err
}

// ReplaceFromMaster takes the master's delayOffset.json content (a slave's
// copy) and persists it.
func (s *Schedule) ReplaceFromMaster(body []byte) error {
	w, err := decodeDelayOffsets(body)
	if err != nil {
		return fmt.Errorf("decode master delay offsets: %w", err)
	}
	s.mu.Lock()
	s.offsets = w.OffsetTable
	if s.offsets == nil {
		s.offsets = map[int32]int64{}
	}
	s.version.Set(w.DataVersion)
	s.mu.Unlock()
	return s.Persist()
}

// MergeAhead takes from a slave's GET_ALL_DELAY_OFFSET answer every level's
// offset ahead of this one's (a master's pre-online reverse sync: the slave
// delivered those while it acted); it returns how many it took.
func (s *Schedule) MergeAhead(body []byte) (int, error) {
	w, err := decodeDelayOffsets(body)
	if err != nil {
		return 0, fmt.Errorf("decode slave delay offsets: %w", err)
	}
	n := 0
	s.mu.Lock()
	for level, off := range w.OffsetTable {
		if cur, ok := s.offsets[level]; !ok || cur < off {
			s.offsets[level] = off
			n++
		}
	}
	s.mu.Unlock()
	if n == 0 {
		return 0, nil
	}
	return n, s.Persist()
}

// Persist writes delayOffset.json.
func (s *Schedule) Persist() error {
	return s.file.Flush(true, func() error { return compat.WriteConfigFile(s.path, s.Encode()) })
}

// Encode is delayOffset.json: {"dataVersion":…,"offsetTable":{1:0,2:17}}.
func (s *Schedule) Encode() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b bytes.Buffer
	dv, _ := codec.MarshalBody(s.version.Get())
	b.WriteString("{\n\t\"dataVersion\":")
	b.Write(dv)
	b.WriteString(",\n\t\"offsetTable\":")
	meta.WriteIntKeyedMap(&b, s.offsets)
	b.WriteString("\n}")
	return b.Bytes()
}

// Run delivers until ctx ends.
func (s *Schedule) Run(ctx context.Context) {
	lastPersist := time.Now()
	TickUntilIdle(ctx, s.tick, IdleTick, s.kick, func(ctx context.Context) (pending bool) {
		for level := 1; level <= len(s.levels); level++ {
			s.deliverLevel(ctx, int32(level))
			if s.Offset(int32(level)) < s.h.Store.MaxOffsetInQueue(TopicSchedule, int32(level-1)) {
				pending = true
			}
		}
		// Every PersistInterval while delivering (Java's flushDelayOffsetInterval),
		// and before going idle: the idle tick is 10 s, and the offsets of the
		// last deliveries waited for it (a kill meanwhile delivered them again).
		if s.file.Dirty() && (!pending || time.Since(lastPersist) >= s.PersistInterval) {
			lastPersist = time.Now()
			if err := s.Persist(); err != nil {
				s.h.Log.Error("persist delayOffset.json", "err", err)
			}
		}
		return pending
	})
}

// deliverLevel moves every due message of one level to its real topic.
func (s *Schedule) deliverLevel(ctx context.Context, level int32) {
	qid := level - 1
	if s.h.Store.MaxOffsetInQueue(TopicSchedule, qid) <= 0 {
		return
	}
	delay := s.levels[level-1]
	for round := 0; round < 64 && ctx.Err() == nil; round++ {
		off := s.Offset(level)
		res := s.h.Store.GetMessage("", TopicSchedule, qid, off, 32, 1<<20, nil)
		switch res.Status {
		case store.GetFound:
		case store.GetOffsetTooSmall, store.GetOffsetOverflowBadly, store.GetOffsetFoundNull, store.GetNoMatchedMessage:
			if res.NextBeginOffset != off {
				s.setOffset(level, res.NextBeginOffset)
				res.Release()
				continue
			}
			res.Release()
			return
		default:
			res.Release()
			return
		}
		// Records are delivered straight from the mapped bytes, held until done.
		now := time.Now().UnixMilli()
		more := len(res.Records) > 0
		m := &s.parked
		for _, rec := range res.Records {
			if _, err := codec.DecodeRecord(rec, m); err != nil {
				s.h.Log.Error("schedule: undecodable record", "level", level, "err", err)
				more = false
				break
			}
			if m.StoreTimestamp+delay.Milliseconds() > now || !s.deliver(ctx, m) {
				more = false // not due yet, or retried on the next tick
				break
			}
			s.setOffset(level, m.QueueOffset+1)
		}
		*m = codec.Message{}
		res.Release()
		if !more {
			return
		}
	}
}

func (s *Schedule) setOffset(level int32, off int64) {
	s.mu.Lock()
	if s.offsets[level] != off {
		s.offsets[level] = off
		s.file.Mark()
	}
	s.mu.Unlock()
}

// deliver is messageTimeup + put: the real topic and queue come back, DELAY
// goes.
func (s *Schedule) deliver(ctx context.Context, m *codec.Message) bool {
	// Java clears DELAY from the map only after it built the properties string it
	// stores (ScheduleMessageService.messageTimeUp), so the delivered copy keeps
	// DELAY, as it keeps REAL_TOPIC and REAL_QID.
	out := &s.real
	defer func() { *out = codec.Message{} }()
	if !RealInto(out, m) {
		s.h.Log.Warn("schedule: message without a valid REAL_TOPIC and REAL_QID dropped", "offset", m.CommitLogOffset)
		return true
	}
	if remark, ok := s.h.Target(out.Topic, out.QueueID); !ok {
		s.h.Log.Warn("schedule: message for a topic it may not go to dropped", "offset", m.CommitLogOffset,
			"topic", out.Topic, "queue", out.QueueID, "remark", remark)
		return true
	}
	return s.h.putBack(ctx, "schedule", out)
}

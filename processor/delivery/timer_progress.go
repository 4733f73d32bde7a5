package delivery

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/meta"
)

// The timer's progress file (timerProgress.json in the config directory).
// The wheel lives in memory and is rebuilt from rmq_sys_wheel_timer at
// start, from the oldest record not yet delivered: one timer days away holds
// that point back, and without more every timer delivered after it would be
// delivered again on each restart, a clean one too. Java keeps its wheel and
// timerlog on disk and re-delivers at most what its last checkpoint (1 s)
// missed. This file gives the same bound: every record below readOffset whose
// wheel time (TIMER_OUT_MS, or for a far one its roll time, rollAt) is before
// deliveredBeforeMs was delivered or rolled when it was written, so a restart
// skips those. The claim stays true whatever happened after, so it is safe
// with a consumer offset written at another time, or copied from a master.
// A slave adopts its master's (AdoptProgress), so its promotion skips what the
// master delivered.
type ProgressState struct {
	QueueOffset       int64 `json:"queueOffset"`       // every record below was delivered
	ReadOffset        int64 `json:"readOffset"`        // records below were read into the wheel
	DeliveredBeforeMs int64 `json:"deliveredBeforeMs"` // ... and those due (or to roll) before this were delivered (rolled)
	// RollsUnknown marks a Java broker's claim: it rolled far records at times
	// of its own clock, so none is skipped by its roll time (rolled again).
	RollsUnknown bool `json:"rollsUnknown,omitempty"`
}

// progress writes the file: at most every interval while the wheel works,
// and when it goes idle or stops.
type progress struct {
	path      string
	interval  time.Duration
	mu        sync.Mutex // one write at a time; guards the fields below
	written   ProgressState
	moves     uint64 // Timer.moves when written was
	lastWrite time.Time
}

// SetProgressFile names the progress file (dir/timerProgress.json); without
// one the timer keeps only its consumer offset. Set before Run.
func (t *Timer) SetProgressFile(dir string) {
	t.prog.path = filepath.Join(dir, "timerProgress.json")
}

// due reports whether the progress should be written now.
func (p *progress) due(idle bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.path != "" && (idle || time.Since(p.lastWrite) >= p.interval)
}

// state is the progress at the end of the last step (under t.mu). All slots
// before the cursor are delivered, so every pending entry due before it was
// added overdue to the cursor's slot: lowAtCursor bounds them.
func (t *Timer) state() ProgressState {
	s := ProgressState{QueueOffset: t.done.base, ReadOffset: t.readPos}
	if s.ReadOffset > s.QueueOffset {
		s.DeliveredBeforeMs = min(t.cursor, t.lowAtCursor) * t.prec
	}
	return s
}

// Persist writes the progress file if it changed; nothing before the first
// step (a slave's timer never loads).
func (t *Timer) Persist() error {
	p := &t.prog
	if p.path == "" {
		return nil
	}
	p.mu.Lock() // before t.mu, as in AdoptProgress: no stale state written over an adopted one
	defer p.mu.Unlock()
	t.mu.Lock()
	loaded, s, readMs, moves := t.loaded, t.state(), t.cursor*t.prec, t.moves
	t.mu.Unlock()
	// Only the cursor moved past empty slots (a far timer waits): the file
	// already skips all a restart could, so a waiting wheel writes once a
	// minute, to keep timercheck's read time near for Apache, not each second.
	idle := s.QueueOffset == p.written.QueueOffset && s.ReadOffset == p.written.ReadOffset && moves == p.moves &&
		time.Since(p.lastWrite) < time.Minute
	if !loaded || s == p.written || idle {
		return nil
	}
	// First, so that rmqd's own file is never the older of the two.
	if err := p.writeJavaCheckpoint(readMs, s.QueueOffset); err != nil {
		return err
	}
	if err := p.write(s); err != nil {
		return err
	}
	p.moves = moves
	return nil
}

// writeJavaCheckpoint writes Java's timercheck beside the progress file, for
// an Apache broker that takes this store over: it reads rmq_sys_wheel_timer
// from lastTimerQueueOffset (below it everything was delivered) and its wheel
// from lastReadTimeMs. Without one it read the queue from its start and
// delivered again every timer the commitlog still held. Apache cannot be told
// what was delivered above the offset (its timerlog says that): those come
// again (docs/bench-delivery.md).
func (p *progress) writeJavaCheckpoint(readMs, queueOffset int64) error {
	body := JavaCheckpointBody(readMs, queueOffset, time.Now().UnixMilli())
	if err := compat.WriteConfigFile(p.javaPath(), body); err != nil {
		return fmt.Errorf("write Java timer checkpoint: %w", err)
	}
	return nil
}

// write saves s (under p.mu).
func (p *progress) write(s ProgressState) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n\t\"queueOffset\":%d,\n\t\"readOffset\":%d,\n\t\"deliveredBeforeMs\":%d",
		s.QueueOffset, s.ReadOffset, s.DeliveredBeforeMs)
	if s.RollsUnknown {
		b.WriteString(",\n\t\"rollsUnknown\":true")
	}
	b.WriteString("\n}")
	if err := compat.WriteConfigFile(p.path, b.Bytes()); err != nil {
		return fmt.Errorf("write timer progress: %w", err)
	}
	p.written, p.lastWrite = s, time.Now()
	return nil
}

// ProgressNow is the wheel's progress at the end of its last step; false when
// it is not loaded (a slave's timer, a master's before its first step).
func (t *Timer) ProgressNow() (ProgressState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state(), t.loaded
}

// AdoptProgress writes s, a master's progress, as this broker's progress file
// so that a promotion starts from it (SlaveSynchronize.syncTimerCheckPoint).
// It is refused (false) while the wheel runs: a master keeps its own. The
// wheel's stale state, if it ran before (a demoted master), is dropped so
// Persist cannot write it over s.
func (t *Timer) AdoptProgress(s ProgressState) (bool, error) {
	p := &t.prog
	if p.path == "" {
		return false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running > 0 {
		return false, nil
	}
	t.loaded = false
	if s == p.written {
		return true, nil
	}
	if err := p.write(s); err != nil {
		return false, err
	}
	return true, nil
}

// AdoptProgressIfAhead is AdoptProgress for s from a slave that acted for
// this master (pre-online reverse sync): written only when it claims more
// than the file, that is a later queueOffset, or the same with a later
// deliveredBeforeMs. False when it did not.
func (t *Timer) AdoptProgressIfAhead(s ProgressState) (bool, error) {
	if t.prog.path == "" {
		return false, nil
	}
	var own ProgressState
	err := meta.LoadConfigFile(t.prog.path, func(data []byte) error { return codec.UnmarshalBody(data, &own) })
	if err == nil && (s.QueueOffset < own.QueueOffset ||
		s.QueueOffset == own.QueueOffset && s.DeliveredBeforeMs <= own.DeliveredBeforeMs) {
		return false, nil
	}
	return t.AdoptProgress(s)
}

func (t *Timer) persistLogged() {
	if err := t.Persist(); err != nil {
		t.h.Log.Error("timer: persist progress", "err", err)
	}
}

// javaCheckpointFile is Java's TimerCheckpoint in the config directory.
const javaCheckpointFile = "timercheck"

// javaPath is Java's timercheck beside the progress file.
func (p *progress) javaPath() string { return filepath.Join(filepath.Dir(p.path), javaCheckpointFile) }

// JavaCheckpointBody is TimerCheckpoint.encode's 56 bytes for rmqd's wheel:
// lastReadTimeMs, lastTimerLogFlushPos (0: rmqd keeps no timerlog),
// lastTimerQueueOffset and masterTimerQueueOffset (both where it reads
// rmq_sys_wheel_timer), then the data version (stateVersion, timestamp,
// counter). JavaCheckpointProgress reads the same layout.
func JavaCheckpointBody(readMs, queueOff, nowMs int64) []byte {
	body := make([]byte, 56)
	for i, v := range []int64{readMs, 0, queueOff, queueOff, 0, nowMs, 0} {
		binary.BigEndian.PutUint64(body[i*8:], uint64(v))
	}
	return body
}

// JavaCheckpointProgress reads what a Java broker's TimerCheckpoint (its
// timercheck file, or a Java master's GET_TIMER_CHECK_POINT body:
// lastReadTimeMs, lastTimerLogFlushPos, lastTimerQueueOffset, ... as
// big-endian longs) says of rmq_sys_wheel_timer: every record below
// lastTimerQueueOffset went into its timerlog, or out at once if overdue, and
// those whose slot is before lastReadTimeMs were delivered or rolled. That is
// the claim of this file without its queueOffset. False when it claims nothing.
func JavaCheckpointProgress(b []byte) (ProgressState, bool) {
	if len(b) < 24 {
		return ProgressState{}, false
	}
	readMs, queueOff := int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[16:]))
	if readMs <= 0 || queueOff <= 0 {
		return ProgressState{}, false
	}
	return ProgressState{ReadOffset: queueOff, DeliveredBeforeMs: readMs, RollsUnknown: true}, true
}

// loadProgress is the progress the wheel starts from: this file, or a Java
// broker's timercheck written after it (a store taken over from Apache), so
// that what Java delivered is not delivered again.
func (t *Timer) loadProgress() (s ProgressState) {
	if t.prog.path == "" {
		return s
	}
	var own time.Time // zero when there is no file
	for _, p := range []string{t.prog.path, t.prog.path + ".bak"} {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(own) {
			own = fi.ModTime()
		}
	}
	jpath := t.prog.javaPath()
	if fi, err := os.Stat(jpath); err == nil && fi.ModTime().After(own) {
		if b, err := os.ReadFile(jpath); err == nil {
			if js, ok := JavaCheckpointProgress(b); ok {
				t.h.Log.Info("timer: starting from the Java broker's timercheck, newer than rmqd's progress",
					"readOffset", js.ReadOffset, "deliveredBeforeMs", js.DeliveredBeforeMs)
				return js
			}
		}
	}
	err := meta.LoadConfigFile(t.prog.path, func(data []byte) error { return codec.UnmarshalBody(data, &s) })
	if err != nil {
		t.h.Log.Error("timer: progress file unreadable, timers delivered since the oldest pending one may come again", "err", err)
		s = ProgressState{}
	}
	return s
}

// load starts the wheel (under t.mu): from the consumer offset or the
// file's, whichever is further, skipping what the file says was delivered.
func (t *Timer) load(now int64) {
	s := t.loadProgress()
	t.readPos = max(t.h.Offsets.Query(TimerSysGroup, TopicTimer, 0), s.QueueOffset, 0)
	// A file adopted from a master may name records this store never got (a
	// promoted slave behind its master): offsets it reuses are not skipped.
	t.skipOffset = min(s.ReadOffset, max(t.h.Store.MaxOffsetInQueue(TopicTimer, 0), 0))
	t.skipSec = s.DeliveredBeforeMs / t.prec
	// Java rolls a far record at a time from its clock when it read the record,
	// which may be later than the store time rollAt counts from: its claim
	// skips only records it delivered, and a far one is rolled again.
	t.skipRolled = !s.RollsUnknown
	t.done.reset(t.readPos)
	t.wheel = make([][]timerEntry, timerSlots)
	t.slotLen.Store(nil) // counted again from this wheel when next asked
	t.count = 0
	t.recalled = nil
	t.cursor = now/t.prec - 1
	t.lowAtCursor = math.MaxInt64
	t.loaded = true
}

package pop

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"rmqd/codec"
	"rmqd/compat"
	"rmqd/processor/meta"
)

// orderEntry is ConsumerOrderInfoManager.OrderInfo in fastjson's names.
type orderEntry struct {
	Attempt     string          `json:"a,omitempty"`
	CommitBits  int64           `json:"cm"`
	Invisible   *int64          `json:"i,omitempty"`
	LastConsume int64           `json:"l"`
	Offsets     []int64         `json:"o,omitempty"`
	Consumed    map[int64]int32 `json:"oc,omitempty"`
	NextVisible map[int64]int64 `json:"ot,omitempty"`
	PopTime     int64           `json:"popTime"`
}

func (o *orderEntry) queueOffset(i int) int64 {
	if i == 0 {
		return o.Offsets[0]
	}
	return o.Offsets[0] + o.Offsets[i]
}

func (o *orderEntry) notAcked(i int) bool { return o.CommitBits&(1<<i) == 0 }

// needBlock: a batch is in flight while one of its unacked messages is
// still invisible; the same attempt id (a client retrying) is let through.
func (o *orderEntry) needBlock(attempt string, invisible int64, now int64) bool {
	if len(o.Offsets) == 0 {
		return false
	}
	if o.Attempt != "" && o.Attempt == attempt {
		return false
	}
	if o.Invisible == nil || *o.Invisible <= 0 {
		o.Invisible = &invisible
	}
	for i := range o.Offsets {
		if !o.notAcked(i) {
			continue
		}
		next := o.PopTime + *o.Invisible
		if t, ok := o.NextVisible[o.queueOffset(i)]; ok {
			next = t
		}
		if now < next {
			return true
		}
	}
	return false
}

func (o *orderEntry) nextOffset() int64 {
	if len(o.Offsets) == 0 {
		return -2
	}
	for i := range o.Offsets {
		if o.notAcked(i) {
			return o.queueOffset(i)
		}
	}
	return o.queueOffset(len(o.Offsets)-1) + 1
}

// OrderInfo is ConsumerOrderInfoManager: per topic@group and queue, the batch
// an ordered POP handed out, which of it is acked, and how often each offset
// was delivered. Persisted as consumerOrderInfo.json in Java's format.
type OrderInfo struct {
	path  string
	log   *slog.Logger
	mu    sync.Mutex
	table map[string]map[int32]*orderEntry
	file  compat.DirtyFile // marked on every change
	every time.Duration    // run's period, 5 s (tests shorten it)
}

// NewOrderInfo keeps its file under dir (storePathRootDir/config).
func NewOrderInfo(dir string, log *slog.Logger) *OrderInfo {
	p := ""
	if dir != "" {
		p = filepath.Join(dir, "consumerOrderInfo.json")
	}
	return &OrderInfo{path: p, log: log, table: map[string]map[int32]*orderEntry{}, every: 5 * time.Second}
}

func orderKey(topic, group string) string { return topic + "@" + group }

func (m *OrderInfo) entry(topic, group string, queueID int32) *orderEntry {
	return m.table[orderKey(topic, group)][queueID]
}

// Update records a batch just popped and appends its order count info.
func (m *OrderInfo) Update(attempt string, isRetry bool, topic, group string, queueID int32, popTime, invisible int64, offs []int64, info *offsetInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := orderKey(topic, group)
	qs := m.table[k]
	if qs == nil {
		qs = map[int32]*orderEntry{}
		m.table[k] = qs
	}
	inv := invisible
	ne := &orderEntry{Attempt: attempt, PopTime: popTime, Invisible: &inv, LastConsume: time.Now().UnixMilli()}
	ne.Offsets = append(ne.Offsets, offs[0])
	for _, o := range offs[1:] {
		ne.Offsets = append(ne.Offsets, o-offs[0])
	}
	if old := qs[queueID]; old != nil {
		ne.mergeConsumed(old)
	}
	qs[queueID] = ne
	m.file.Mark()
	minTimes := int32(1<<31 - 1)
	if ne.Consumed != nil {
		for _, off := range codec.SortedKeys(ne.Consumed) {
			n := ne.Consumed[off]
			info.offsetOrderCount(topic, queueID, off, int(n))
			minTimes = min(minTimes, n)
		}
		if len(ne.Consumed) != len(ne.Offsets) {
			minTimes = 0
		}
	} else {
		minTimes = 0
	}
	info.queueOrderCount(topic, queueID, int(minTimes))
}

// mergeConsumed is OrderInfo.mergeOffsetConsumedCount.
func (o *orderEntry) mergeConsumed(prev *orderEntry) {
	if prev.Attempt != "" && prev.Attempt == o.Attempt {
		o.Consumed = prev.Consumed
		return
	}
	prevSet := map[int64]bool{}
	for i := range prev.Offsets {
		prevSet[prev.queueOffset(i)] = true
	}
	out := map[int64]int32{}
	for i := range o.Offsets {
		q := o.queueOffset(i)
		if prevSet[q] {
			out[q] = prev.Consumed[q] + 1
		}
	}
	o.Consumed = out
}

// CheckBlock reports that the queue has a batch in flight for group.
func (m *OrderInfo) CheckBlock(attempt, topic, group string, queueID int32, invisible int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(topic, group, queueID)
	return e != nil && e.needBlock(attempt, invisible, time.Now().UnixMilli())
}

// ClearBlock forgets the queue's batch (an offset reset).
func (m *OrderInfo) ClearBlock(topic, group string, queueID int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if qs := m.table[orderKey(topic, group)]; qs != nil {
		delete(qs, queueID)
		m.file.Mark()
	}
}

// CommitAndNext marks an offset acked and returns the consumer offset to
// commit: -1 illegal, -2 nothing to commit (another pop's batch).
func (m *OrderInfo) CommitAndNext(topic, group string, queueID int32, off, popTime int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(topic, group, queueID)
	if e == nil {
		return off + 1
	}
	if len(e.Offsets) == 0 {
		return -1
	}
	if popTime != e.PopTime {
		return -2
	}
	i := 0
	for ; i < len(e.Offsets); i++ {
		if e.queueOffset(i) == off {
			break
		}
	}
	if i >= len(e.Offsets) || i >= 64 {
		return -1
	}
	e.CommitBits |= 1 << i
	e.LastConsume = time.Now().UnixMilli()
	m.file.Mark()
	return e.nextOffset()
}

// UpdateNextVisibleTime moves one message's visibility (change invisible time).
func (m *OrderInfo) UpdateNextVisibleTime(topic, group string, queueID int32, off, popTime, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(topic, group, queueID)
	if e == nil || popTime != e.PopTime {
		return
	}
	if e.NextVisible == nil {
		e.NextVisible = map[int64]int64{}
	}
	e.NextVisible[off] = next
	m.file.Mark()
}

// Suspend holds the queue's whole batch back until next, one delivery
// fewer counted for each message (MemoryConsumerOrderInfoManager.suspendQueue,
// a lite topic's CHANGE_MESSAGE_INVISIBLETIME with suspend).
func (m *OrderInfo) Suspend(topic, group string, queueID int32, popTime, next int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entry(topic, group, queueID)
	if e == nil || popTime != e.PopTime {
		return
	}
	for k, v := range e.Consumed {
		if v > 0 {
			e.Consumed[k] = v - 1
		}
	}
	e.NextVisible = nil
	inv := next - e.PopTime
	e.Invisible = &inv
	m.file.Mark()
}

// ForgetTopics drops the batch states of the topics matched (deleted ones).
func (m *OrderInfo) ForgetTopics(match func(topic string) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.table {
		// A key is topic@group; try each '@', as a lite topic may hold one.
		for i := range len(k) {
			if k[i] == '@' && match(k[:i]) {
				delete(m.table, k)
				m.file.Mark()
				break
			}
		}
	}
}

// Count is how many queues have a batch state.
func (m *OrderInfo) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, qs := range m.table {
		n += len(qs)
	}
	return n
}

// orderCleanAfter drops queues unused for a day (CLEAN_SPAN_FROM_LAST).
const orderCleanAfter = 24 * time.Hour

// Encode writes {"table":{"topic@group":{"0":{...}}}}: quoted numeric keys,
// which fastjson reads as it reads its own bare ones.
func (m *OrderInfo) Encode() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(time.Now().UnixMilli())
	var b bytes.Buffer
	b.WriteString(`{"table":{`)
	keys := codec.SortedKeys(m.table)
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(codec.AppendJSONString(nil, k))
		b.WriteString(":{")
		qs := m.table[k]
		ids := codec.SortedKeys(qs)
		for j, q := range ids {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + strconv.Itoa(int(q)) + `":`)
			v, err := codec.MarshalBody(qs[q])
			if err != nil {
				return nil, err
			}
			b.Write(v)
		}
		b.WriteByte('}')
	}
	b.WriteString("}}")
	return b.Bytes(), nil
}

// Decode reads the file (fastjson's bare keys included).
func (m *OrderInfo) Decode(data []byte) error {
	strict, err := codec.StrictJSON(data)
	if err != nil {
		return err
	}
	var w struct {
		Table map[string]map[string]*orderEntry `json:"table"`
	}
	if err := codec.UnmarshalBody(strict, &w); err != nil {
		return err
	}
	t := map[string]map[int32]*orderEntry{}
	for k, qs := range w.Table {
		if !strings.Contains(k, "@") {
			continue
		}
		m2 := map[int32]*orderEntry{}
		for q, e := range qs {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil || e == nil || len(e.Offsets) > 64 {
				continue
			}
			m2[int32(id)] = e
		}
		t[k] = m2
	}
	m.mu.Lock()
	m.table = t
	m.mu.Unlock()
	return nil
}

// Load reads consumerOrderInfo.json (or its .bak); none is not an error.
func (m *OrderInfo) Load() error {
	if m.path == "" {
		return nil
	}
	if err := meta.LoadConfigFile(m.path, m.Decode); err != nil {
		return fmt.Errorf("load consumer order info: %w", err)
	}
	return nil
}

// Persist writes the file as Java's ConfigManager does (compat.WriteConfigFile).
func (m *OrderInfo) Persist() error { return m.persist(true) }

// PersistIfChanged writes the file when the table changed since the last write.
func (m *OrderInfo) PersistIfChanged() error { return m.persist(false) }

func (m *OrderInfo) persist(force bool) error {
	if m.path == "" {
		return nil
	}
	err := m.file.Flush(force, func() error {
		data, err := m.Encode()
		if err != nil {
			return err
		}
		return compat.WriteConfigFile(m.path, data)
	})
	if err != nil {
		return fmt.Errorf("persist consumer order info: %w", err)
	}
	return nil
}

// expireLocked drops the queues unused for orderCleanAfter, and reports
// whether it dropped any.
func (m *OrderInfo) expireLocked(now int64) bool {
	dropped := false
	for k, qs := range m.table {
		for q, e := range qs {
			if now-e.LastConsume > orderCleanAfter.Milliseconds() {
				delete(qs, q)
				dropped = true
			}
		}
		if len(qs) == 0 {
			delete(m.table, k)
		}
	}
	return dropped
}

// run persists the table every 5 s when it changed. Unused queues are
// dropped on every tick: waiting for a change would keep the last ones of a
// broker whose ordered POP consumers (or topics) are all gone.
func (m *OrderInfo) run(ctx context.Context) {
	everyTick(ctx, m.every, func() {
		m.mu.Lock()
		if m.expireLocked(time.Now().UnixMilli()) {
			m.file.Mark()
		}
		m.mu.Unlock()
		if err := m.PersistIfChanged(); err != nil {
			m.log.Error("persist consumer order info", "err", err)
		}
	})
}

package store

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"rmqd/codec"
	"rmqd/compat"
)

// endFileMinBlank is the room a blank end-of-file record needs (TOTALSIZE + MAGIC).
const endFileMinBlank = 8

// maxPropertiesLen is the int16 limit of the properties length field.
const maxPropertiesLen = 32767

// tqKey identifies a consume queue; a struct key lets the hot path look up the
// topic-queue table without building "topic-queueId" strings.
type tqKey struct {
	topic string
	qid   int32
}

// commitLog appends records under one lock, straight into the mapped tail file.
type commitLog struct {
	q          *mappedFileQueue
	maxMsgSize int
	// propCRC appends the record CRC property (enabledAppendPropCRC).
	propCRC bool
	// v1Only refuses a record V1 cannot carry (autoMessageVersionOnTopicLen off).
	v1Only bool

	mu sync.Mutex
	// closed is set under mu at shutdown so no append writes into an unmapped file.
	closed bool
	// table is the next queue offset per topic-queue ("topic-queueId" in Java).
	// Values are pointers so that bumping an offset never assigns to the map: an
	// assignment to an existing string key replaces the stored key with the new
	// one, which may alias a request buffer that is reused afterwards.
	table map[tqKey]*int64

	// lastStoreTs is the store time of the last appended record (flush checkpoint).
	lastStoreTs atomic.Int64
	// batchScratch holds per-batch work (properties, sizes), guarded by mu.
	batchProps []string
	batchSizes []int
	batchMsg   codec.Message
	// scratch is where a write-through append encodes its records before the
	// pwrite, guarded by mu.
	scratch  []byte
	onAppend func(start, end int64) // the appended bytes; start < 0: dispatch them elsewhere
	// onNoSpace is told when an append or a new file failed for lack of space.
	onNoSpace func()
	// lockBegin is when the put holding mu took it (unix ms), 0 while none
	// does: CommitLog.beginTimeInLock, read by isOSPageCacheBusy.
	lockBegin atomic.Int64

	// lmq assigns INNER_MULTI_QUEUE_OFFSET at put (enableLmq); maxLMQ bounds
	// the LMQ queues in table, lmqQueues of them now; lmqScratch is assignLMQ's,
	// guarded by mu.
	lmq        bool
	maxLMQ     int
	lmqQueues  int
	lmqScratch []string
}

func newCommitLog(dir string, cfg *Config) *commitLog {
	c := &commitLog{
		q:          newMappedFileQueue(dir, cfg.MappedFileSizeCommitLog),
		maxMsgSize: cfg.MaxMessageSize,
		propCRC:    cfg.EnabledAppendPropCRC,
		v1Only:     !cfg.AutoMessageVersionOnTopicLen,
		table:      make(map[tqKey]*int64),
		lmq:        cfg.EnableLmq,
		maxLMQ:     cfg.MaxLmqConsumeQueueNum,
	}
	c.q.writeThrough = cfg.writeThrough()
	c.q.reserve = true
	return c
}

// target is where size bytes of records for position wrote of f are encoded:
// the mapping itself, or for a write-through file the scratch buffer that
// commit then writes. A file loaded at start gets its descriptor here; should
// that fail, the mapping still takes the records. Called with mu held.
func (c *commitLog) target(f *mappedFile, wrote int64, size int) []byte {
	if !c.q.writeThrough || f.openForWrite() != nil {
		return f.data[wrote:]
	}
	if cap(c.scratch) < size {
		c.scratch = make([]byte, size)
	}
	return c.scratch[:size]
}

// commit makes the records encoded into target part of f; nothing to do when
// they were encoded into the mapping. Called with mu held.
func (c *commitLog) commit(f *mappedFile, wrote int64, b []byte) error {
	if f.fd.Load() < 0 {
		return nil
	}
	return f.pwrite(wrote, b)
}

// failed maps an append error to its status, telling onNoSpace of a full disk.
// Called with mu held.
func (c *commitLog) failed(err error, st PutStatus) PutStatus {
	if (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) || errors.Is(err, errMappedFault)) && c.onNoSpace != nil {
		c.onNoSpace()
	}
	return st
}

// encode writes m's record into dst, a fault on the mapping (a full disk under
// a file loaded sparse) coming back as an error.
func (c *commitLog) encode(dst []byte, m *codec.Message) (n int, err error) {
	if c.propCRC {
		err = guardFault(func() { n = codec.EncodeRecordPropCRC(dst, m) })
	} else {
		err = guardFault(func() { n = codec.EncodeRecord(dst, m) })
	}
	return n, err
}

// dropPropCRC removes a CRC property the message came with (a re-put of a
// stored record carries the old one) before the new one is appended, as
// CommitLog.asyncPutMessage does.
func (c *commitLog) dropPropCRC(props string) string {
	if c.propCRC && strings.Contains(props, codec.PropCRC32) {
		return codec.DeleteProperty(props, codec.PropCRC32)
	}
	return props
}

// lock takes mu and notes when (beginTimeInLock); unlock clears that.
func (c *commitLog) lock() int64 {
	c.mu.Lock()
	now := time.Now().UnixMilli()
	c.lockBegin.Store(now)
	return now
}

func (c *commitLog) unlock() {
	c.lockBegin.Store(0)
	c.mu.Unlock()
}

func tranType(sysFlag int32) int32 { return sysFlag & codec.SysFlagTransMask }

// assignsQueueOffset says whether a record takes a queue slot: PREPARED and
// ROLLBACK records get offset 0 and no consume-queue unit.
func assignsQueueOffset(sysFlag int32) bool {
	t := tranType(sysFlag)
	return t != codec.SysFlagTransPrepared && t != codec.SysFlagTransRollback
}

func (c *commitLog) checkMessage(m *codec.Message) (int, PutStatus) {
	// A topic the store could not make a queue directory for is never written:
	// dispatch would have nowhere to put it.
	if len(m.Body) > c.maxMsgSize || !safeTopicDir(m.Topic) || m.QueueID < 0 {
		return 0, PutMessageIllegal
	}
	if c.v1Only && len(m.Topic) > codec.MaxV1TopicLen {
		return 0, PutMessageIllegal
	}
	extra := 0
	if c.propCRC {
		extra = codec.PropCRCExtra(m.Properties)
	}
	if len(m.Properties)+extra > maxPropertiesLen {
		return 0, PutPropertiesSizeExceeded
	}
	// Recovery ends the log at a record whose topic holds NUL or whose
	// properties end in NUL (the signs of a torn write), so never write one.
	if n := len(m.Properties); n > 0 && m.Properties[n-1] == 0 {
		return 0, PutMessageIllegal
	}
	if m.Topic == scheduleTopic {
		// Java's recovery ends the log at a schedule record whose DELAY is not
		// an int; a Java broker opening this store must not lose what follows.
		if d, ok := codec.PropertyValue(m.Properties, codec.PropDelay); ok {
			if _, err := strconv.ParseInt(d, 10, 32); err != nil {
				return 0, PutMessageIllegal
			}
		}
	}
	size := codec.RecordSize(m) + extra
	if size > c.maxRecordSize() || size+endFileMinBlank > c.q.fileSize {
		return 0, PutMessageIllegal
	}
	return size, PutOK
}

// fileFor returns the file that takes need more bytes, writing a blank record at the
// end of the current one when they do not fit (no record spans two files).
func (c *commitLog) fileFor(need int) (*mappedFile, PutStatus) {
	f, err := c.q.lastForWrite(0)
	if err != nil {
		return nil, c.failed(err, PutCreateMappedFileFailed)
	}
	wrote := f.wrote.Load()
	free := int64(f.size) - wrote
	if int64(need+endFileMinBlank) <= free {
		return f, PutOK
	}
	b := c.target(f, wrote, 8)
	blank := codec.MagicBlank
	if err := guardFault(func() {
		binary.BigEndian.PutUint32(b[4:], uint32(blank))
		binary.BigEndian.PutUint32(b[0:], uint32(free))
	}); err != nil {
		return nil, c.failed(err, PutUnknownError)
	}
	if err := c.commit(f, wrote, b[:8]); err != nil {
		return nil, c.failed(err, PutUnknownError)
	}
	f.wrote.Store(int64(f.size))
	f, err = c.q.lastForWrite(0)
	if err != nil {
		return nil, c.failed(err, PutCreateMappedFileFailed)
	}
	return f, PutOK
}

// put appends one record. m's store-assigned fields are overwritten.
func (c *commitLog) put(m *codec.Message) PutResult {
	m.Properties = c.dropPropCRC(m.Properties)
	size, st := c.checkMessage(m)
	if st != PutOK {
		return PutResult{Status: st}
	}
	now := c.lock()
	if c.closed {
		c.unlock()
		return PutResult{Status: PutServiceNotAvailable}
	}
	num := int64(1) // queue offsets the record takes
	if m.SysFlag&codec.SysFlagInnerBatch != 0 && assignsQueueOffset(m.SysFlag) {
		if num, st = c.assignInnerBase(m); st == PutOK {
			size, st = c.checkMessage(m) // INNER_BASE made the record longer
		}
		if st != PutOK {
			c.unlock()
			return PutResult{Status: st}
		}
	}
	f, st := c.fileFor(size)
	if st != PutOK {
		c.unlock()
		return PutResult{Status: st}
	}
	var lmqs []string
	if list := c.lmqList(m); list != "" {
		m.Properties, lmqs, st = c.assignLMQ(m.Properties, list)
		if st == PutOK {
			size, st = c.checkMessage(m) // the offsets made the record longer
		}
		if st != PutOK {
			c.unlock()
			return PutResult{Status: st}
		}
	}
	m.StoreTimestamp = now
	key := tqKey{m.Topic, m.QueueID}
	assign := assignsQueueOffset(m.SysFlag)
	m.QueueOffset = 0
	if assign {
		m.QueueOffset = c.nextOffset(key)
	}
	wrote := f.wrote.Load()
	m.CommitLogOffset = f.from + wrote
	dst := c.target(f, wrote, size)
	n, err := c.encode(dst, m)
	if err == nil {
		err = c.commit(f, wrote, dst[:n])
	}
	if err != nil {
		st := c.failed(err, PutUnknownError)
		c.unlock()
		return PutResult{Status: st}
	}
	f.wrote.Store(wrote + int64(n))
	if assign {
		c.bumpOffset(key, m.QueueOffset+num)
	}
	c.bumpLMQ(lmqs)
	c.lastStoreTs.Store(now)
	c.unlock()
	if c.onAppend != nil {
		c.onAppend(m.CommitLogOffset, m.CommitLogOffset+int64(n))
	}
	return PutResult{Status: PutOK, WroteOffset: m.CommitLogOffset, WroteBytes: int32(n),
		QueueOffset: m.QueueOffset, MsgNum: int32(num), StoreTimestamp: now}
}

// assignInnerBase writes INNER_BASE, the queue offset the inner batch's first
// message gets, into its properties, and returns how many offsets it takes:
// INNER_NUM, 1 without one (BatchConsumeQueue.assignQueueOffset,
// CommitLog.getMessageNum). Called with mu held.
func (c *commitLog) assignInnerBase(m *codec.Message) (int64, PutStatus) {
	num := int64(1)
	if v, ok := codec.PropertyValue(m.Properties, codec.PropInnerNum); ok {
		n, err := strconv.ParseInt(v, 10, 16)
		if err != nil || n < 1 {
			return 0, PutMessageIllegal
		}
		num = n
	}
	base := c.nextOffset(tqKey{m.Topic, m.QueueID})
	m.Properties = codec.SetPropertyInt(m.Properties, codec.PropInnerBase, base)
	return num, PutOK
}

// queueIsNew reports that no record was ever appended to the queue of key.
func (c *commitLog) queueIsNew(key tqKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextOffset(key) == 0
}

// nextOffset is the queue offset the next message of key gets.
func (c *commitLog) nextOffset(key tqKey) int64 {
	if p := c.table[key]; p != nil {
		return *p
	}
	return 0
}

// bumpOffset sets the next offset; a new key gets its own copy of the topic, which
// may alias a request buffer.
func (c *commitLog) bumpOffset(key tqKey, next int64) {
	if p := c.table[key]; p != nil {
		*p = next
		return
	}
	key.topic = strings.Clone(key.topic)
	if key.qid == LMQQueueID && compat.IsLMQ(key.topic) {
		c.lmqQueues++
	}
	p := new(int64) // not &next: that would move next to the heap on every call
	*p = next
	c.table[key] = p
}

// forget drops k from the table, and from the LMQ count. Called with mu held.
func (c *commitLog) forget(k tqKey) {
	if _, ok := c.table[k]; !ok {
		return
	}
	delete(c.table, k)
	if k.qid == LMQQueueID && compat.IsLMQ(k.topic) {
		c.lmqQueues--
	}
}

// forgetIfAt drops topic's queue LMQQueueID (an LMQ's only one) from the
// table unless a put gave a message an offset past end: check and drop are
// one step under mu, so no put slips between them. (A slave's table lags
// its queues, which only the dispatcher fills.)
func (c *commitLog) forgetIfAt(topic string, end int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := tqKey{topic: topic, qid: LMQQueueID}
	if c.nextOffset(key) > end {
		return false
	}
	c.forget(key)
	return true
}

// putBatch writes one record per message of a SEND_BATCH_MESSAGE body, with
// consecutive queue offsets and one store time.
func (c *commitLog) putBatch(tmpl *codec.Message, body []byte, fixProps func(string) string) PutResult {
	if tranType(tmpl.SysFlag) != 0 {
		return PutResult{Status: PutMessageIllegal}
	}
	now := c.lock()
	defer c.unlock()
	if c.closed {
		return PutResult{Status: PutServiceNotAvailable}
	}
	m := &c.batchMsg
	*m = *tmpl
	props := c.batchProps[:0]
	sizes := c.batchSizes[:0]
	defer func() {
		clear(props)
		c.batchProps, c.batchSizes = props[:0], sizes[:0]
		c.batchMsg = codec.Message{}
	}()
	it := codec.NewBatchIterator(body)
	var e codec.BatchEntry
	total := 0
	for it.Next(&e) {
		p := e.Properties
		if fixProps != nil {
			p = fixProps(p)
		}
		if c.lmq && strings.Contains(p, codec.PropInnerMultiQueueOffset) {
			// Java does not multi-dispatch a batch; an offset a client wrote
			// must not be taken for one the store assigned.
			p = codec.DeleteProperty(p, codec.PropInnerMultiQueueOffset)
		}
		p = c.dropPropCRC(p)
		m.Body, m.Properties = e.Body, p
		size, st := c.checkMessage(m)
		if st != PutOK {
			return PutResult{Status: st}
		}
		props = append(props, p)
		sizes = append(sizes, size)
		total += size
	}
	if it.Err() != nil || len(props) == 0 {
		return PutResult{Status: PutMessageIllegal}
	}
	if total+endFileMinBlank > c.q.fileSize {
		return PutResult{Status: PutMessageIllegal}
	}
	f, st := c.fileFor(total)
	if st != PutOK {
		return PutResult{Status: st}
	}
	key := tqKey{tmpl.Topic, tmpl.QueueID}
	qoff := c.nextOffset(key)
	res := PutResult{Status: PutOK, QueueOffset: qoff, MsgNum: int32(len(props)), StoreTimestamp: now,
		RecordOffsets: make([]int64, 0, len(props))}
	wrote := f.wrote.Load()
	res.WroteOffset = f.from + wrote
	dst, at := c.target(f, wrote, total), 0
	it = codec.NewBatchIterator(body)
	for i := 0; it.Next(&e); i++ {
		m.Body, m.Properties, m.Flag = e.Body, props[i], e.Flag
		m.StoreTimestamp = now
		m.QueueOffset = qoff + int64(i)
		m.CommitLogOffset = f.from + wrote
		m.PreparedTransactionOffset = 0
		n, err := c.encode(dst[at:], m)
		if err != nil {
			return PutResult{Status: c.failed(err, PutUnknownError)}
		}
		res.RecordOffsets = append(res.RecordOffsets, m.CommitLogOffset)
		wrote += int64(n)
		at += n
	}
	if err := c.commit(f, wrote-int64(at), dst[:at]); err != nil {
		return PutResult{Status: c.failed(err, PutUnknownError)}
	}
	f.wrote.Store(wrote)
	res.WroteBytes = int32(total)
	c.bumpOffset(key, qoff+int64(len(props)))
	c.lastStoreTs.Store(now)
	if c.onAppend != nil {
		c.onAppend(-1, -1) // under the lock: wake the dispatcher, never dispatch here
	}
	return res
}

// maxRecordSize bounds a record this store writes: the body limit plus room for
// the topic, properties and fixed fields.
func (c *commitLog) maxRecordSize() int { return c.maxMsgSize + 64*1024 }

// readRecord returns the record bytes at offset with the file held, or nil.
func (c *commitLog) readRecord(offset int64, size int) (*mappedFile, []byte) {
	f := c.q.findHeld(offset)
	if f == nil {
		return nil, nil
	}
	pos := offset - f.from
	wrote := f.wrote.Load()
	if size <= 0 {
		if pos+8 > wrote {
			f.release()
			return nil, nil
		}
		size = int(int32(binary.BigEndian.Uint32(f.data[pos:])))
		if magic := codec.RecordMagic(f.data[pos:]); magic != codec.MagicV1 && magic != codec.MagicV2 {
			f.release()
			return nil, nil // not the start of a record (a blank, or a bad offset)
		}
		// An offset from the wire may point into a message body made to look
		// like a record header; its size must not make us copy the whole file.
		if size > c.maxRecordSize() {
			f.release()
			return nil, nil
		}
	}
	if size <= 0 || pos+int64(size) > wrote {
		f.release()
		return nil, nil
	}
	return f, f.data[pos : pos+int64(size) : pos+int64(size)]
}

func (c *commitLog) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

func (c *commitLog) setQueueOffsets(t map[tqKey]int64) {
	table := make(map[tqKey]*int64, len(t))
	lmqs := 0
	for k, v := range t {
		table[k] = &v
		if k.qid == LMQQueueID && compat.IsLMQ(k.topic) {
			lmqs++
		}
	}
	c.mu.Lock()
	c.table = table
	c.lmqQueues = lmqs
	c.mu.Unlock()
}

func (c *commitLog) removeTopic(topic string) {
	c.mu.Lock()
	for k := range c.table {
		if k.topic == topic {
			c.forget(k)
		}
	}
	c.mu.Unlock()
}

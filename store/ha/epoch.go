package ha

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"rmqd/compat"
)

// EpochFileName is the epoch checkpoint under the store root
// (MessageStoreConfig.getStorePathEpochFile's default).
const EpochFileName = "epochFileCheckpoint"

// EpochFilePath is where Java keeps the epoch file of a store rooted at root.
func EpochFilePath(root string) string { return filepath.Join(root, EpochFileName) }

// EpochEntry is one leader term: the commitlog bytes from StartOffset up to
// EndOffset (exclusive) were written by the master of Epoch. The last entry's
// EndOffset is math.MaxInt64 (open) unless set from the store's max offset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
	EndOffset   int64
}

// EpochCache is Java's EpochFileCache: the epoch entries in epoch order, kept
// in a CheckpointFile text file ("count\ncrc32\nepoch-start\n..."). Every
// change rewrites the file crash-safely (tmp, fsync, .bak, rename).
type EpochCache struct {
	path string // "" keeps the cache in memory only
	mu   sync.RWMutex
	es   []EpochEntry
}

// ErrEpochOrder means an appended entry is not after the last one.
var ErrEpochOrder = errors.New("ha: epoch entry not after the last one")

// OpenEpochCache reads path (falling back to path.bak as Java does); a missing
// file is an empty cache.
func OpenEpochCache(path string) (*EpochCache, error) {
	c := &EpochCache{path: path}
	es, err := readEpochFile(path)
	if err != nil || es == nil {
		bes, berr := readEpochFile(path + ".bak")
		if berr != nil && err != nil {
			return nil, fmt.Errorf("epoch file %s: %w", path, err)
		}
		if berr == nil && bes != nil {
			es = bes
		}
	}
	c.setEntries(es)
	return c, nil
}

// NewEpochCache is an in-memory cache of entries (sorted by epoch).
func NewEpochCache(entries []EpochEntry) *EpochCache {
	c := &EpochCache{}
	c.setEntries(entries)
	return c
}

func (c *EpochCache) setEntries(es []EpochEntry) {
	c.es = make([]EpochEntry, 0, len(es))
	for _, e := range es {
		c.es = append(c.es, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: math.MaxInt64})
	}
	sort.Slice(c.es, func(i, j int) bool { return c.es[i].Epoch < c.es[j].Epoch })
	for i := 0; i+1 < len(c.es); i++ {
		c.es[i].EndOffset = c.es[i+1].StartOffset
	}
}

// readEpochFile parses a CheckpointFile; nil entries (no error) means the file
// is missing. Java's reader checks the count and, unless 0, the crc32.
func readEpochFile(path string) ([]EpochEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseEpochFile(b)
}

// ParseEpochFile decodes the CheckpointFile text of EpochEntrySerializer.
func ParseEpochFile(b []byte) ([]EpochEntry, error) {
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) < 2 {
		return nil, errors.New("epoch file: no header")
	}
	want, err := strconv.ParseInt(strings.TrimSpace(lines[0]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("epoch file count: %w", err)
	}
	crc, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("epoch file crc: %w", err)
	}
	var body bytes.Buffer
	es := []EpochEntry{}
	for _, l := range lines[2:] {
		body.WriteString(l)
		body.WriteByte('\n')
		parts := strings.Split(l, "-")
		if len(parts) != 2 {
			continue // Java's fromLine skips what it cannot split in two
		}
		ep, err1 := strconv.ParseInt(parts[0], 10, 32)
		so, err2 := strconv.ParseInt(parts[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("epoch file line %q: bad number", l)
		}
		es = append(es, EpochEntry{Epoch: int32(ep), StartOffset: so})
	}
	if int64(len(es)) != want {
		return nil, fmt.Errorf("epoch file: expect %d entries, found %d", want, len(es))
	}
	if crc != 0 && int64(javaCRC32(body.Bytes())) != crc {
		return nil, errors.New("epoch file: crc32 mismatch")
	}
	return es, nil
}

// javaCRC32 is UtilAll.crc32: CRC-32 with the sign bit cleared.
func javaCRC32(b []byte) int32 { return int32(crc32.ChecksumIEEE(b) & 0x7FFFFFFF) }

// FormatEpochFile is the CheckpointFile text of es, as Java writes it on Linux.
func FormatEpochFile(es []EpochEntry) []byte {
	var body bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&body, "%d-%d\n", e.Epoch, e.StartOffset)
	}
	out := fmt.Appendf(nil, "%d\n%d\n", len(es), javaCRC32(body.Bytes()))
	return append(out, body.Bytes()...)
}

// flush persists the entries; callers hold mu.
func (c *EpochCache) flush() error {
	if c.path == "" {
		return nil
	}
	if err := compat.WriteConfigFile(c.path, FormatEpochFile(c.es)); err != nil {
		return fmt.Errorf("epoch file: %w", err)
	}
	if len(c.es) == 0 {
		// Java writes nothing for no entries, so its file keeps the old ones
		// and they come back at restart; rmqd writes an empty file and drops
		// the .bak a reader would fall back to.
		if err := os.Remove(c.path + ".bak"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("epoch file: %w", err)
		}
	}
	return nil
}

// Entries copies all entries in epoch order.
func (c *EpochCache) Entries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.es...)
}

// Len is the number of entries.
func (c *EpochCache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.es)
}

// FirstEntry is the oldest entry.
func (c *EpochCache) FirstEntry() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.es) == 0 {
		return EpochEntry{}, false
	}
	return c.es[0], true
}

// LastEntry is the newest entry.
func (c *EpochCache) LastEntry() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.es) == 0 {
		return EpochEntry{}, false
	}
	return c.es[len(c.es)-1], true
}

// LastEpoch is the newest epoch, -1 when empty.
func (c *EpochCache) LastEpoch() int32 {
	if e, ok := c.LastEntry(); ok {
		return e.Epoch
	}
	return -1
}

// Entry finds epoch.
func (c *EpochCache) Entry(epoch int32) (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.es {
		if e.Epoch == epoch {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// NextEntry is the first entry with a bigger epoch.
func (c *EpochCache) NextEntry(epoch int32) (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.es {
		if e.Epoch > epoch {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// FindByOffset is the entry whose [start, end) holds offset.
func (c *EpochCache) FindByOffset(offset int64) (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.es {
		if e.StartOffset <= offset && e.EndOffset > offset {
			return e, true
		}
	}
	return EpochEntry{}, false
}

// Append adds a newer term; both its epoch and start must exceed the last's.
func (c *EpochCache) Append(e EpochEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.es); n > 0 {
		last := &c.es[n-1]
		if last.Epoch >= e.Epoch || last.StartOffset >= e.StartOffset {
			return fmt.Errorf("append epoch %d at %d after epoch %d at %d: %w", e.Epoch, e.StartOffset, last.Epoch,
				last.StartOffset, ErrEpochOrder)
		}
		last.EndOffset = e.StartOffset
	}
	c.es = append(c.es, EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: math.MaxInt64})
	return c.flush()
}

// SetLastEndOffset closes the last term at end (the store's max offset).
func (c *EpochCache) SetLastEndOffset(end int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.es); n > 0 && c.es[n-1].StartOffset <= end {
		c.es[n-1].EndOffset = end
	}
}

// FindConsistentPoint is where this log and other's last agree: the newest
// epoch both hold with the same start, up to the lesser end; -1 if none.
func (c *EpochCache) FindConsistentPoint(other *EpochCache) int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := len(c.es) - 1; i >= 0; i-- {
		mine := c.es[i]
		theirs, ok := other.Entry(mine.Epoch)
		if ok && theirs.StartOffset == mine.StartOffset {
			return min(mine.EndOffset, theirs.EndOffset)
		}
	}
	return -1
}

// TruncateSuffixByEpoch drops the entries of epoch and later.
func (c *EpochCache) TruncateSuffixByEpoch(epoch int32) error {
	return c.truncateSuffix(func(e EpochEntry) bool { return e.Epoch >= epoch })
}

// TruncateSuffixByOffset drops the entries starting at or after offset.
func (c *EpochCache) TruncateSuffixByOffset(offset int64) error {
	return c.truncateSuffix(func(e EpochEntry) bool { return e.StartOffset >= offset })
}

func (c *EpochCache) truncateSuffix(drop func(EpochEntry) bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.es[:0]
	for _, e := range c.es {
		if !drop(e) {
			keep = append(keep, e)
		}
	}
	c.es = keep
	if n := len(c.es); n > 0 {
		c.es[n-1].EndOffset = math.MaxInt64
	}
	return c.flush()
}

// TruncatePrefixByOffset drops the entries that end at or before offset (the
// commitlog files holding them were deleted).
func (c *EpochCache) TruncatePrefixByOffset(offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.es[:0]
	for _, e := range c.es {
		if e.EndOffset > offset {
			keep = append(keep, e)
		}
	}
	c.es = keep
	return c.flush()
}

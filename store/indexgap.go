package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// indexGapName is the file in the store root that holds the index's missFrom
// across a restart: without it, records dispatched while no index file could
// be made (a full disk) and not indexed before a shutdown would never be.
// Java has no such gap (it stops writes instead) and ignores the file; it is
// outside index/, which Java's IndexService.load takes wholly for index files.
const indexGapName = "indexgap"

func (ix *indexService) gapPath() string {
	return filepath.Join(filepath.Dir(ix.dir), indexGapName)
}

// setMiss sets missFrom (-1: no gap) and keeps the file in step. A file that
// cannot be written (the disk is full, after all) only loses the gap at a
// restart, as before the file existed; it is logged.
func (ix *indexService) setMiss(off int64) {
	was := ix.missFrom
	ix.missFrom = off
	if off == was {
		return
	}
	if err := ix.saveGap(off); err != nil {
		ix.s.log.Warn("index gap not saved: a restart before it is indexed leaves its keys out", "offset", off, "err", err)
	}
}

// saveGap writes off through a renamed temporary file, or removes the file
// for -1.
func (ix *indexService) saveGap(off int64) error {
	p := ix.gapPath()
	if off < 0 {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove index gap: %w", err)
		}
		return nil
	}
	if err := writeFileSynced(p, []byte(strconv.FormatInt(off, 10)+"\n")); err != nil {
		return fmt.Errorf("index gap: %w", err)
	}
	return nil
}

// loadGap restores missFrom from the file, after the index files are loaded.
// A file that does not parse (damaged) stands for a gap from the last record
// the index holds, or from the start without index files.
func (ix *indexService) loadGap() {
	_ = os.Remove(ix.gapPath() + ".tmp")
	b, err := os.ReadFile(ix.gapPath())
	if err != nil {
		if !os.IsNotExist(err) {
			ix.s.log.Warn("read index gap", "err", err)
		}
		return
	}
	off, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || off < 0 {
		off = 0
		if n := len(ix.files); n > 0 {
			off = ix.files[n-1].endPhyOffset()
		}
		ix.s.log.Warn("index gap file damaged: re-indexing from the index's end", "offset", off, "content", fmt.Sprintf("%.40q", b))
	}
	ix.missFrom = off
}

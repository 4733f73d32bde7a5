package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"rmqd/codec"
)

// DataVersion is Java's DataVersion: bumped on every config change so name
// servers know when a broker's topic table moved.
type DataVersion = codec.DataVersion

// Version is a DataVersion safe for concurrent bumps.
type Version struct {
	counter   atomic.Int64
	state     atomic.Int64
	timestamp atomic.Int64
}

// Next bumps the version.
func (d *Version) Next() {
	d.timestamp.Store(time.Now().UnixMilli())
	d.counter.Add(1)
}

// Get is the version now.
func (d *Version) Get() DataVersion {
	return DataVersion{Counter: d.counter.Load(), StateVersion: d.state.Load(), Timestamp: d.timestamp.Load()}
}

// Set takes v (a master's version, a loaded file's).
func (d *Version) Set(v DataVersion) {
	d.counter.Store(v.Counter)
	d.state.Store(v.StateVersion)
	d.timestamp.Store(v.Timestamp)
}

// LoadConfigFile reads path, falling back to path.bak when the file is missing,
// empty or fails decode, as Java's ConfigManager.load does. Neither existing is
// not an error: decode is simply not called.
func LoadConfigFile(path string, decode func([]byte) error) error {
	var firstErr error
	for _, p := range []string{path, path + ".bak"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("read %s: %w", p, err)
			}
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		// Java's fastjson writes bare integer map keys ({0:12}).
		strict, err := codec.StrictJSON(data)
		if err == nil {
			err = decode(strict)
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("parse %s: %w", p, err)
			}
			continue
		}
		return nil
	}
	return firstErr
}

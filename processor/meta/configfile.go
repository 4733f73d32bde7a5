package meta

import (
	"os"
	"sync/atomic"
	"time"

	"rmqd/codec"
	"rmqd/compat"
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

// LoadConfigFile is compat.LoadConfigFile (path, else path.bak, as Java's
// ConfigManager.load) for fastjson files: bare integer map keys ({0:12}) are
// made strict JSON before decode sees them.
func LoadConfigFile(path string, decode func([]byte) error) error {
	return compat.LoadConfigFile(path, func(data []byte) error {
		strict, err := codec.StrictJSON(data)
		if err != nil {
			return err
		}
		return decode(strict)
	})
}

// configFileExists says whether path or its .bak (which LoadConfigFile falls
// back to) is there.
func configFileExists(path string) bool {
	for _, p := range []string{path, path + ".bak"} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

package compat

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteConfigFile is Java's MixAll.string2File, what its ConfigManager and the
// name server's KVConfigManager persist with: it replaces path with data the way
// a crash cannot lose both copies, and path is never missing:
// write path.tmp and fsync it, make path.bak the old file (a hard link, or a
// copy where links fail), rename the tmp file over path and fsync the
// directory. The loader falls back to .bak.
func WriteConfigFile(path string, data []byte) error { return writeConfigFile(path, data, nil) }

// writeConfigFile is WriteConfigFile; crash (tests) is called after each step
// ("tmp", "backup", "install") and ends the write there when it says so, as a
// kill -9 would.
func writeConfigFile(path string, data []byte, crash func(step string) bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("config dir %s: %w", dir, err)
	}
	tmp := path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if crash != nil && crash("tmp") {
		return nil
	}
	// Moving path to .bak, as Java does, left no path until the rename below:
	// readers that do not fall back to .bak (broker.conf at start, the name
	// server's config) found none after a crash there.
	if err := backUp(path); err != nil {
		return err
	}
	if crash != nil && crash("backup") {
		return nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install %s: %w", path, err)
	}
	if crash != nil && crash("install") {
		return nil
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// writeSynced writes data to name and fsyncs it.
func writeSynced(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// backUp makes path.bak hold path's current content while path stays in place.
func backUp(path string) error {
	bak := path + ".bak"
	if err := os.Remove(bak); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("back up %s: %w", path, err)
	}
	err := os.Link(path, bak)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	old, rerr := os.ReadFile(path) // a file system without hard links
	if errors.Is(rerr, fs.ErrNotExist) {
		return nil
	}
	if rerr != nil {
		return fmt.Errorf("back up %s: %w", path, rerr)
	}
	return writeSynced(bak, old)
}

// LoadConfigFile reads path, falling back to path.bak when the file is missing,
// empty or fails decode, as Java's ConfigManager.load does. Neither existing is
// not an error: decode is simply not called. decode must leave its table as it
// was when it fails, since the .bak is decoded next.
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
		if err := decode(data); err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("parse %s: %w", p, err)
			}
			continue
		}
		return nil
	}
	return firstErr
}

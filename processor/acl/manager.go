// Package acl enforces ACL 1.0 on the broker: an RPC hook that checks every
// request's signature and permissions against plain_acl.yml (hot-reloaded), and
// the ACL admin codes mqadmin sends. The Java rules live in compat/acl.
package acl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	jacl "rmqd/compat/acl"
)

// FileName is the default ACL file name (rocketmq.acl.plain.file's default,
// conf/plain_acl.yml).
const FileName = "plain_acl.yml"

// DefaultPollInterval is how often the file is looked at, as Java's watcher.
const DefaultPollInterval = 500 * time.Millisecond

// ResolvePath picks the ACL file: the configured path (relative ones under
// $ROCKETMQ_HOME, as Java's rocketmq.acl.plain.file), else
// $ROCKETMQ_HOME/conf/plain_acl.yml, else <storePathRootDir>/../conf/plain_acl.yml.
func ResolvePath(configured, rocketmqHome, storeRoot string) string {
	if configured != "" {
		if filepath.IsAbs(configured) || rocketmqHome == "" {
			return filepath.Clean(configured)
		}
		return filepath.Join(rocketmqHome, configured)
	}
	if rocketmqHome != "" {
		return filepath.Join(rocketmqHome, "conf", FileName)
	}
	return filepath.Join(filepath.Dir(filepath.Clean(storeRoot)), "conf", FileName)
}

// Manager holds the configuration in force and the file behind it.
type Manager struct {
	path string
	log  *slog.Logger
	poll time.Duration
	now  func() time.Time

	cur atomic.Pointer[jacl.Checker]
	// scratch buffers for the signed header values, and resource lists.
	scratch   sync.Pool
	resources sync.Pool

	mu   sync.Mutex // serializes admin writes and reloads
	seen fileStamp  // the file state cur was built from
}

type fileStamp struct {
	size    int64
	modTime time.Time
	content []byte
}

// NewManager loads path. A missing file is created empty, as Java does (then
// every request without a white address is refused); a file that does not
// compile is an error.
func NewManager(path string, logger *slog.Logger) (*Manager, error) {
	if logger == nil {
		logger = slog.Default()
	}
	m := &Manager{path: path, log: logger.With("component", "acl"), poll: DefaultPollInterval, now: time.Now}
	m.scratch.New = func() any { b := make([]byte, 0, 512); return &b }
	m.resources.New = func() any { r := make([]jacl.Resource, 0, 4); return &r }
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("acl: %w", err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return nil, fmt.Errorf("acl: create %s: %w", path, err)
		}
	}
	if _, err := m.reload(true); err != nil {
		return nil, err
	}
	return m, nil
}

// Path is the ACL file in use.
func (m *Manager) Path() string { return m.path }

// Checker is the configuration in force.
func (m *Manager) Checker() *jacl.Checker { return m.cur.Load() }

// reload reads the file when it changed since the last load (or always with
// force) and installs it. It reports whether a new configuration is in force.
func (m *Manager) reload(force bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, err := os.Stat(m.path)
	if err != nil {
		return false, fmt.Errorf("acl: %w", err)
	}
	if !force && st.Size() == m.seen.size && st.ModTime().Equal(m.seen.modTime) {
		return false, nil
	}
	b, err := os.ReadFile(m.path)
	if err != nil {
		return false, fmt.Errorf("acl: %w", err)
	}
	stamp := fileStamp{size: st.Size(), modTime: st.ModTime(), content: b}
	if !force && bytes.Equal(b, m.seen.content) {
		m.seen = stamp
		return false, nil
	}
	f, err := jacl.ParseFile(b)
	if err != nil {
		return false, fmt.Errorf("acl: %s: %w", m.path, err)
	}
	c, err := jacl.NewChecker(f)
	if err != nil {
		return false, fmt.Errorf("acl: %s: %w", m.path, err)
	}
	m.cur.Store(c)
	m.seen = stamp
	m.log.Info("acl: configuration loaded", "file", m.path, "accounts", len(f.Accounts),
		"globalWhiteRemoteAddresses", len(f.GlobalWhiteRemoteAddresses), "counter", f.Version().Counter)
	return true, nil
}

// Run polls the file until ctx ends, installing every edit that compiles; a
// broken edit is logged and the configuration in force stays.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.poll)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := m.reload(false); err != nil {
			if err.Error() != lastErr {
				m.log.Error("acl: file change not applied; the previous configuration stays in force", "err", err)
				lastErr = err.Error()
			}
			continue
		}
		lastErr = ""
	}
}

// edit applies change to the file under the lock, checks that the result
// compiles, writes it crash-safely and installs it.
func (m *Manager) edit(change func(f *jacl.File) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := os.ReadFile(m.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("acl: %w", err)
	}
	f, err := jacl.ParseFile(b)
	if err != nil {
		return err
	}
	if err := change(f); err != nil {
		return err
	}
	f.NextVersion(m.now().UnixMilli())
	c, err := jacl.NewChecker(f)
	if err != nil {
		return err
	}
	out, err := f.Marshal()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(m.path, out); err != nil {
		return fmt.Errorf("acl: write %s: %w", m.path, err)
	}
	m.cur.Store(c)
	if st, err := os.Stat(m.path); err == nil {
		m.seen = fileStamp{size: st.Size(), modTime: st.ModTime(), content: out}
	}
	return nil
}

// File returns the file as it is on disk now.
func (m *Manager) File() (*jacl.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := os.ReadFile(m.path)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	return jacl.ParseFile(b)
}

// writeFileAtomic writes tmp -> fsync -> rename -> fsync(dir), so a crash
// leaves the old file or the new one, never a torn one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

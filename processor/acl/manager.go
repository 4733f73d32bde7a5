// Package acl enforces ACL 1.0 on the broker: an RPC hook that checks every
// request's signature and permissions against plain_acl.yml (hot-reloaded), and
// the ACL admin codes mqadmin sends. The Java rules live in compat/acl.
package acl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// Manager holds the configuration in force and the files behind it: every
// .yml/.yaml under the acl directory beside the main file (Java's conf/acl),
// then the main file (conf/plain_acl.yml), in that order.
type Manager struct {
	path string // the main file: new accounts and global white addresses go here
	dir  string // more files, recursively
	log  *slog.Logger
	poll time.Duration
	now  func() time.Time

	cur atomic.Pointer[jacl.Checker]
	// scratch buffers for the signed header values, and resource lists.
	scratch   sync.Pool
	resources sync.Pool

	mu      sync.Mutex // serializes admin writes and reloads
	loaded  []aclFile  // the files cur was built from
	pending []aclFile  // a change seen by the last poll, applied once it holds still

	refusals *RefusalLog // log lines written by Run
}

// aclFile is one file as last read.
type aclFile struct {
	path    string
	size    int64
	modTime time.Time
	data    *jacl.File
}

// NewManager loads path and the files of the acl directory beside it. A
// missing main file is created empty, as Java does (then every request without
// a white address is refused); a file that does not compile is an error.
func NewManager(path string, logger *slog.Logger) (*Manager, error) {
	if logger == nil {
		logger = slog.Default()
	}
	path = filepath.Clean(path)
	m := &Manager{path: path, dir: filepath.Join(filepath.Dir(path), "acl"), log: logger.With("component", "acl"),
		poll: DefaultPollInterval, now: time.Now}
	m.refusals = NewRefusalLog(m.log, "acl: request refused", "accessKey")
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

// Path is the main ACL file.
func (m *Manager) Path() string { return m.path }

// Checker is the configuration in force.
func (m *Manager) Checker() *jacl.Checker { return m.cur.Load() }

// paths lists the ACL files: the acl directory's, sorted, then the main file.
func (m *Manager) paths() []string { return filePaths(m.path, m.dir) }

// filePaths lists the ACL files of main and its acl directory dir.
func filePaths(main, dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a missing or unreadable directory adds nothing
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) && p != main {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return append(out, main)
}

// stat returns the files with their size and modification time (data nil).
func (m *Manager) stat() ([]aclFile, error) {
	var out []aclFile
	for _, p := range m.paths() {
		st, err := os.Stat(p)
		if err != nil {
			if p != m.path && errors.Is(err, fs.ErrNotExist) {
				continue // removed between the walk and now
			}
			return nil, fmt.Errorf("acl: %w", err)
		}
		out = append(out, aclFile{path: p, size: st.Size(), modTime: st.ModTime()})
	}
	return out, nil
}

func sameFiles(a, b []aclFile) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].path != b[i].path || a[i].size != b[i].size || !a[i].modTime.Equal(b[i].modTime) {
			return false
		}
	}
	return true
}

// readAll reads and parses every file of files.
func readAll(files []aclFile) error {
	for i := range files {
		b, err := os.ReadFile(files[i].path)
		if err != nil {
			return fmt.Errorf("acl: %w", err)
		}
		if files[i].data, err = jacl.ParseFile(b); err != nil {
			return fmt.Errorf("acl: %s: %w", files[i].path, err)
		}
	}
	return nil
}

func compile(files []aclFile) (*jacl.Checker, error) {
	data := make([]*jacl.File, len(files))
	for i := range files {
		data[i] = files[i].data
	}
	c, err := jacl.NewChecker(data...)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	return c, nil
}

// reload reads the files when any changed (or appeared, or went) since the
// last load and the change held still for one poll, or always with force, and
// installs them. It reports whether a new configuration is in force. Waiting
// one poll keeps a file caught half-written (truncated by an editor or by
// os.WriteFile) from being taken for the new configuration.
func (m *Manager) reload(force bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	files, err := m.stat()
	if err != nil {
		return false, err
	}
	if !force {
		if sameFiles(files, m.loaded) {
			m.pending = nil
			return false, nil
		}
		if !sameFiles(files, m.pending) {
			m.pending = files
			return false, nil
		}
	}
	m.pending = nil
	if err := readAll(files); err != nil {
		return false, err
	}
	c, err := compile(files)
	if err != nil {
		return false, err
	}
	m.cur.Store(c)
	m.loaded = files
	for _, f := range files {
		m.log.Info("acl: configuration loaded", "file", f.path, "accounts", len(f.data.Accounts),
			"globalWhiteRemoteAddresses", len(f.data.GlobalWhiteRemoteAddresses), "counter", f.data.Version().Counter)
	}
	return true, nil
}

// Run polls the files until ctx ends, installing every edit that compiles (a
// broken edit is logged and the configuration in force stays), and writes the
// refusals' log lines.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.poll)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			m.refusals.Flush()
			return
		case r := <-m.refusals.Queued():
			m.refusals.Write(r)
			continue
		case <-t.C:
		}
		m.refusals.Flush()
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

// edit reads the files afresh under the lock, lets change pick one (by index)
// and modify it, checks that the whole compiles, writes that file
// crash-safely and installs the result.
func (m *Manager) edit(change func(files []aclFile) (int, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	files, err := m.stat()
	if err != nil {
		return err
	}
	if err := readAll(files); err != nil {
		return err
	}
	i, err := change(files)
	if err != nil {
		return err
	}
	f := files[i].data
	f.NextVersion(m.now().UnixMilli())
	c, err := compile(files)
	if err != nil {
		return err
	}
	out, err := f.Marshal()
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(files[i].path, out); err != nil {
		return fmt.Errorf("acl: write %s: %w", files[i].path, err)
	}
	if st, err := os.Stat(files[i].path); err == nil {
		files[i].size, files[i].modTime = st.Size(), st.ModTime()
	}
	m.cur.Store(c)
	m.loaded = files
	return nil
}

// Files returns the files as they are on disk now, main file last.
func (m *Manager) Files() ([]string, []*jacl.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	files, err := m.stat()
	if err != nil {
		return nil, nil, err
	}
	if err := readAll(files); err != nil {
		return nil, nil, err
	}
	paths := make([]string, len(files))
	data := make([]*jacl.File, len(files))
	for i := range files {
		paths[i], data[i] = files[i].path, files[i].data
	}
	return paths, data, nil
}

// WriteFileAtomic (also used by processor/auth) writes tmp -> fsync -> rename -> fsync(dir), so a crash
// leaves the old file or the new one, never a torn one.
func WriteFileAtomic(path string, data []byte) error { return WriteFileAtomicPerm(path, data, 0o644) }

// WriteFileAtomicPerm is WriteFileAtomic with the file's permission bits
// (0o600 for files holding secrets, set before the file becomes visible).
func WriteFileAtomicPerm(path string, data []byte, perm os.FileMode) error {
	// Write where a symlink points (as Java's PrintWriter does), not over it.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
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
	if err := tmp.Chmod(perm); err != nil {
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

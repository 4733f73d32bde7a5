package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
)

// logOptions are the -log-* flags.
type logOptions struct {
	format  string // text or json
	file    string // "" keeps the standard stream
	maxSize int    // MiB before the file is rotated; 0 never rotates
	keep    int    // rotated files kept: PATH.1 (newest) .. PATH.keep
}

func defaultLogOptions() logOptions { return logOptions{format: "text", maxSize: 100, keep: 5} }

func (o logOptions) validate() error {
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("-log-format %q: want text or json", o.format)
	}
	if o.maxSize < 0 || o.keep < 0 {
		return errors.New("-log-max-size and -log-keep must not be negative")
	}
	return nil
}

// newLogger builds the process logger on std, or on a rotating file when
// o.file is set; the closer flushes nothing (writes are unbuffered) but
// releases the file.
func newLogger(o logOptions, std io.Writer) (*slog.Logger, io.Closer, error) {
	w, c := std, io.Closer(nopCloser{})
	if o.file != "" {
		f, err := openRotatingFile(o.file, int64(o.maxSize)<<20, o.keep)
		if err != nil {
			return nil, nil, err
		}
		w, c = f, f
	}
	hopts := &slog.HandlerOptions{Level: slog.LevelInfo}
	var h slog.Handler = slog.NewTextHandler(w, hopts)
	if o.format == "json" {
		h = slog.NewJSONHandler(w, hopts)
	}
	return slog.New(h), c, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// rotatingFile is an io.Writer appending to path that, before a write would
// take the file past max bytes, renames it to path.1 (older ones shifting to
// path.2 .. path.keep, the oldest removed) and starts a new one. slog handlers
// issue one Write per record, so a record is never split across files. A
// dozen lines do what lumberjack would; no dependency for that.
type rotatingFile struct {
	mu   sync.Mutex
	path string
	max  int64
	keep int
	f    *os.File
	size int64
}

func openRotatingFile(path string, max int64, keep int) (*rotatingFile, error) {
	r := &rotatingFile{path: path, max: max, keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *rotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	r.f, r.size = f, st.Size()
	return nil
}

func (r *rotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, os.ErrClosed
	}
	// An empty file takes any record, however long, so rotation always ends.
	if r.max > 0 && r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *rotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	r.f = nil
	// Whatever fails in the shuffle, logging goes on in a (re)opened file.
	err := r.shift()
	return errors.Join(err, r.open())
}

func (r *rotatingFile) shift() error {
	if r.keep == 0 {
		return ignoreMissing(os.Remove(r.path))
	}
	name := func(i int) string { return r.path + "." + strconv.Itoa(i) }
	if err := ignoreMissing(os.Remove(name(r.keep))); err != nil {
		return err
	}
	for i := r.keep - 1; i >= 1; i-- {
		if err := ignoreMissing(os.Rename(name(i), name(i+1))); err != nil {
			return err
		}
	}
	return ignoreMissing(os.Rename(r.path, name(1)))
}

func ignoreMissing(err error) error {
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("log file: %w", err)
}

func (r *rotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

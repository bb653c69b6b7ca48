// Package archive keeps the pages as fetched, as WARC/1.1 records in
// size-rotated gzip WARC files (docs/archive.md): the crawler writes the
// records of a check that read a new body through a Writer, the processor
// indexes them with the check, and readers (web, watchctl) read and export
// them. The files live in a Store; FS keeps them in a directory.
package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Store holds the archive's WARC files. A file is written by one Writer
// only (its name says which process), appended to until it is sealed, and
// never changed afterwards except by Remove. An S3-compatible store would
// keep an open file as a local file and upload it on Seal (README).
type Store interface {
	// Append writes p at the end of the open file name, creating it, and
	// returns the offset p starts at; p is durable when it returns.
	Append(ctx context.Context, name string, p []byte) (int64, error)
	// Seal closes the open file name for good: no more appends.
	Seal(ctx context.Context, name string) error
	// Open returns n bytes of name from off, sealed or open.
	Open(ctx context.Context, name string, off, n int64) (io.ReadCloser, error)
	// List returns every file of the store.
	List(ctx context.Context) ([]FileInfo, error)
	// Remove deletes the sealed file name.
	Remove(ctx context.Context, name string) error
}

// FileInfo describes a file of a Store.
type FileInfo struct {
	Name string
	Size int64
	// Sealed is false for a file still being written, or left open by a
	// writer that died.
	Sealed bool
	// Modified is when the file was last appended to or sealed.
	Modified time.Time
}

// openSuffix marks a file still being written, the WARC writers' custom.
const openSuffix = ".open"

// ErrNotFound is returned by Open for a file the store lacks.
var ErrNotFound = errors.New("archive file not found")

// FS is a Store in one directory of a filesystem: an open file is
// NAME.open and is renamed NAME when sealed, so that a sealed file is
// whole. Several processes (crawlers on several hosts) may share the
// directory, on a shared volume, since each writes files of its own name.
// It is safe for concurrent use.
type FS struct {
	dir string

	mu   sync.Mutex
	open map[string]*os.File
}

// NewFS returns the store of directory dir, which it creates (with its
// parents) when missing.
func NewFS(dir string) (*FS, error) {
	if dir == "" {
		return nil, errors.New("archive directory is empty: set PORTALWATCH_ARCHIVE_DIR or PORTALWATCH_DATA_DIR")
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("archive directory %s: %w (set PORTALWATCH_ARCHIVE_DIR to a directory this user may write)", dir, err)
	}
	return &FS{dir: dir, open: map[string]*os.File{}}, nil
}

// Dir is the store's directory.
func (s *FS) Dir() string { return s.dir }

func (s *FS) path(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("archive file name %q is not a plain file name", name)
	}
	return filepath.Join(s.dir, name), nil
}

// Append implements Store.
func (s *FS) Append(_ context.Context, name string, p []byte) (int64, error) {
	path, err := s.path(name)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.open[name]
	if !ok {
		if f, err = os.OpenFile(path+openSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640); err != nil {
			return 0, fmt.Errorf("open archive file: %w", err)
		}
		s.open[name] = f
	}
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("archive file %s: %w", name, err)
	}
	_, err = f.Write(p)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		// A torn tail is never referenced: the ref is only returned
		// whole. The writer moves to a new file; this one stays open
		// until a sweep seals it.
		delete(s.open, name)
		f.Close()
		return 0, fmt.Errorf("write archive file %s: %w", name, err)
	}
	return st.Size(), nil
}

// Seal implements Store. Sealing a file already sealed (by a sweep that
// found it abandoned) is no error.
func (s *FS) Seal(_ context.Context, name string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	s.mu.Lock()
	f, ok := s.open[name]
	delete(s.open, name)
	s.mu.Unlock()
	if ok {
		if err := f.Close(); err != nil {
			return fmt.Errorf("close archive file %s: %w", name, err)
		}
	}
	if err := os.Rename(path+openSuffix, path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("seal archive file %s: %w", name, err)
	}
	return syncDir(s.dir)
}

// Open implements Store.
func (s *FS) Open(_ context.Context, name string, off, n int64) (io.ReadCloser, error) {
	path, err := s.path(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.Open(path + openSuffix)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s in %s", ErrNotFound, name, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open archive file: %w", err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// List implements Store.
func (s *FS) List(_ context.Context) ([]FileInfo, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list archive directory: %w", err)
	}
	var out []FileInfo
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.Contains(name, ".warc") || strings.HasPrefix(name, ".") {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // sealed or removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list archive directory: %w", err)
		}
		sealed := !strings.HasSuffix(name, openSuffix)
		out = append(out, FileInfo{Name: strings.TrimSuffix(name, openSuffix), Size: info.Size(), Sealed: sealed, Modified: info.ModTime()})
	}
	return out, nil
}

// Remove implements Store.
func (s *FS) Remove(_ context.Context, name string) error {
	path, err := s.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove archive file: %w", err)
	}
	return nil
}

// Close closes the files still open; they stay open files (unsealed) for
// the next writer of the same name, or for a sweep to seal.
func (s *FS) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for name, f := range s.open {
		errs = append(errs, f.Close())
		delete(s.open, name)
	}
	return errors.Join(errs...)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync archive directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync archive directory: %w", err)
	}
	return nil
}

// Package corpus reads the real pages and homepage histories that tests and
// benchmarks use. They live in shared/corpus beside the repository, never in
// it (their content belongs to their publishers).
package corpus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Dir is the corpus folder: ../shared/corpus beside the repository.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "shared", "corpus")
}

// Snapshot is one version of a homepage.
type Snapshot struct {
	Name        string   // file name, "000_2022-01-28T213503Z.html"
	URL         *url.URL // the page's real URL, from its .meta.json
	ContentType string   // the Content-Type it was served with, "" if not recorded
	Body        []byte   // the bytes as fetched
}

// LoadHistory returns the snapshots of one homepage of dir/history in order.
func LoadHistory(dir, site string) ([]Snapshot, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "history", site, "*.html"))
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("history %s: %w", site, os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	snaps := make([]Snapshot, 0, len(paths))
	for _, path := range paths {
		body, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		metaJSON, err := os.ReadFile(strings.TrimSuffix(path, ".html") + ".meta.json")
		if err != nil {
			return nil, err
		}
		var meta struct {
			URL         string `json:"url"`
			ContentType string `json:"content_type"`
		}
		if err := json.Unmarshal(metaJSON, &meta); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		u, err := url.Parse(meta.URL)
		if err != nil || !u.IsAbs() {
			return nil, fmt.Errorf("%s: page URL %q is not absolute (%v)", path, meta.URL, err)
		}
		snaps = append(snaps, Snapshot{Name: filepath.Base(path), URL: u, ContentType: meta.ContentType, Body: body})
	}
	return snaps, nil
}

// History is LoadHistory for tests: when the corpus is absent it skips the
// test with a message, or fails it when CI=true.
func History(tb testing.TB, site string) []Snapshot {
	tb.Helper()
	snaps, err := LoadHistory(Dir(), site)
	need(tb, err)
	return snaps
}

// Page is one real page of dir/pages, as it was fetched.
type Page struct {
	Name string // file name without .html, "readability__aclu"
	Body []byte
	// URL and ContentType are what MANIFEST.json records of the page; both
	// are "" when it records none (as it does today).
	URL, ContentType string
}

// LoadPages returns the pages of dir/pages in file-name order.
func LoadPages(dir string) ([]Page, error) {
	pagesDir := filepath.Join(dir, "pages")
	paths, err := filepath.Glob(filepath.Join(pagesDir, "*.html"))
	if err == nil && len(paths) == 0 {
		err = fmt.Errorf("pages in %s: %w", pagesDir, os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	type manifestEntry struct {
		File        string `json:"file"`
		URL         string `json:"url"`
		ContentType string `json:"content_type"`
	}
	manifest := map[string]manifestEntry{}
	if b, err := os.ReadFile(filepath.Join(pagesDir, "MANIFEST.json")); err == nil {
		var entries []manifestEntry
		if err := json.Unmarshal(b, &entries); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(pagesDir, "MANIFEST.json"), err)
		}
		for _, e := range entries {
			manifest[e.File] = e
		}
	}
	pages := make([]Page, 0, len(paths))
	for _, path := range paths {
		body, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		file := filepath.Base(path)
		e := manifest[file]
		pages = append(pages, Page{Name: strings.TrimSuffix(file, ".html"), Body: body, URL: e.URL, ContentType: e.ContentType})
	}
	return pages, nil
}

// Pages is LoadPages for tests and benchmarks: when the corpus is absent it
// skips with a message, or fails when CI=true.
func Pages(tb testing.TB) []Page {
	tb.Helper()
	pages, err := LoadPages(Dir())
	need(tb, err)
	return pages
}

// need skips tb when err says the corpus is absent (fails it when CI=true,
// where the corpus must be present), and fails it on any other error.
func need(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, os.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%v (CI=true: the corpus must be present in %s)", err, Dir())
		}
		tb.Skipf("%v; the corpus is shared/corpus beside the repository", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

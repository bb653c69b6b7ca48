// Package corpus reads the real pages and homepage histories that tests and
// benchmarks use. They live in shared/corpus beside the repository, never in
// it (their content belongs to their publishers).
package corpus

import (
	"encoding/json"
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
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "corpus")
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
	if os.IsNotExist(err) || (err != nil && strings.Contains(err.Error(), os.ErrNotExist.Error())) {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%v (CI=true: the corpus must be present in %s)", err, Dir())
		}
		tb.Skipf("%v; the corpus is shared/corpus beside the repository", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return snaps
}

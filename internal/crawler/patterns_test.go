package crawler

import (
	"bytes"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func jobWith(patterns ...string) watch.Job {
	return watch.Job{ID: 1, BaseURL: "https://news.example/", Options: &watch.LinkOptions{Ignore: patterns}}
}

func ignoreOf(f *linkFilter) []*regexp.Regexp {
	if f == nil {
		return nil
	}
	return f.patterns.Ignore
}

func ignoreKey(patterns ...string) string {
	return patternKey(optionLists(&watch.LinkOptions{Ignore: patterns})...)
}

func TestIgnorePatternsOfOldRows(t *testing.T) {
	// Rows stored before the caps, or by hand: each bad pattern is skipped
	// with a log line and counted, the good ones apply, nothing fails.
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	c := newPatternCache(prometheus.NewRegistry())
	job := jobWith(`\w{1000}x`, `(`, `(\w{100}){10}`, `[?&]page=`)
	ignore := ignoreOf(c.compile(log, job))
	if len(ignore) != 1 || ignore[0].String() != `[?&]page=` {
		t.Fatalf("compiled %v, want only the good pattern", ignore)
	}
	if got := counterValue(t, c.skipped); got != 3 {
		t.Errorf("skipped metric = %v, want 3", got)
	}
	if n := strings.Count(logs.String(), "ignore pattern skipped"); n != 3 || !strings.Contains(logs.String(), "repetitions") {
		t.Errorf("logged %d skips, want 3 with reasons:\n%s", n, logs.String())
	}
	links := []watch.Link{{URL: "https://news.example/a"}, {URL: "https://news.example/list?page=2"}, {URL: "https://news.example/" + strings.Repeat("w", 1000) + "x"}}
	if kept := filter(links, job, watch.Patterns{Ignore: ignore}); len(kept) != 2 {
		t.Errorf("filter kept %v, want all but the page=2 link", kept)
	}

	many := make([]string, watch.MaxIgnorePatterns+5)
	for i := range many {
		many[i] = "p" + strconv.Itoa(i)
	}
	if got := ignoreOf(c.compile(log, jobWith(many...))); len(got) != watch.MaxIgnorePatterns {
		t.Errorf("%d patterns compiled to %d, want the first %d", len(many), len(got), watch.MaxIgnorePatterns)
	}
	if got := counterValue(t, c.skipped); got != 8 {
		t.Errorf("skipped metric = %v, want 3 + 5", got)
	}
}

func TestPatternCacheCompilesOnceAndIsBounded(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	c := newPatternCache(prometheus.NewRegistry())
	first := ignoreOf(c.compile(log, jobWith(`a`, `b`)))
	again := ignoreOf(c.compile(log, watch.Job{ID: 2, Options: &watch.LinkOptions{Ignore: []string{`a`, `b`}}}))
	if len(first) != 2 || &first[0] != &again[0] {
		t.Fatalf("the same list compiled twice")
	}
	// Lists that join to the same text are different lists.
	if got := ignoreOf(c.compile(log, jobWith(`a`, `b`, ``))); &got[0] == &first[0] {
		t.Fatalf("a different list shared an entry")
	}
	if got := ignoreOf(c.compile(log, jobWith("1:a"))); len(got) != 1 || got[0].String() != "1:a" {
		t.Fatalf("a list whose key could collide: %v", got)
	}
	if c.compile(log, watch.Job{ID: 3}) != nil || c.compile(log, jobWith()) != nil {
		t.Fatalf("a job without patterns got some")
	}
	for i := range 2 * patternCacheSize {
		c.compile(log, jobWith("p"+strconv.Itoa(i)))
	}
	if len(c.entries) != patternCacheSize || c.order.Len() != patternCacheSize {
		t.Fatalf("cache holds %d entries (%d in order), want at most %d", len(c.entries), c.order.Len(), patternCacheSize)
	}
	// The most recent lists are kept, the oldest went.
	if _, ok := c.entries[ignoreKey("p"+strconv.Itoa(2*patternCacheSize-1))]; !ok {
		t.Error("the newest list was evicted")
	}
	if _, ok := c.entries[ignoreKey(`a`, `b`)]; ok {
		t.Error("the oldest list is still cached")
	}
}

// BenchmarkIgnorePatterns is the pattern work of one check of a page with
// five ignore patterns, less the matching: compiled at every check, as
// before the cache, compiled and checked against the caps, as a cache miss
// does, or taken from the cache.
func BenchmarkIgnorePatterns(b *testing.B) {
	job := jobWith(`\?page=\d+`, `[?&]utm_[a-z]+=`, `^https?://pubads\.g\.doubleclick\.net/`, `[?&]source=hbsad(&|$)`,
		`^https?://(www\.)?news\.example/(tag|category|author)/[^/]+/?$`)
	b.Run("recompile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, p := range job.Options.Ignore {
				if _, err := regexp.Compile(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("checked", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, errs := watch.CompileIgnore(job.Options.Ignore); errs != nil {
				b.Fatal(errs)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := newPatternCache(prometheus.NewRegistry())
		log := slog.New(slog.DiscardHandler)
		b.ReportAllocs()
		for b.Loop() {
			if len(c.compile(log, job).patterns.Ignore) != len(job.Options.Ignore) {
				b.Fatal("a pattern was skipped")
			}
		}
	})
}

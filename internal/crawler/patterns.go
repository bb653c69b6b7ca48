package crawler

import (
	"container/list"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// patternCacheSize bounds the pattern lists kept compiled. A list takes at
// most watch.MaxIgnorePatterns programs of watch.MaxPatternInsts
// instructions, a few hundred KiB at worst, and most pages have none.
const patternCacheSize = 1024

// patternCache keeps the compiled ignore patterns of recent jobs, keyed by
// the pattern list, so that a page's patterns are compiled once and not at
// every check. It is safe for concurrent use; *regexp.Regexp is too.
//
// It compiles with watch.CompileIgnore, under the caps registration
// applies: a row stored before the caps, or written by hand, may hold a
// pattern that breaks them, or does not compile at all. Such a pattern is
// skipped - the page's other patterns still apply - with a log line and
// the portalwatch_crawler_ignore_patterns_skipped_total metric, once per
// compilation of the list.
type patternCache struct {
	skipped prometheus.Counter

	mu      sync.Mutex
	entries map[string]*list.Element // of *patternEntry, front most recently used
	order   *list.List
}

type patternEntry struct {
	key string
	res []*regexp.Regexp
}

func newPatternCache(reg prometheus.Registerer) *patternCache {
	c := &patternCache{
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_crawler_ignore_patterns_skipped_total",
			Help: "Ignore patterns skipped because they break the caps or do not compile, counted at each compilation of a page's list.",
		}),
		entries: map[string]*list.Element{},
		order:   list.New(),
	}
	reg.MustRegister(c.skipped)
	return c
}

// compile returns the compiled ignore patterns of job, the bad ones left
// out; nil when it has none. log says which page a skipped pattern belongs
// to.
func (c *patternCache) compile(log *slog.Logger, job watch.Job) []*regexp.Regexp {
	if job.Options == nil || len(job.Options.Ignore) == 0 {
		return nil
	}
	key := patternKey(job.Options.Ignore)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*patternEntry).res
	}
	c.mu.Unlock()

	// Compiled outside the lock: two workers may compile one list at once,
	// which costs less than making every other job wait for a compilation.
	res, errs := watch.CompileIgnore(job.Options.Ignore)
	for _, err := range errs {
		log.Warn("ignore pattern skipped", "err", err)
	}
	c.skipped.Add(float64(len(job.Options.Ignore) - len(res)))

	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = c.order.PushFront(&patternEntry{key: key, res: res})
		if c.order.Len() > patternCacheSize {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.entries, oldest.Value.(*patternEntry).key)
		}
	}
	return res
}

// patternKey encodes a pattern list so that two lists share a key only when
// they are equal: each pattern is prefixed with its length, since a pattern
// may contain any separator.
func patternKey(patterns []string) string {
	var b strings.Builder
	for _, p := range patterns {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

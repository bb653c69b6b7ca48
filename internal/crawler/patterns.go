package crawler

import (
	"container/list"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// patternCacheSize bounds the pattern lists kept compiled. A list takes at
// most watch.MaxIgnorePatterns programs of watch.MaxPatternInsts
// instructions, a few hundred KiB at worst, and most pages have none.
const patternCacheSize = 1024

// patternCache keeps the compiled link options of recent jobs - ignore
// patterns, keyword rules and region selectors - keyed by those lists, so
// that a page's options are compiled once and not at every check. It is
// safe for concurrent use; what it returns is too.
//
// It compiles with watch.CompilePatterns and domwalk.CompileRegions, under
// the caps registration applies: a row stored before the caps, or written
// by hand, may hold a pattern that breaks them, or does not compile at all.
// Such a pattern is skipped - the page's other patterns still apply - with
// a log line and the portalwatch_crawler_ignore_patterns_skipped_total
// metric, once per compilation of the lists. A bad region selector is not
// skipped: leaving out a Within or Exclude selector would widen the page
// and report links as new that are not, so the page's checks fail with the
// reason instead (linkFilter.regionsErr).
type patternCache struct {
	skipped prometheus.Counter

	mu      sync.Mutex
	entries map[string]*list.Element // of *patternEntry, front most recently used
	order   *list.List
}

type patternEntry struct {
	key    string
	filter *linkFilter
}

// linkFilter is a page's compiled link options.
type linkFilter struct {
	patterns watch.Patterns
	// regions are the page's Within and Exclude selectors, nil for none.
	regions *domwalk.Regions
	// regionsErr says why the page's selectors do not compile; its checks
	// fail with it.
	regionsErr error
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

// optionLists are the lists of a page's options that patternCache
// compiles, in a fixed order.
func optionLists(o *watch.LinkOptions) [][]string {
	return [][]string{o.Ignore, o.IncludeText, o.ExcludeText, o.IncludeURL, o.ExcludeURL, o.Within, o.Exclude}
}

// compile returns the compiled link options of job, the bad patterns left
// out; nil when it has none to compile. log says which page a skipped
// pattern belongs to.
func (c *patternCache) compile(log *slog.Logger, job watch.Job) *linkFilter {
	if job.Options == nil {
		return nil
	}
	lists := optionLists(job.Options)
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total == 0 {
		return nil
	}
	key := patternKey(lists...)
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*patternEntry).filter
	}
	c.mu.Unlock()

	// Compiled outside the lock: two workers may compile one list at once,
	// which costs less than making every other job wait for a compilation.
	o := job.Options
	f := &linkFilter{}
	var errs []error
	f.patterns, errs = watch.CompilePatterns(*o)
	for _, err := range errs {
		log.Warn("ignore pattern skipped", "err", err)
	}
	compiled := len(f.patterns.Ignore) + len(f.patterns.IncludeText) + len(f.patterns.ExcludeText) +
		len(f.patterns.IncludeURL) + len(f.patterns.ExcludeURL)
	c.skipped.Add(float64(len(o.Ignore) + len(o.IncludeText) + len(o.ExcludeText) + len(o.IncludeURL) + len(o.ExcludeURL) - compiled))
	if f.regions, f.regionsErr = domwalk.CompileRegions(o.Within, o.Exclude); f.regionsErr != nil {
		f.regionsErr = fmt.Errorf("the page's regions cannot be applied, so it is not checked (fix them with watchctl set): %w", f.regionsErr)
		log.Warn("page regions refused", "err", f.regionsErr)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = c.order.PushFront(&patternEntry{key: key, filter: f})
		if c.order.Len() > patternCacheSize {
			oldest := c.order.Back()
			c.order.Remove(oldest)
			delete(c.entries, oldest.Value.(*patternEntry).key)
		}
	}
	return f
}

// patternKey encodes lists of patterns so that two sets of lists share a
// key only when they are equal: each list is prefixed with its count and
// each pattern with its length, since a pattern may contain any separator.
func patternKey(lists ...[]string) string {
	var b strings.Builder
	for _, l := range lists {
		b.WriteString(strconv.Itoa(len(l)))
		b.WriteByte('|')
		for _, p := range l {
			b.WriteString(strconv.Itoa(len(p)))
			b.WriteByte(':')
			b.WriteString(p)
		}
	}
	return b.String()
}

// regionsOf returns f's regions; nil for a nil f.
func (f *linkFilter) regionsOf() *domwalk.Regions {
	if f == nil {
		return nil
	}
	return f.regions
}

// patternsOf returns f's patterns; none for a nil f.
func (f *linkFilter) patternsOf() watch.Patterns {
	if f == nil {
		return watch.Patterns{}
	}
	return f.patterns
}

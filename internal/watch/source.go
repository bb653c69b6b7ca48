package watch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The sources a page can be watched through (Page.Sources): its homepage,
// checked as always, the feeds it offers and its news sitemaps, each found
// by a daily discovery and checked on its own schedule.
const (
	SourcesHomepage = "homepage"
	SourcesFeeds    = "feeds"
	SourcesSitemaps = "sitemaps"
)

// SourceChoices are the sources a page may choose, in the order they are
// stored and shown.
var SourceChoices = []string{SourcesHomepage, SourcesFeeds, SourcesSitemaps}

// DefaultSources is what a page is watched through unless a person
// chooses more: its homepage alone, as before sources existed.
var DefaultSources = []string{SourcesHomepage}

// The kinds of source a link or an update comes from (links.source,
// updates.source), and the kinds of a page's row in sources (SourceFeed,
// SourceSitemap).
const (
	SourceHomepage = "homepage"
	SourceFeed     = "feed"
	SourceSitemap  = "sitemap"
)

// SourceKindOf returns the kind of the sources rows a page's choice
// schedules: feed for feeds, sitemap for sitemaps, "" for homepage.
func SourceKindOf(choice string) string {
	switch choice {
	case SourcesFeeds:
		return SourceFeed
	case SourcesSitemaps:
		return SourceSitemap
	}
	return ""
}

// NormalizeSources checks a page's choice of sources and returns it as
// stored: without duplicates, in SourceChoices' order, the homepage
// first. An empty list is DefaultSources. Every source must be one of
// SourceChoices, and the homepage must be among them: it is what
// discovery reads the page's feeds from, and what removals, dwell and
// positions come from.
func NormalizeSources(in []string) ([]string, error) {
	if len(in) == 0 {
		return slices.Clone(DefaultSources), nil
	}
	chosen := map[string]bool{}
	for _, s := range in {
		s = strings.ToLower(strings.TrimSpace(s))
		switch s {
		case "":
			continue
		case "feed", "rss", "atom":
			s = SourcesFeeds // what people also call them
		case "sitemap", "news_sitemap", "news-sitemaps":
			s = SourcesSitemaps
		}
		if !slices.Contains(SourceChoices, s) {
			return nil, fmt.Errorf("unknown source %q: choose from %s, comma-separated (e.g. homepage,feeds,sitemaps)",
				s, strings.Join(SourceChoices, ", "))
		}
		chosen[s] = true
	}
	if !chosen[SourcesHomepage] {
		return nil, fmt.Errorf("sources must include homepage (e.g. homepage,feeds): the homepage is what the page's feeds " +
			"and sitemaps are discovered from, and what removals and positions come from")
	}
	out := make([]string, 0, len(chosen))
	for _, s := range SourceChoices {
		if chosen[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// ParseSources reads a comma-separated list of sources, as watchctl and
// the form take it, and normalises it (NormalizeSources).
func ParseSources(list string) ([]string, error) {
	return NormalizeSources(strings.Split(list, ","))
}

// HasBeyondHomepage reports whether sources chooses feeds or sitemaps.
func HasBeyondHomepage(sources []string) bool {
	return slices.ContainsFunc(sources, func(s string) bool { return s != SourcesHomepage })
}

// SourceRef names one feed or news sitemap of a page in a job and its
// task.
type SourceRef struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"` // SourceFeed or SourceSitemap
	URL  string `json:"url"`
}

// PageFeed is a feed of a watched page as a list for a feed reader gives
// it: the feed with its page's name, address and tags.
type PageFeed struct {
	PageID   int64
	PageName string // the page's DisplayName
	PageURL  string
	Tags     []string
	Title    string // the feed's own title, empty when it gives none
	URL      string
}

// Source is one feed or news sitemap of a page and its check state, as
// people see it.
type Source struct {
	ID                  int64      `json:"id"`
	PageID              int64      `json:"page_id"`
	Kind                string     `json:"kind"`
	URL                 string     `json:"url"`
	Title               string     `json:"title"`
	Enabled             bool       `json:"enabled"`
	NextCheckAt         time.Time  `json:"next_check_at"`
	LastCheckedAt       *time.Time `json:"last_checked_at,omitempty"`
	LastStatus          int        `json:"last_status,omitempty"`
	LastError           string     `json:"last_error,omitempty"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	BaselineAt          *time.Time `json:"baseline_at,omitempty"`
	DiscoveredAt        time.Time  `json:"discovered_at"`
	FoundAt             time.Time  `json:"found_at"`
	// Chosen says the page's sources include this one's kind: a source
	// of a kind the page no longer chooses is kept, not checked.
	Chosen bool `json:"chosen"`
	// CheckInterval is the source's own time between checks
	// (sources.check_interval); 0 follows its page's, PageInterval.
	// Shown through Schedule, not as a number of nanoseconds.
	CheckInterval time.Duration `json:"-"`
	PageInterval  time.Duration `json:"-"`
	// Paused says a person paused the source: kept, not checked.
	Paused bool `json:"paused"`
}

// EffectiveInterval is the time between the source's checks: its own, or its
// page's when it has none.
func (s Source) EffectiveInterval() time.Duration {
	if s.CheckInterval > 0 {
		return s.CheckInterval
	}
	return s.PageInterval
}

// SourceSchedule is how often a source is checked, as the API and
// watchctl --json show it beside the source.
type SourceSchedule struct {
	// Interval is the time between checks, as a Go duration ("2m0s").
	Interval        string  `json:"interval"`
	IntervalSeconds float64 `json:"interval_seconds"`
	// FollowsPage is true when the source has no interval of its own and
	// is checked as often as its page.
	FollowsPage bool `json:"interval_follows_page"`
}

// Schedule returns the source's SourceSchedule.
func (s Source) Schedule() SourceSchedule {
	d := s.EffectiveInterval()
	return SourceSchedule{Interval: d.String(), IntervalSeconds: d.Seconds(), FollowsPage: s.CheckInterval == 0}
}

// ErrSourceNotFound is returned when a source id names no feed or news
// sitemap of a page that is watched (not in the trash).
var ErrSourceNotFound = errors.New("source not found")

// FollowPage is the word that gives a source its page's interval back
// (`watchctl sources set ID --interval page`, the API's "interval": "page").
const FollowPage = "page"

// SourceEdit is a change to one feed or news sitemap of a page. A nil
// field is left as it is.
type SourceEdit struct {
	// Interval is the source's own time between checks, at least
	// MinInterval; 0 makes it follow its page's interval again.
	Interval *time.Duration
	// Paused pauses the source (true) or resumes it (false); a resumed
	// source's next check is a silent baseline.
	Paused *bool
}

// ParseSourceInterval reads a source's interval as people give it: a
// duration (10s, 2m, 1h, 1d) of at least MinInterval, or FollowPage,
// which is returned as 0. Its errors are *RefusedError naming interval.
func ParseSourceInterval(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, FollowPage) {
		return 0, nil
	}
	d, err := ParseDuration(v)
	if err != nil {
		return 0, Refused("interval", fmt.Errorf("%w, or %q to follow the page's interval", err, FollowPage))
	}
	if d == 0 {
		return 0, Refused("interval", fmt.Errorf("interval 0 would check the source without a pause: give at least %s, or %q to follow the page's interval",
			FormatDuration(MinInterval), FollowPage))
	}
	return d, SourceEdit{Interval: &d}.Validate()
}

// Validate returns a *RefusedError for a change the store would refuse,
// or nil.
func (e SourceEdit) Validate() error {
	if e.Interval != nil && (*e.Interval < 0 || *e.Interval > 0 && *e.Interval < MinInterval) {
		return Refused("interval", fmt.Errorf("interval %s is too short: the shortest is %s; or %q to follow the page's interval",
			*e.Interval, FormatDuration(MinInterval), FollowPage))
	}
	return nil
}

// Status is one word for the source's state: disabled (discovery no
// longer finds it), paused (by a person), not_chosen, pending (not
// checked yet), failing or ok.
func (s Source) Status() string {
	switch {
	case !s.Enabled:
		return "disabled"
	case s.Paused:
		return "paused"
	case !s.Chosen:
		return "not_chosen"
	case s.LastError != "":
		return "failing"
	case s.BaselineAt == nil:
		return "pending"
	}
	return "ok"
}

// DiscoveredSource is a feed or news sitemap a discovery found, as a
// crawler reports it (Task.Discovered).
type DiscoveredSource struct {
	Kind  string `json:"kind"` // SourceFeed or SourceSitemap
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// Source limits. A feed or news sitemap is read whole (the protocol's
// 50,000 URLs at most), and its items beyond MaxSourceItems are left out
// and counted: a news sitemap lists at most 1,000 stories by Google's own
// rule, and a feed rarely more than a few hundred.
const (
	MaxSitemapURLs = 50_000
	MaxSourceItems = 5_000
	// SourceRediscovery is how often a page's feeds and sitemaps are
	// discovered again; a source not found for SourceGoneAfter is
	// disabled (kept, with its updates).
	SourceRediscovery = 24 * time.Hour
	SourceGoneAfter   = 3 * 24 * time.Hour
	// MaxFutureSkew is how far ahead of the check a publication time may
	// lie: a feed that dates its items later than that lies, and its
	// dates are dropped (the items are kept).
	MaxFutureSkew = 24 * time.Hour
	// MaxDiscovered is how many sources one discovery records.
	MaxDiscovered = 20
)

// SourceCheck is one check of a feed or news sitemap to record
// (store.RecordSourceCheck).
type SourceCheck struct {
	PageID       int64
	Source       SourceRef
	FetchedAt    time.Time
	Status       int
	Error        string
	ETag         string
	LastModified string
	// ItemsDigest is the digest of the items sent; empty when the check
	// sent none (failed, 304, unchanged) or was cut.
	ItemsDigest string
	// NotModified: a 304 or the job's digest again; nothing to insert.
	NotModified bool
	// Truncated counts the items the crawler left out.
	Truncated int
	// Caps are the page's caps of new links per check and per day, which
	// the homepage's checks share.
	Caps Caps
	// Articles has the new links read as articles when the page asks for
	// it, as for the homepage's updates.
	Articles bool
}

// SourceRecorded is what recording a source check did.
type SourceRecorded struct {
	// Baseline says this was the source's first successful check: its
	// items were recorded as known, without updates.
	Baseline bool
	Inserted int
	Cut      int
	Updates  []Update
}

package watch

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults and limits of a page's check interval.
const (
	DefaultInterval = 5 * time.Minute
	MinInterval     = 10 * time.Second
)

// ErrPageNotFound is returned when a page id names no registered page.
var ErrPageNotFound = errors.New("page not found")

// ErrSnapshotNotFound is returned when a snapshot id names no snapshot of
// a page that is not in the trash.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// ErrSnapshotTooLarge is returned for a stored body over the cap a reader
// set (PORTALWATCH_SNAPSHOT_MAX_BYTES for the API).
var ErrSnapshotTooLarge = errors.New("stored body over the byte cap")

// ErrSnapshotNotRendered is returned for the rendered DOM of a snapshot
// whose check fetched the page without rendering it.
var ErrSnapshotNotRendered = errors.New("the check was not rendered: it kept no DOM")

// ErrDuplicatePage is returned when a page with the same base URL is already
// registered.
var ErrDuplicatePage = errors.New("page already registered")

// ErrPagePaused is returned when a check is asked of a paused page.
var ErrPagePaused = errors.New("page is paused: resume it to check it")

// Page is a registered homepage and its check state.
type Page struct {
	ID                  int64
	BaseURL             string
	Interval            time.Duration
	Enabled             bool
	NextCheckAt         time.Time
	LastCheckedAt       time.Time // zero until the first check
	LastStatus          int
	LastError           string
	ConsecutiveFailures int
	BaselineAt          time.Time // zero until the first successful check
	Options             LinkOptions
	CreatedAt           time.Time
	// LastTruncated counts the links the crawler left out of the last
	// successful check (the link cap or the task's byte budget was reached).
	LastTruncated int
	// LastCut counts the new links the last successful check did not record
	// because the page reached its cap of new links per check or per day;
	// they are recorded by a later check if they are still on the page.
	LastCut int
	// Name is what people call the page; empty means DisplayName falls
	// back to Title, then to the host.
	Name string
	// Tags group pages for feeds and filters (see NormalizeTags).
	Tags []string
	// Title is the page's <title> as last seen; empty until it is recorded.
	Title string
	// RebaselinePending says a person changed what the page's checks admit
	// (regions, keyword rules, ignore patterns, same-site): its next
	// successful whole check records the links it finds without updates.
	RebaselinePending bool
	// BurstDetection flags a check whose new links flood the page (a
	// redesign) as one burst; true unless a person turned it off.
	BurstDetection bool
	// Articles says each new link of the page is read as an article by the
	// extractor (Update.Article): true for pages registered since articles
	// exist, unless a person turned it off.
	Articles bool
	// DeletedAt is when the page was moved to the trash; zero for a
	// watched page. A page in the trash is not checked and is left out of
	// every list and feed; it is deleted for good TrashRetention after.
	DeletedAt time.Time
	// Restored says the add that returned the page brought it back from
	// the trash, with its history, instead of registering it anew.
	Restored bool
	// Health says whether the checks of the page say its watch may be
	// blind, and why (Degradation).
	Health Health
	// Headers are sent with every fetch of the page, secrets sealed (see
	// Header); nil for none.
	Headers []Header
	// Sources are what the page is watched through (SourceChoices): its
	// homepage, and its feeds and news sitemaps when chosen.
	Sources []string
	// SourcesDiscoveredAt is when the page's feeds and sitemaps were last
	// discovered; zero until the first discovery.
	SourcesDiscoveredAt time.Time
	// SourcesDiscoveryError is why the last discovery failed (it is tried
	// again within the hour); empty after one that worked.
	SourcesDiscoveryError string
	// Proxy names the proxy of the operator's list (PORTALWATCH_PROXIES)
	// the page and its articles are fetched through; "" goes direct.
	Proxy string
	// Render says the page is checked in headless Chromium by the
	// renderer, so that links its scripts insert are seen; false is a
	// plain fetch by a crawler.
	Render bool
	// WaitFor is the CSS selector the renderer waits for before it reads
	// the DOM; empty waits for the network to go idle. Only rendered
	// pages use it.
	WaitFor string
	// RenderAllow are hosts beyond the page's site its renderer lets the
	// page load subresources from (NormalizeRenderAllow); nil: the site
	// alone, and the renderer's own list.
	RenderAllow []string
	// RenderHint says the page's last plain check read almost no links
	// but scripts (Task.Scripted): rendering it may show its links.
	RenderHint bool
}

// SuggestRender reports whether people should be told to render the page:
// it is not rendered, and its last check read almost no links but
// scripts.
func (p Page) SuggestRender() bool { return p.RenderHint && !p.Render }

// TrashRetention is how long a deleted page stays in the trash, restorable,
// before it is deleted for good with its links and updates.
const TrashRetention = 7 * 24 * time.Hour

// PurgeAt is when a page in the trash is deleted for good.
func (p Page) PurgeAt() time.Time { return p.DeletedAt.Add(TrashRetention) }

// Limits of the names and tags people give pages.
const (
	MaxNameRunes = 200 // a page's name
	MaxTags      = 20  // tags per page
	MaxTagRunes  = 50  // one tag
)

// DisplayName is how people see the page: its Name, else its Title, else
// its URL's host (else the URL itself).
func (p Page) DisplayName() string {
	if p.Name != "" {
		return p.Name
	}
	if p.Title != "" {
		return p.Title
	}
	if u, err := url.Parse(p.BaseURL); err == nil && u.Host != "" {
		return u.Host
	}
	return p.BaseURL
}

// NormalizeName trims a page's name and checks it: at most MaxNameRunes
// runes of valid UTF-8 without control characters. An empty name is valid
// (DisplayName falls back).
func NormalizeName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case !utf8.ValidString(name):
		return "", errors.New("name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxNameRunes:
		return "", fmt.Errorf("name is %d characters long: the longest is %d", utf8.RuneCountInString(name), MaxNameRunes)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return "", errors.New("name holds a control character (a tab or line break, say)")
	}
	return name, nil
}

// NormalizeTags lower-cases tags, drops repeats and empty ones, and checks
// them: at most MaxTags, each 1 to MaxTagRunes letters, digits, '-' or '_'
// (tags appear in feed URLs). The result is sorted and never nil.
func NormalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		if n := utf8.RuneCountInString(t); n > MaxTagRunes {
			return nil, fmt.Errorf("tag %q is %d characters long: the longest is %d", t, n, MaxTagRunes)
		}
		if i := strings.IndexFunc(t, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_'
		}); i >= 0 {
			return nil, fmt.Errorf("tag %q holds %q: use letters, digits, '-' and '_'", t, []rune(t[i:])[0])
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxTags {
		return nil, fmt.Errorf("%d tags: a page has at most %d", len(out), MaxTags)
	}
	return out, nil
}

// PageSpec is a page to register: what a person asks for, from watchctl,
// the API, the web form or an import, and what the store creates once
// Normalize and registration.Policy.CheckPage have checked it.
type PageSpec struct {
	URL      string
	Interval time.Duration // zero means DefaultInterval
	Options  LinkOptions
	Name     string
	Tags     []string
	Paused   bool // registered but not checked until enabled
	// BurstDetectionOff registers the page with its redesign floods not
	// flagged (Page.BurstDetection false); the zero value flags them.
	BurstDetectionOff bool
	// ArticlesOff registers the page with its new links not read as
	// articles (Page.Articles false); the zero value reads them.
	ArticlesOff bool
	// Headers are sent with the page's fetches, values in clear: the
	// store seals the secrets once it knows the page id.
	Headers []Header
	// Sources are what the page is watched through; nil is
	// DefaultSources (see NormalizeSources).
	Sources []string
	// Proxy names the proxy the page is fetched through (Page.Proxy);
	// "" goes direct.
	Proxy string
	// Render, WaitFor and RenderAllow are Page.Render, Page.WaitFor and
	// Page.RenderAllow.
	Render      bool
	WaitFor     string
	RenderAllow []string
}

// PageEdit changes a registered page; a nil field stays as it is. Check it
// with Normalize, then registration.CheckEdit against the page's options,
// before the store applies it.
type PageEdit struct {
	Interval     *time.Duration
	Enabled      *bool
	SameSiteOnly *bool
	Ignore       *[]string
	Name         *string
	Tags         *[]string
	// Regions and keyword rules, each replacing its list of LinkOptions.
	Within, Exclude          *[]string
	IncludeText, ExcludeText *[]string
	IncludeURL, ExcludeURL   *[]string
	// BurstDetection turns the flagging of redesign floods on or off.
	BurstDetection *bool
	// Articles turns the reading of new links as articles on or off.
	Articles *bool
	// Headers set the headers of their names, values in clear, or
	// remove them (an empty value); ClearHeaders removes every header
	// first. See MergeHeaders.
	Headers      *[]Header
	ClearHeaders bool
	// Sources replaces the page's sources (NormalizeSources). A source
	// chosen anew starts with a silent baseline.
	Sources *[]string
	// Proxy sets the proxy the page is fetched through; "" goes direct
	// again.
	Proxy *string
	// Render turns rendering in headless Chromium on or off; WaitFor
	// replaces the selector the renderer waits for ("" for none).
	Render  *bool
	WaitFor *string
	// RenderAllow replaces the hosts a rendered page may load from
	// beyond its site (an empty list: none).
	RenderAllow *[]string
}

// Apply returns o with the lists e changes replaced.
func (e PageEdit) Apply(o LinkOptions) LinkOptions {
	if e.SameSiteOnly != nil {
		o.SameSiteOnly = *e.SameSiteOnly
	}
	for _, f := range []struct {
		edit *[]string
		dst  *[]string
	}{{e.Ignore, &o.Ignore}, {e.Within, &o.Within}, {e.Exclude, &o.Exclude}, {e.IncludeText, &o.IncludeText},
		{e.ExcludeText, &o.ExcludeText}, {e.IncludeURL, &o.IncludeURL}, {e.ExcludeURL, &o.ExcludeURL}} {
		if f.edit != nil {
			*f.dst = *f.edit
		}
	}
	return o
}

// IsZero reports whether e changes nothing.
func (e PageEdit) IsZero() bool { return e == PageEdit{} }

// Normalize checks every rule of s that needs nothing beyond this package:
// the interval (zero is DefaultInterval, else at least MinInterval), the
// name, the tags and the link options (LinkOptions.Validate). It returns s
// with its interval, name and tags as they are stored. Every error is a
// *RefusedError naming the field. The URL (its form, and the addresses its
// host resolves to) and the grammar of region selectors are checked by
// registration.Policy.CheckPage, which has the packages they need.
func (s PageSpec) Normalize() (PageSpec, error) {
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	var nameErr, tagsErr error
	s.Name, nameErr = NormalizeName(s.Name)
	s.Tags, tagsErr = NormalizeTags(s.Tags)
	headers, headersErr := NormalizeHeaders(s.Headers)
	if len(headers) > 0 {
		s.Headers = headers
	} else {
		s.Headers = nil
	}
	var waitErr error
	s.WaitFor, waitErr = NormalizeWaitFor(s.WaitFor)
	sources, sourcesErr := NormalizeSources(s.Sources)
	s.Sources = sources
	var allowErr error
	s.RenderAllow, allowErr = NormalizeRenderAllow(s.RenderAllow)
	if err := JoinRefused(checkInterval(s.Interval), s.Options.Validate(), Refused("name", nameErr), Refused("tags", tagsErr), headersErr,
		Refused("proxy", CheckProxyName(s.Proxy)), Refused("wait_for", waitErr), Refused("sources", sourcesErr),
		Refused("render_allow", allowErr)); err != nil {
		return PageSpec{}, err
	}
	return s, nil
}

// Normalize checks each setting e changes, each list of options on its
// own, as PageSpec.Normalize checks a new page's, and returns e with its
// name and tags as they are stored. The caps that span a page's lists need
// its other options: check e.Apply(current).Validate() too
// (registration.CheckEdit does). Every error is a *RefusedError.
func (e PageEdit) Normalize() (PageEdit, error) {
	var errs []error
	if e.Interval != nil {
		errs = append(errs, checkInterval(*e.Interval))
	}
	for _, r := range RefusalsOf(e.Apply(LinkOptions{}).Validate()) {
		// A cap across lists is judged with the page's other lists.
		if r.Field != "options" {
			errs = append(errs, r)
		}
	}
	if e.Name != nil {
		name, err := NormalizeName(*e.Name)
		errs = append(errs, Refused("name", err))
		e.Name = &name
	}
	if e.Tags != nil {
		tags, err := NormalizeTags(*e.Tags)
		errs = append(errs, Refused("tags", err))
		e.Tags = &tags
	}
	if e.Headers != nil {
		// The caps of the headers as stored are for the store to judge,
		// which holds the other headers of the page.
		errs = append(errs, checkHeaderChanges(*e.Headers))
	}
	if e.Sources != nil {
		sources, err := NormalizeSources(*e.Sources)
		errs = append(errs, Refused("sources", err))
		e.Sources = &sources
	}
	if e.Proxy != nil {
		errs = append(errs, Refused("proxy", CheckProxyName(*e.Proxy)))
	}
	if e.WaitFor != nil {
		waitFor, err := NormalizeWaitFor(*e.WaitFor)
		errs = append(errs, Refused("wait_for", err))
		e.WaitFor = &waitFor
	}
	if e.RenderAllow != nil {
		hosts, err := NormalizeRenderAllow(*e.RenderAllow)
		errs = append(errs, Refused("render_allow", err))
		if hosts == nil {
			hosts = []string{}
		}
		e.RenderAllow = &hosts
	}
	if err := JoinRefused(errs...); err != nil {
		return PageEdit{}, err
	}
	return e, nil
}

// MaxWaitForRunes bounds the selector a rendered page waits for.
const MaxWaitForRunes = 500

// NormalizeWaitFor trims the selector a rendered page waits for and checks
// its length and characters; its grammar is checked by
// registration.CheckPage, which has the CSS parser. Empty is valid: the
// renderer then waits for the network to go idle.
func NormalizeWaitFor(sel string) (string, error) {
	sel = strings.TrimSpace(sel)
	switch {
	case !utf8.ValidString(sel):
		return "", errors.New("wait-for selector is not valid UTF-8")
	case utf8.RuneCountInString(sel) > MaxWaitForRunes:
		return "", fmt.Errorf("wait-for selector is %d characters long: the longest is %d", utf8.RuneCountInString(sel), MaxWaitForRunes)
	case strings.IndexFunc(sel, unicode.IsControl) >= 0:
		return "", errors.New("wait-for selector holds a control character (a tab or line break, say)")
	}
	return sel, nil
}

func checkInterval(d time.Duration) error {
	if d < MinInterval {
		return Refused("interval", fmt.Errorf("interval %s is too short: the shortest is %s", d, MinInterval))
	}
	return nil
}

// PageQuery selects watched pages for a list, in id order, a screenful at a
// time.
type PageQuery struct {
	Tag string // "": every tag
	// Text is a case-insensitive substring of the page's name, title or
	// URL; "": any.
	Text string
	// Status is "" for every page, else one of PageStatuses: "failing"
	// (the last check failed), "paused", "pending" (never checked) or
	// "degraded" (Health).
	Status string
	After  int64 // the last id of the previous screen; 0 starts at the first
	Limit  int   // 1..MaxUpdatesLimit; 0 means 100
}

// PageStatuses are the states PageQuery.Status selects.
var PageStatuses = []string{"failing", "paused", "pending", "degraded"}

// LimitOrDefault returns q's Limit within 1..MaxUpdatesLimit, 100 for 0.
func (q PageQuery) LimitOrDefault() int { return limitOrDefault(q.Limit) }

// PageCounts sum the pages up: how many are watched, and of those how many
// failing, paused and degraded; how many are in the trash.
type PageCounts struct {
	Watched, Failing, Paused, Trash int
	Degraded                        int
}

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

// Limits of the names and tags people give pages.
const (
	MaxNameRunes = 200 // a page's name
	MaxTags      = 20  // tags per page
	MaxTagRunes  = 50  // one tag
)

// ErrTokenNotFound is returned for a token that does not exist (or was
// revoked), whether looked up by name or by its secret.
var ErrTokenNotFound = errors.New("token not found")

// ErrDuplicateToken is returned when a token of the same name exists.
var ErrDuplicateToken = errors.New("a token of that name already exists")

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

// PageSpec is a page to register, as registration.Policy.CheckPage has
// checked it.
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
}

// PageEdit changes a registered page; a nil field stays as it is. Check it
// with registration.CheckEdit first.
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

// MaxUpdatesLimit is the most updates one query returns.
const MaxUpdatesLimit = 1000

// UpdateFilter selects updates, newest first (discovered_at, then id).
type UpdateFilter struct {
	PageID int64     // 0: every page
	Tag    string    // "": every tag
	Since  time.Time // zero: no lower bound (inclusive)
	Until  time.Time // zero: no upper bound (exclusive)
	Text   string    // "": any text; else a case-insensitive substring of the link text
	// After is the cursor of the last update of the previous page of
	// results; the zero Cursor starts at the newest.
	After Cursor
	Limit int // 1..MaxUpdatesLimit; 0 means 100
}

// Cursor is a position in the newest-first order of updates: the
// (discovered_at, id) of the last update already seen.
type Cursor struct {
	DiscoveredAt time.Time
	ID           int64
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c.ID == 0 }

// CursorOf returns the cursor just after u.
func CursorOf(u Update) Cursor { return Cursor{DiscoveredAt: u.DiscoveredAt, ID: u.ID} }

// FeedScope names the updates a feed holds: every page's, one page's
// (PageID) or one tag's (Tag).
type FeedScope struct {
	PageID int64
	Tag    string
}

// FeedStamp identifies the content of a feed without reading it: the
// newest update in scope and the pages in scope. Two equal stamps mean the
// same feed.
type FeedStamp struct {
	NewestID int64     // 0 when the scope has no update
	Newest   time.Time // discovered_at of NewestID
	Pages    int64     // pages in scope
	PageSum  int64     // sum of their ids: a page removed and another added changes it
	Changed  time.Time // the latest change people made to a page in scope
}

// LastModified is the later of the newest update and the latest change.
func (s FeedStamp) LastModified() time.Time {
	if s.Changed.After(s.Newest) {
		return s.Changed
	}
	return s.Newest
}

// Token is an API token as listed; its secret is never stored.
type Token struct {
	Name       string
	Write      bool // may change pages, not only read
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used
}

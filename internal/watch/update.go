package watch

import "time"

// Update is a link that appeared on a watched page for the first time. It
// is the one definition of an update as it leaves portalwatch: the API's
// update object (openapi.json's Update), a feed's entries, a webhook's
// updates and watchctl's JSON are all made from it. Fields are only ever
// added, each optional to readers, so that programs of two versions work
// side by side; the JSON names are the API's.
type Update struct {
	ID     int64 `json:"id"`
	PageID int64 `json:"page_id"`
	// PageName is the DisplayName of the update's page, when the query
	// that read the update joined its page.
	PageName string `json:"page_name"`
	URL      string `json:"url"`
	Text     string `json:"text"`
	// CurrentText is the link's headline as its page shows it now, when it
	// was rewritten since Text, the headline it was found with (see
	// Revision); empty when it is the same or the query did not read it.
	CurrentText  string    `json:"current_text,omitempty"`
	Code         string    `json:"code"`
	DiscoveredAt time.Time `json:"discovered_at"`
	// Summary is the link's teaser, the longest other text of its anchors;
	// empty when it has none.
	Summary string `json:"summary"`
	// Burst says the update came with a redesign flood: one check found
	// more new links than the page's burst share, so readers see the check
	// as one event rather than each link alone.
	Burst bool `json:"burst"`
	// RemovedAt is when the link was taken down from its page again (see
	// Removal), when the query that read the update looked; nil while it
	// is on the page.
	RemovedAt *time.Time `json:"removed_at,omitempty"`
	// Place is where the link stood on its homepage when it was found:
	// position, heading and landmark, each left out while not known (see
	// Place), as for updates recorded before places were.
	Place
	// Article is what the link leads to (see Article): status pending
	// until the extractor read it; nil when its page does not read
	// articles. Lists leave its Body out unless asked for it.
	Article *Article `json:"article,omitempty"`
	// DwellSeconds is how long the link was on its page, in whole seconds
	// from DiscoveredAt to RemovedAt (see Dwell); Published sets it, and
	// it is nil while no removal is recorded.
	DwellSeconds *int64 `json:"dwell_seconds,omitempty"`
	// Source is where the link was seen first: homepage, feed or sitemap
	// (SourceHomepage, SourceFeed, SourceSitemap); updates recorded before
	// sources existed are homepage's. SourceID names the page's feed or
	// sitemap (Source.ID), 0 for the homepage.
	Source   string `json:"source"`
	SourceID int64  `json:"source_id,omitempty"`
	// PublishedAt is when that feed or sitemap says the story was
	// published; nil when it says nothing, and for the homepage. The
	// article's own date is Article.Published, kept beside it.
	PublishedAt *time.Time `json:"published_at,omitempty"`
}

// Published returns u as it leaves portalwatch: its times in UTC. Its
// Article is a copy, so that u's own stays as it was.
func (u Update) Published() Update {
	u.DiscoveredAt = u.DiscoveredAt.UTC()
	if u.RemovedAt != nil {
		removed := u.RemovedAt.UTC()
		u.RemovedAt = &removed
		u.DwellSeconds = DwellSeconds(u.DiscoveredAt, removed)
	}
	if u.PublishedAt != nil {
		published := u.PublishedAt.UTC()
		u.PublishedAt = &published
	}
	if u.Source == "" {
		u.Source = SourceHomepage
	}
	if u.Article != nil {
		a := *u.Article
		a.FetchedAt = a.FetchedAt.UTC()
		u.Article = &a
	}
	return u
}

// MinSearchRunes is the shortest text UpdateFilter.Text may search for, in
// characters: updates' trigram index serves three and more.
const MinSearchRunes = 3

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
	// NewerThan keeps only the updates newer than this cursor, such as a
	// reader's read mark (the unread ones); the zero Cursor keeps all.
	NewerThan Cursor
	Limit     int // 1..MaxUpdatesLimit; 0 means 100
	// ArticleBody reads each update's Article with its Body, which lists
	// otherwise leave out: a body is up to MaxArticleBody bytes.
	ArticleBody bool
}

// LimitOrDefault returns f's Limit within 1..MaxUpdatesLimit, 100 for 0.
func (f UpdateFilter) LimitOrDefault() int { return limitOrDefault(f.Limit) }

func limitOrDefault(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > MaxUpdatesLimit:
		return MaxUpdatesLimit
	}
	return n
}

// Cursor is a position in the newest-first order of updates: the
// (discovered_at, id) of the last update already seen.
type Cursor struct {
	DiscoveredAt time.Time
	ID           int64
}

// IsZero reports whether c is the start.
func (c Cursor) IsZero() bool { return c.ID == 0 }

// Newer reports whether c is newer than o in the order of updates
// (discovered_at, then id).
func (c Cursor) Newer(o Cursor) bool {
	return c.DiscoveredAt.After(o.DiscoveredAt) || c.DiscoveredAt.Equal(o.DiscoveredAt) && c.ID > o.ID
}

// CursorOf returns the cursor just after u.
func CursorOf(u Update) Cursor { return Cursor{DiscoveredAt: u.DiscoveredAt, ID: u.ID} }

// FeedScope names the updates a feed holds: every page's, one page's
// (PageID) or one tag's (Tag), the newest Entries of them.
type FeedScope struct {
	PageID int64
	Tag    string
	// Entries is how many of the newest updates the feed shows: the
	// articles of those are part of its stamp. 0 leaves articles out.
	Entries int
}

// FeedStamp identifies the content of a feed without reading it: the
// newest update in scope, the pages in scope and the articles of the
// updates it shows. Two equal stamps mean the same feed.
type FeedStamp struct {
	NewestID int64     // 0 when the scope has no update
	Newest   time.Time // discovered_at of NewestID
	Pages    int64     // pages in scope
	PageSum  int64     // sum of their ids: a page removed and another added changes it
	Changed  time.Time // the latest change people made to a page in scope
	// Articles counts the scope's newest Entries updates that point at an
	// article, and ArticleSum adds those articles' ids: an article stored
	// for one of them, which arrives after its update, changes both.
	Articles, ArticleSum int64
	// ArticleFetched is the latest fetch of those articles: an article
	// stored again (read anew for another link to it) moves it.
	ArticleFetched time.Time
}

// LastModified is the latest of the newest update, the latest change and
// the latest fetch of an article shown.
func (s FeedStamp) LastModified() time.Time {
	last := s.Newest
	for _, t := range []time.Time{s.Changed, s.ArticleFetched} {
		if t.After(last) {
			last = t
		}
	}
	return last
}

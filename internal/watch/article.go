package watch

import (
	"errors"
	"fmt"
	"time"
)

// ArticleStatus says what became of the attempt to read a new link as an
// article.
type ArticleStatus string

// The statuses of an article. Pending is the only one that changes: every
// other is final for the link.
const (
	// ArticlePending: the link waits for the extractor (or for a slot of
	// its origin); Article holds nothing else yet.
	ArticlePending ArticleStatus = "pending"
	// ArticleOK: the page was read as an article; Headline or Body is set.
	ArticleOK ArticleStatus = "ok"
	// ArticleNotArticle: the page was fetched but is no article: not HTML
	// (a PDF, an image), or HTML with neither a headline nor a body.
	ArticleNotArticle ArticleStatus = "not_article"
	// ArticlePaywall: the page says its content is not free
	// (isAccessibleForFree false) and shows too little of it to read.
	ArticlePaywall ArticleStatus = "paywall"
	// ArticleBlocked: the link may not be fetched: robots.txt disallows it,
	// or its host is or resolves to a non-public address.
	ArticleBlocked ArticleStatus = "blocked"
	// ArticleCapped: the link's origin reached its daily cap of article
	// fetches (PORTALWATCH_ARTICLES_PER_ORIGIN_DAY) when the link came up.
	ArticleCapped ArticleStatus = "capped"
	// ArticleError: the fetch failed for good (an HTTP error, a page too
	// large) or kept failing until the extractor stopped trying; Detail
	// says how.
	ArticleError ArticleStatus = "error"
)

// Article is what a new link leads to, read once per canonical URL however
// many pages link it: each update that links it points at it (Sightings).
// Its JSON names are the API's: schema.org's names of the extraction
// (package article) in snake_case, beside the status of the attempt.
type Article struct {
	ID     int64         `json:"id"`
	Status ArticleStatus `json:"status"`
	// Detail says why a status other than ok was given, for a person:
	// "HTTP 404 Not Found", "robots.txt disallows it".
	Detail string `json:"detail,omitempty"`
	// URL is the canonical URL: the one the page states on its own
	// registrable domain, else the URL the fetch ended at, else the link's.
	URL           string   `json:"url"`
	Headline      string   `json:"headline,omitempty"`
	Description   string   `json:"description,omitempty"`
	Body          string   `json:"article_body,omitempty"`
	DatePublished string   `json:"date_published,omitempty"`
	DateModified  string   `json:"date_modified,omitempty"`
	Author        []string `json:"author,omitempty"`
	InLanguage    string   `json:"in_language,omitempty"`
	Image         string   `json:"image,omitempty"`
	Section       string   `json:"article_section,omitempty"`
	Keywords      []string `json:"keywords,omitempty"`
	// Sources maps each field found to where it came from ("json-ld",
	// "opengraph", "meta:<name>", "time[datetime]", "dom", "url",
	// "trafilatura"); the field names are the extraction's schema.org ones.
	Sources map[string]string `json:"sources,omitempty"`
	// FetchedAt is when the page was fetched; zero while pending.
	FetchedAt time.Time `json:"fetched_at,omitzero"`
}

// Published returns the time DatePublished states, and whether it states
// one that parses: an RFC 3339 time, a time without an offset (read as
// UTC) or a day (its midnight UTC).
func (a *Article) Published() (time.Time, bool) {
	if a == nil || a.DatePublished == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, a.DatePublished); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// ArticleWork is one link URL waiting for its article, however many
// pages link it: the URL to read, and the page and time of the first update
// that linked it. The store keeps it until the extractor records an
// outcome, so that no crash loses it.
type ArticleWork struct {
	URL          string
	PageID       int64
	DiscoveredAt time.Time
	// Attempts counts the claims of this work so far, this one included.
	Attempts int
	// Proxy is the proxy of the page that found the link (Page.Proxy):
	// its articles are read the way the page is.
	Proxy string
}

// ArticleOutcome is what the extractor learned about one ArticleWork.
type ArticleOutcome struct {
	// Article is the article to store (Status not pending); its URL is
	// the key it is stored under, once for every link that leads to it.
	Article Article
	// LinkURL is the work's URL, remembered as leading to the article so
	// that other pages' links to it need no fetch.
	LinkURL string
	// Snapshot is where the extractor archived the article page as
	// fetched; the store indexes it with the article. Nil: none.
	Snapshot *SnapshotRef
}

// ErrArticleNotFound is returned for an article id that is not stored.
var ErrArticleNotFound = errors.New("article not found")

// ArticleSightings is an article with every update that links it, newest
// first: where and when each portal showed the story.
type ArticleSightings struct {
	Article
	Sightings []Update `json:"sightings"`
}

// Validate checks that o can be stored.
func (o ArticleOutcome) Validate() error {
	switch o.Article.Status {
	case ArticleOK, ArticleNotArticle, ArticlePaywall, ArticleBlocked, ArticleCapped, ArticleError:
	default:
		return fmt.Errorf("article of %s: status %q is not an outcome", o.LinkURL, o.Article.Status)
	}
	if o.Article.URL == "" || o.LinkURL == "" {
		return fmt.Errorf("article of %q: no URL", o.LinkURL)
	}
	return nil
}

// MaxArticleBody is the most bytes of an article's body that are stored:
// the body of a long report is cut there, at a paragraph where one ends
// close enough.
const MaxArticleBody = 256 << 10

// ArticleFetch is the class of the extractor's fetches in an origin's
// budget: below HomepageFetch, so that article fetches take only the slots
// the pages' checks leave free.
const ArticleFetch FetchClass = 1

// SourceFetch is the class of the checks of a page's feeds and news
// sitemaps: below HomepageFetch, so that they take only the slots the
// homepages' checks leave free.
const SourceFetch FetchClass = 1

// Lasting reports whether an article with status s stands for every later
// link to its URL, so that none is fetched again: the page was read, is no
// article, or is behind a paywall. An error, a cap or a block may pass.
func (s ArticleStatus) Lasting() bool {
	return s == ArticleOK || s == ArticleNotArticle || s == ArticlePaywall
}

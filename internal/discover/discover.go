// Package discover finds the other sources a portal offers beside its
// homepage: the feeds the page links, and the sitemaps its robots.txt
// names, which of them are news sitemaps and which are indexes of others.
// Every fetch goes through the caller's fetcher (the crawler's client, with
// its guard, robots.txt and politeness), and the whole discovery makes a
// bounded number of them.
package discover

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/mmcdole/gofeed"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/portalwatch/portalwatch/internal/sourceparse"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Fetcher fetches what discovery reads (package fetch).
type Fetcher interface {
	Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error)
	// Sitemaps returns the Sitemap lines of the robots.txt of pageURL's
	// origin, read through proxy ("" is direct).
	Sitemaps(ctx context.Context, pageURL, proxy string) ([]string, error)
}

// through is a Fetcher whose every request goes through one proxy of the
// operator's list: a page watched through a proxy is discovered through
// it too, robots.txt included.
type through struct {
	Fetcher
	proxy string
}

func (t through) Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error) {
	req.Proxy = t.proxy
	return t.Fetcher.Fetch(ctx, req)
}

func (t through) Sitemaps(ctx context.Context, pageURL, _ string) ([]string, error) {
	return t.Fetcher.Sitemaps(ctx, pageURL, t.proxy)
}

// Limits bound one discovery.
type Limits struct {
	// Feeds is how many of the feeds a page links are fetched and read.
	Feeds int
	// Sitemaps is how many sitemaps robots.txt names are fetched and read.
	Sitemaps int
	// IndexChildren is how many sitemaps of one index are fetched, one
	// level down, to tell news sitemaps apart.
	IndexChildren int
}

// DefaultLimits make a discovery of at most 1 + 5 + 4 + 4×3 fetches, about
// twenty seconds at the default spacing of one fetch a second per origin.
var DefaultLimits = Limits{Feeds: 5, Sitemaps: 4, IndexChildren: 3}

// Source kinds of a Found.
const (
	KindFeed          = "feed"
	KindNewsSitemap   = "news_sitemap"
	KindSitemap       = "sitemap"
	KindSitemapIndex  = "sitemap_index"
	KindUnreadable    = "unreadable"
	ViaLink           = "link"
	ViaCommonPath     = "common_path"
	ViaRobots         = "robots.txt"
	maxSitemapURLs    = 50_000
	maxSitemapBytes   = 50 << 20 // the protocol's 50 MB, uncompressed
	maxTitleRunes     = 200
	maxLinksInPage    = 200
	maxSitemapDetails = 20
)

// commonFeedPaths are tried, in order, only when a page links no feed.
var commonFeedPaths = []string{"/feed", "/rss", "/rss.xml", "/atom.xml", "/index.xml"}

// Found is one source of a page.
type Found struct {
	URL string `json:"url"`
	// Kind is feed, news_sitemap, sitemap, sitemap_index, or unreadable
	// (named but not read: Error says why).
	Kind string `json:"kind"`
	// Format is the feed's format (rss, atom, json); empty for sitemaps.
	Format string `json:"format,omitempty"`
	Title  string `json:"title,omitempty"`
	// Via says how it was found: link (the page's <link rel=alternate>),
	// common_path (a usual address, tried because the page links none),
	// robots.txt, or the URL of the index that lists it.
	Via string `json:"via"`
	// Items counts a feed's items or a sitemap's URLs (an index's
	// sitemaps), as read.
	Items int    `json:"items"`
	Error string `json:"error,omitempty"`
}

// Result is what a discovery found.
type Result struct {
	Page    string  `json:"page"`
	Sources []Found `json:"sources"`
}

// Discoverer runs discoveries through one fetcher within one set of
// limits, for a program that serves them (the web program).
type Discoverer struct {
	Fetcher Fetcher
	Limits  Limits
}

// Discover is Discover with d's fetcher and limits.
func (d Discoverer) Discover(ctx context.Context, pageURL string) (Result, error) {
	return Discover(ctx, d.Fetcher, pageURL, d.Limits)
}

// DiscoverThrough is Discover with every fetch through proxy, a name of
// the operator's list ("" is direct): a crawler discovers a page's
// sources the way it fetches the page.
func (d Discoverer) DiscoverThrough(ctx context.Context, pageURL, proxy string) (Result, error) {
	return Discover(ctx, through{Fetcher: d.Fetcher, proxy: proxy}, pageURL, d.Limits)
}

// Discover fetches pageURL and lists its feeds and sitemaps. It fails
// only when the page itself cannot be fetched; a source that cannot be
// read is listed as unreadable with its error.
func Discover(ctx context.Context, f Fetcher, pageURL string, lim Limits) (Result, error) {
	res := Result{Page: pageURL, Sources: []Found{}}
	page, err := f.Fetch(ctx, watch.FetchRequest{URL: pageURL})
	if err != nil {
		return res, fmt.Errorf("fetch the page: %w", err)
	}
	base := page.FinalURL
	if base == nil {
		base, _ = url.Parse(pageURL)
	}
	linked := feedLinks(page.HTML, base)
	for i, l := range linked {
		if i >= lim.Feeds {
			res.Sources = append(res.Sources, Found{URL: l.URL, Kind: KindUnreadable, Via: ViaLink, Title: l.Title,
				Error: fmt.Sprintf("not read: the page links more than %d feeds", lim.Feeds)})
			continue
		}
		found := readFeed(ctx, f, l.URL, ViaLink)
		if found.Title == "" {
			found.Title = l.Title
		}
		res.Sources = append(res.Sources, found)
	}
	if len(linked) == 0 {
		for _, p := range commonFeedPaths {
			u := base.ResolveReference(&url.URL{Path: p}).String()
			if found := readFeed(ctx, f, u, ViaCommonPath); found.Kind == KindFeed {
				res.Sources = append(res.Sources, found)
				break
			}
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}

	sitemaps, err := f.Sitemaps(ctx, base.String(), "")
	if err != nil {
		res.Sources = append(res.Sources, Found{URL: base.ResolveReference(&url.URL{Path: "/robots.txt"}).String(),
			Kind: KindUnreadable, Via: ViaRobots, Error: watch.CleanText(err.Error())})
		return res, nil
	}
	listed := map[string]bool{}
	named := dedupe(sitemaps)
	for _, sm := range named {
		listed[sm] = true
	}
	for i, sm := range named {
		if i >= lim.Sitemaps {
			res.Sources = append(res.Sources, Found{URL: sm, Kind: KindUnreadable, Via: ViaRobots,
				Error: fmt.Sprintf("not read: robots.txt names more than %d sitemaps", lim.Sitemaps)})
			continue
		}
		found, children := readSitemap(ctx, f, sm, ViaRobots)
		res.Sources = append(res.Sources, found)
		// An index is followed one level: its first sitemaps say whether
		// it lists news sitemaps.
		read := 0
		for _, child := range children {
			if read >= lim.IndexChildren {
				break
			}
			if listed[child] {
				continue
			}
			listed[child] = true
			read++
			c, _ := readSitemap(ctx, f, child, sm)
			res.Sources = append(res.Sources, c)
		}
	}
	return res, nil
}

// feedLink is a feed a page links.
type feedLink struct{ URL, Title string }

// feedTypes are the media types of <link rel=alternate> that name a feed.
var feedTypes = map[string]bool{
	"application/rss+xml": true, "application/atom+xml": true, "application/feed+json": true,
	"application/json": true, "application/rdf+xml": true, "application/x-rss+xml": true,
}

// feedLinks returns the feeds the page links with <link rel="alternate">,
// in document order, without duplicates, resolved against base.
func feedLinks(page []byte, base *url.URL) []feedLink {
	z := html.NewTokenizer(bytes.NewReader(page))
	var out []feedLink
	seen := map[string]bool{}
	for len(out) < maxLinksInPage {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		name, hasAttr := z.TagName()
		if atom.Lookup(name) != atom.Link || !hasAttr {
			continue
		}
		var rel, typ, href, title string
		for {
			k, v, more := z.TagAttr()
			switch string(k) {
			case "rel":
				rel = strings.ToLower(string(v))
			case "type":
				typ = strings.ToLower(strings.TrimSpace(string(v)))
			case "href":
				href = strings.TrimSpace(string(v))
			case "title":
				title = string(v)
			}
			if !more {
				break
			}
		}
		if !slices.Contains(strings.Fields(rel), "alternate") || !feedTypes[typ] || href == "" {
			continue
		}
		ref, err := url.Parse(href)
		if err != nil {
			continue
		}
		u := base.ResolveReference(ref)
		if u.Scheme != "http" && u.Scheme != "https" {
			continue
		}
		u.Fragment = ""
		if s := u.String(); !seen[s] {
			seen[s] = true
			out = append(out, feedLink{URL: s, Title: clip(watch.CleanText(title))})
		}
	}
	return out
}

// readFeed fetches and parses one feed.
func readFeed(ctx context.Context, f Fetcher, feedURL, via string) Found {
	found := Found{URL: feedURL, Kind: KindUnreadable, Via: via}
	res, err := f.Fetch(ctx, watch.FetchRequest{URL: feedURL, Want: watch.ContentFeed})
	if err != nil {
		found.Error = watch.CleanText(err.Error())
		return found
	}
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(res.Body))
	if err != nil {
		found.Error = "not a feed: " + watch.CleanText(err.Error())
		return found
	}
	found.Kind, found.Format, found.Title, found.Items = KindFeed, feed.FeedType, clip(watch.CleanText(feed.Title)), len(feed.Items)
	return found
}

// newsNamespace is the namespace of Google News sitemaps' elements.
const newsNamespace = "http://www.google.com/schemas/sitemap-news/0.9"

// readSitemap fetches and reads one sitemap: its kind and URL count, and
// for an index the sitemaps it lists (at most maxSitemapDetails).
func readSitemap(ctx context.Context, f Fetcher, smURL, via string) (Found, []string) {
	found := Found{URL: smURL, Kind: KindUnreadable, Via: via}
	var (
		kind     string
		count    int
		children []string
		scanErr  error
		scanned  bool
	)
	// Streamed within the protocol's 50 MB, as the checks read it: a
	// news sitemap larger than the body cap is still found.
	res, err := f.Fetch(ctx, watch.FetchRequest{URL: smURL, Want: watch.ContentSitemap, MaxBytes: maxSitemapBytes,
		Read: func(body io.Reader, _ *url.URL) error {
			kind, count, children, scanErr = scanSitemap(body)
			scanned = true
			return nil
		}})
	if err != nil {
		found.Error = watch.CleanText(err.Error())
		return found, nil
	}
	if !scanned {
		kind, count, children, scanErr = scanSitemap(bytes.NewReader(res.Body))
	}
	if err := scanErr; err != nil {
		found.Error = "not a sitemap: " + watch.CleanText(err.Error())
		return found, nil
	}
	found.Kind, found.Items = kind, count
	return found, children
}

// scanSitemap streams a sitemap: a urlset (news when any element is in
// the news namespace) or a sitemapindex, counting its <loc> entries up to
// the protocol's 50,000. The decoder is strict about nothing a real
// sitemap gets wrong (HTML entities, unknown encodings' labels) and
// expands no entity beyond XML's five.
func scanSitemap(r io.Reader) (kind string, count int, children []string, err error) {
	dec := xml.NewDecoder(sourceparse.BoundRuns(r, sourceparse.MaxRun))
	dec.Strict = false
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) { return in, nil }
	var (
		root   string
		inLoc  bool
		news   bool
		locBuf strings.Builder
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if root == "" {
				return "", 0, nil, err
			}
			break // a cut or broken tail: what was read stands
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
				if root != "urlset" && root != "sitemapindex" {
					return "", 0, nil, fmt.Errorf("root element <%s>, want <urlset> or <sitemapindex>", root)
				}
			}
			if t.Name.Space == newsNamespace {
				news = true
			}
			if t.Name.Local == "loc" {
				inLoc = true
				locBuf.Reset()
			}
		case xml.CharData:
			if inLoc && locBuf.Len() < 2048 {
				locBuf.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "loc" && inLoc {
				inLoc = false
				count++
				if root == "sitemapindex" && len(children) < maxSitemapDetails {
					if u, err := url.Parse(strings.TrimSpace(locBuf.String())); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
						children = append(children, u.String())
					}
				}
				if count >= maxSitemapURLs {
					return kindOf(root, news), count, children, nil
				}
			}
		}
	}
	if root == "" {
		return "", 0, nil, errors.New("empty document")
	}
	return kindOf(root, news), count, children, nil
}

func kindOf(root string, news bool) string {
	switch {
	case root == "sitemapindex":
		return KindSitemapIndex
	case news:
		return KindNewsSitemap
	}
	return KindSitemap
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxTitleRunes {
		return string(r[:maxTitleRunes]) + "…"
	}
	return s
}

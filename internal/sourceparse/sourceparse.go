// Package sourceparse reads the items of a page's feed (RSS, Atom, JSON
// Feed, with gofeed) or news sitemap (streamed through encoding/xml) into
// links: each item's URL normalised as a homepage link's is, its title as
// its text, and the publication time the source states. Everything it
// reads came from the network and may lie: items beyond the caps are
// counted and left out, texts are cleaned and clipped, a publication time
// further ahead than watch.MaxFutureSkew is dropped (the item is kept), and
// no entity beyond XML's own is expanded.
package sourceparse

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mmcdole/gofeed"

	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Limits bound what one source check keeps.
type Limits struct {
	// MaxItems is the most links kept; the rest are counted in
	// Result.Truncated. Default watch.MaxSourceItems.
	MaxItems int
	// MaxTextRunes is the longest text kept, in runes; a longer one is cut
	// and ends with "…", as a homepage link's. Default 300.
	MaxTextRunes int
	// MaxKeptBytes bounds the bytes of the URLs and texts kept; the items
	// past it are counted in Result.Truncated, as past MaxItems. It keeps
	// a streamed sitemap's memory within SitemapCost whatever its items
	// hold. Default DefaultMaxKeptBytes, 4 MiB: 5,000 items of a real
	// news sitemap hold about 1.5 MB.
	MaxKeptBytes int
}

// DefaultMaxKeptBytes is Limits.MaxKeptBytes' default.
const DefaultMaxKeptBytes = 4 << 20

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxItems <= 0 {
		l.MaxItems = watch.MaxSourceItems
	}
	if l.MaxTextRunes <= 0 {
		l.MaxTextRunes = 300
	}
	if l.MaxKeptBytes <= 0 {
		l.MaxKeptBytes = DefaultMaxKeptBytes
	}
	return l
}

// Result is what a source's body held.
type Result struct {
	// Links are the items kept, in the source's order, one per URL.
	Links []watch.Link
	// Truncated counts the distinct items left out by MaxItems (for a
	// sitemap, of its first watch.MaxSitemapURLs).
	Truncated int
	// Skipped counts items without a usable URL (none, not http(s),
	// malformed), and duplicates of an item already kept.
	Skipped int
	// Title is the feed's own title; empty for a sitemap.
	Title string
}

// ErrSitemapIndex says a sitemap is an index of sitemaps, not a list of
// stories: discovery lists the news sitemaps an index names.
var ErrSitemapIndex = errors.New("the sitemap is an index of other sitemaps, not a list of stories; " +
	"the page's next discovery lists the news sitemaps it names")

// Parse reads body, the source of kind watch.SourceFeed or
// watch.SourceSitemap fetched from base, checked at now.
func Parse(kind string, body []byte, base *url.URL, now time.Time, lim Limits) (Result, error) {
	lim = lim.WithDefaults()
	switch kind {
	case watch.SourceFeed:
		return Feed(body, base, now, lim)
	case watch.SourceSitemap:
		return Sitemap(bytes.NewReader(body), base, now, lim)
	}
	return Result{}, fmt.Errorf("unknown source kind %q", kind)
}

// Cost is about the most bytes reading a body of n bytes of kind takes,
// the body included, for a parse budget: gofeed holds a feed's document
// and its items several times over (a 20 MiB feed of two huge titles
// allocates about 7 times its size), while a sitemap is streamed.
func Cost(kind string, n int) int64 {
	if kind == watch.SourceFeed {
		return 8 * int64(n)
	}
	return 4 * int64(n)
}

// SitemapCost is about the most bytes a streamed sitemap's read holds
// under lim, whatever the length of its body: the items kept
// (MaxKeptBytes), a hash of each URL read (watch.MaxSitemapURLs of them),
// and the decoder with its longest token (MaxRun).
func SitemapCost(lim Limits) int64 {
	lim = lim.WithDefaults()
	return int64(lim.MaxKeptBytes) + int64(lim.MaxItems)*int64(unsafe.Sizeof(watch.Link{})) + watch.MaxSitemapURLs*48 + 8*MaxRun
}

// collector keeps the items of one source within the limits.
type collector struct {
	base *url.URL
	now  time.Time
	lim  Limits
	// seen holds a hash of each URL read: a sitemap names up to 50,000,
	// and their hashes cost a fortieth of their text. Two URLs of one
	// source sharing a 64-bit hash would lose one item: 50,000 URLs make
	// that about one chance in 10^10.
	seen map[uint64]struct{}
	hash maphash.Seed
	kept int // bytes of the URLs and texts in res.Links
	res  Result
}

func newCollector(base *url.URL, now time.Time, lim Limits) *collector {
	return &collector{base: base, now: now, lim: lim.WithDefaults(), seen: map[uint64]struct{}{}, hash: maphash.MakeSeed()}
}

// add keeps one item, or counts why it is not kept.
func (c *collector) add(rawURL, title string, published *time.Time) {
	u, err := urlnorm.Resolve(c.base, rawURL)
	if err != nil {
		c.res.Skipped++
		return
	}
	h := maphash.String(c.hash, u)
	if _, dup := c.seen[h]; dup {
		c.res.Skipped++ // a duplicate GUID, or the same story twice
		return
	}
	c.seen[h] = struct{}{}
	text := cleanClip(title, c.lim.MaxTextRunes)
	if len(c.res.Links) >= c.lim.MaxItems || c.kept+len(u)+len(text) > c.lim.MaxKeptBytes {
		c.res.Truncated++
		return
	}
	c.kept += len(u) + len(text)
	l := watch.Link{URL: u, Text: text}
	if published != nil && !published.IsZero() && !published.After(c.now.Add(watch.MaxFutureSkew)) && published.Year() > 1970 {
		p := published.UTC().Truncate(time.Second)
		l.PublishedAt = &p
	}
	c.res.Links = append(c.res.Links, l)
}

// cleanClip returns s cleaned (watch.CleanText) and clipped to n runes.
// It cuts first: cleaning a 10 MB title to keep 300 runes of it would
// read it all.
func cleanClip(s string, n int) string {
	if limit := 8 * n; len(s) > limit {
		s = s[:limit]
	}
	return Clip(watch.CleanText(s), n)
}

// Clip returns s cut to at most n runes, the last one "…" when it was cut.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return strings.TrimSpace(s[:i]) + "…"
}

// Feed reads an RSS, Atom or JSON feed with gofeed. An item's URL is its
// link (its GUID when that is a permalink URL and it has no link), its
// text its title (its description's start when it has none), and its
// publication time its published date (else its updated date).
func Feed(body []byte, base *url.URL, now time.Time, lim Limits) (Result, error) {
	feed, err := gofeed.NewParser().Parse(bytes.NewReader(body))
	if err != nil {
		return Result{}, fmt.Errorf("not a feed gofeed can read: %w", err)
	}
	c := newCollector(base, now, lim)
	if feed.Link != "" {
		// Relative item links are relative to the feed's site.
		if site, err := url.Parse(feed.Link); err == nil && site.IsAbs() {
			c.base = site
		}
	}
	c.res.Title = cleanClip(feed.Title, 300)
	for _, it := range feed.Items {
		if it == nil {
			continue
		}
		if len(c.res.Links) >= c.lim.MaxItems {
			c.res.Truncated++
			continue
		}
		link := it.Link
		if link == "" && strings.HasPrefix(it.GUID, "http") {
			link = it.GUID
		}
		title := it.Title
		if strings.TrimSpace(title) == "" {
			title = cleanClip(it.Description, c.lim.MaxTextRunes)
		}
		published := it.PublishedParsed
		if published == nil {
			published = it.UpdatedParsed
		}
		c.add(link, title, published)
	}
	return c.res, nil
}

// newsNamespace is the namespace of Google News sitemaps' elements.
const newsNamespace = "http://www.google.com/schemas/sitemap-news/0.9"

// maxField is the most bytes of one element's text a sitemap is read
// for: a URL is at most 2,048 characters, a news title a line.
const maxField = 4 << 10

// Sitemap streams a sitemap (a urlset; a news sitemap's news:title and
// news:publication_date give an item's text and publication time) within
// the protocol's 50,000 URLs: the URLs past it are not read. It keeps at
// most maxField bytes of an element's text, and reads r through
// BoundRuns, so that no run of text or markup longer than MaxRun reaches
// encoding/xml (which reads a run whole): what it holds stays within
// SitemapCost however long r is, and a fetcher may stream a body of the
// protocol's 50 MB into it. The decoder expands XML's five
// entities and character references, never a document's own (no entity
// bomb). A sitemap index is ErrSitemapIndex.
func Sitemap(r io.Reader, base *url.URL, now time.Time, lim Limits) (Result, error) {
	dec := xml.NewDecoder(BoundRuns(r, MaxRun))
	dec.Strict = false
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) { return in, nil }
	c := newCollector(base, now, lim)
	var (
		root          string
		field         string // the element whose text is being read
		text          bytes.Buffer
		loc, title    string
		published     *time.Time
		inURL         bool
		urls          int
		newsPublished string
	)
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if root == "" {
				return Result{}, fmt.Errorf("not a sitemap: %w", err)
			}
			break // a cut or broken tail: what was read stands
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = t.Name.Local
				switch root {
				case "sitemapindex":
					return Result{}, ErrSitemapIndex
				case "urlset":
				default:
					return Result{}, fmt.Errorf("not a sitemap: root element <%s>, want <urlset>", root)
				}
				continue
			}
			switch t.Name.Local {
			case "url":
				inURL, loc, title, published, newsPublished = true, "", "", nil, ""
			case "loc", "title", "publication_date":
				field = t.Name.Local
				text.Reset()
			}
		case xml.CharData:
			if field != "" && text.Len() < maxField {
				text.Write(t[:min(len(t), maxField-text.Len())])
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "loc", "title", "publication_date":
				if field == t.Name.Local && inURL {
					value := strings.TrimSpace(text.String())
					switch field {
					case "loc":
						loc = value
					case "title":
						title = value
					case "publication_date":
						newsPublished = value
					}
				}
				field = ""
			case "url":
				if !inURL {
					continue
				}
				inURL = false
				urls++
				if newsPublished != "" {
					published = parseW3CDate(newsPublished)
				}
				c.add(loc, title, published)
				if urls >= watch.MaxSitemapURLs {
					return c.res, nil
				}
			}
		}
	}
	if root == "" {
		return Result{}, errors.New("not a sitemap: empty document")
	}
	return c.res, nil
}

// parseW3CDate reads a sitemap's date (W3C Datetime: a date, or a date
// and time with a zone), nil when it is none of those.
func parseW3CDate(s string) *time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t
		}
	}
	return nil
}

// MaxRun is the longest run of text, or of markup between < and >, that a
// streamed sitemap hands encoding/xml: four times the text kept of an
// element (maxField) leaves room for entities and markup of any real
// sitemap.
const MaxRun = 4 * maxField

// BoundRuns returns a reader of r in which each run of text longer than
// max bytes is cut to its first max (at a UTF-8 boundary, so the text
// stays valid), and a run of markup longer than max is cut likewise,
// which breaks the document there: a sitemap is read up to it.
func BoundRuns(r io.Reader, max int) io.Reader {
	return &runBounder{r: r, max: max}
}

type runBounder struct {
	r      io.Reader
	max    int
	run    int  // bytes of the current run passed on
	markup bool // inside < >
	cut    bool // the current run reached max: the rest of it is dropped
}

func (b *runBounder) Read(p []byte) (int, error) {
	for {
		n, err := b.r.Read(p)
		w := 0
		for _, c := range p[:n] {
			switch {
			case c == '<' || c == '>' && b.markup:
				b.markup, b.run, b.cut = c == '<', 0, false
			case b.cut:
				continue
			case b.run >= b.max && (c < 0x80 || c >= 0xC0):
				// Past max, and not inside a rune begun before it.
				b.cut = true
				continue
			default:
				b.run++
			}
			p[w] = c
			w++
		}
		if w > 0 || err != nil {
			return w, err
		}
	}
}

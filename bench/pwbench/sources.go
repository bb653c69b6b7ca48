package pwbench

import (
	"fmt"
	"html"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// Source kinds as updates.source names them.
const (
	kindHomepage = "homepage"
	kindFeed     = "feed"
	kindSitemap  = "sitemap"
)

// farmDoc is a feed or a news sitemap that a farm page serves beside its
// homepage (pwbench e2e -sources). It changes with its page: its version at
// any instant is the page's.
type farmDoc struct {
	kind    string // kindFeed or kindSitemap
	path    string // on the page's host
	content content

	mu      sync.Mutex
	cachedV int
	cached  []byte
	served  map[int]bool
}

// body returns the document at version v and notes that v was served.
func (d *farmDoc) body(v int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cachedV != v {
		d.cached, d.cachedV = d.content.render(v), v
	}
	d.served[v] = true
	return d.cached
}

// servedVersions returns the versions served at least once.
func (d *farmDoc) servedVersions() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int, 0, len(d.served))
	for v := range d.served {
		out = append(out, v)
	}
	return out
}

// The stories of a synthetic portal with -sources. Each round brings
// perRound homepage stories, one story only its feed lists and one only
// its news sitemap lists (none with -shared-stories-only: then the pipeline
// records the same stories with the sources as without them). Of the homepage's stories a third are in the
// feed and the sitemap too, a third in the feed alone, a third in the
// sitemap alone, so every pair of sources races for some story.
const (
	feedPath    = "feed.xml"
	sitemapPath = "news-sitemap.xml"
)

// inFeed and inSitemap say which homepage stories a source lists too.
func inFeed(seq int) bool    { return seq%3 != 2 }
func inSitemap(seq int) bool { return seq%3 != 1 }

// onlyPath is the path of the story k that only the source kind lists.
func (s *synthPage) onlyPath(kind string, k int) string {
	dir := "wire"
	if kind == kindFeed {
		dir = "briefs"
	}
	return fmt.Sprintf("%s%s/%d-%s.html", s.basePath, dir, k, slugWords[(k+s.idx)%len(slugWords)])
}

// sourceDocs returns the feed and the news sitemap of the page.
func (s *synthPage) sourceDocs() []*farmDoc {
	return []*farmDoc{
		{kind: kindFeed, path: s.basePath + feedPath, content: &sourceDoc{s: s, kind: kindFeed}, cachedV: -1, served: map[int]bool{}},
		{kind: kindSitemap, path: s.basePath + sitemapPath, content: &sourceDoc{s: s, kind: kindSitemap}, cachedV: -1, served: map[int]bool{}},
	}
}

// sourceDoc is the feed or the news sitemap of a synthetic page. It lists
// the stories of the last visible rounds, as the homepage does, whether or
// not the homepage keeps its old ones (-keep-news): feeds age out.
type sourceDoc struct {
	s    *synthPage
	kind string
}

// story is one item of a feed or a sitemap.
type story struct {
	url   string
	title string
	at    time.Time
}

// storyEpoch dates the stories: item k of a round is k minutes after it,
// in the past whatever the clock says, so no date is dropped as a lie.
var storyEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (d *sourceDoc) stories(v int) []story {
	s := d.s
	var out []story
	title := func(seed uint64) string {
		rng := rand.New(rand.NewPCG(s.cfg.seed^0x51a7e, uint64(s.idx)<<32|seed))
		b := pageBuilder{rng: rng, lang: s.lang}
		return b.words(6 + rng.IntN(5))
	}
	// Newest first, as feeds and sitemaps list them.
	for k := v + s.cfg.visible - 1; k >= v && !s.cfg.sharedStoriesOnly; k-- {
		out = append(out, story{url: "http://" + s.host + s.onlyPath(d.kind, k), title: title(1<<31 | uint64(k)),
			at: storyEpoch.Add(time.Duration(k) * time.Minute)})
	}
	for seq := (v+s.cfg.visible)*s.cfg.perRound - 1; seq >= v*s.cfg.perRound; seq-- {
		if d.kind == kindFeed && !inFeed(seq) || d.kind == kindSitemap && !inSitemap(seq) {
			continue
		}
		out = append(out, story{url: "http://" + s.host + s.newsPath(seq), title: title(uint64(seq)),
			at: storyEpoch.Add(time.Duration(seq/s.cfg.perRound) * time.Minute)})
	}
	return out
}

func (d *sourceDoc) contentType() string {
	if d.kind == kindFeed {
		return "application/rss+xml; charset=utf-8"
	}
	return "application/xml; charset=utf-8"
}

func (d *sourceDoc) lastVersion() int { return -1 }

func (d *sourceDoc) links(v int) []string {
	st := d.stories(v)
	out := make([]string, len(st))
	for i, x := range st {
		out[i] = x.url
	}
	return out
}

func (d *sourceDoc) render(v int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	if d.kind == kindFeed {
		fmt.Fprintf(&b, "<rss version=\"2.0\"><channel><title>Portal %d</title><link>http://%s%s</link><description>Latest</description>\n",
			d.s.idx, d.s.host, d.s.basePath)
		for _, x := range d.stories(v) {
			fmt.Fprintf(&b, "<item><title>%s</title><link>%s</link><guid>%s</guid><pubDate>%s</pubDate></item>\n",
				html.EscapeString(x.title), x.url, x.url, x.at.Format(time.RFC1123Z))
		}
		b.WriteString("</channel></rss>\n")
		return []byte(b.String())
	}
	b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">` + "\n")
	for _, x := range d.stories(v) {
		fmt.Fprintf(&b, "<url><loc>%s</loc><news:news><news:publication><news:name>Portal %d</news:name><news:language>%s</news:language></news:publication>"+
			"<news:publication_date>%s</news:publication_date><news:title>%s</news:title></news:news></url>\n",
			x.url, d.s.idx, d.s.lang.code, x.at.Format(time.RFC3339), html.EscapeString(x.title))
	}
	b.WriteString("</urlset>\n")
	return []byte(b.String())
}

package discover_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
)

const rss = `<?xml version="1.0"?><rss version="2.0"><channel><title>Ministry news</title>
<item><title>One</title><link>https://m.example/1</link></item><item><title>Two</title><link>https://m.example/2</link></item>
</channel></rss>`

const atomFeed = `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Press releases</title>
<entry><title>A</title><link href="https://m.example/a"/><id>a</id><updated>2026-12-01T00:00:00Z</updated></entry></feed>`

const newsSitemap = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
<url><loc>https://m.example/story</loc><news:news><news:publication_date>2026-12-01T08:00:00+01:00</news:publication_date><news:title>A story</news:title></news:news></url>
</urlset>`

func sitemapIndex(base string) string {
	return `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>` + base + `/plain.xml.gz</loc></sitemap><sitemap><loc>` + base + `/news.xml</loc></sitemap></sitemapindex>`
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// portal serves a homepage with two feed links and a robots.txt naming a
// news sitemap, an index (of a gzipped plain sitemap and the news one), a
// sitemap of 60,000 URLs, an entity bomb, an HTML page and a missing one.
func portal(t *testing.T, home string) *httptest.Server {
	var srv *httptest.Server
	big := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
		strings.Repeat("<url><loc>https://m.example/p</loc></url>", 60_000) + `</urlset>`
	bomb := `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>` +
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&lol2;</loc></url></urlset>`
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, home)
		case "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nDisallow: /private\n\nSitemap: %[1]s/news.xml\nSitemap: %[1]s/index.xml\nSitemap: %[1]s/big.xml\nSitemap: %[1]s/bomb.xml\n", srv.URL)
		case "/feed.xml", "/feed":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, rss)
		case "/atom":
			w.Header().Set("Content-Type", "application/atom+xml")
			fmt.Fprint(w, atomFeed)
		case "/news.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, newsSitemap)
		case "/index.xml":
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprint(w, sitemapIndex(srv.URL))
		case "/plain.xml.gz":
			w.Header().Set("Content-Type", "application/x-gzip")
			w.Write(gzipped(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://m.example/x</loc></url><url><loc>https://m.example/y</loc></url></urlset>`))
		case "/big.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, big)
		case "/bomb.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, bomb)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T) *fetch.Client {
	c, err := fetch.New(fetch.Config{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDiscoverFindsFeedsAndSitemaps(t *testing.T) {
	home := `<html><head><title>Ministry</title>
<link rel="alternate" type="application/rss+xml" title="News (RSS)" href="/feed.xml">
<link rel="Alternate" type="application/atom+xml" href="/atom#top">
<link rel="alternate" type="application/rss+xml" href="/feed.xml">
<link rel="alternate" hreflang="de" href="/de/">
<link rel="stylesheet" type="text/css" href="/s.css">
<link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
</head><body><a href="/x">x</a></body></html>`
	srv := portal(t, home)
	res, err := discover.Discover(context.Background(), client(t), srv.URL+"/", discover.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]discover.Found{}
	for _, s := range res.Sources {
		got[strings.TrimPrefix(s.URL, srv.URL)] = s
	}
	want := map[string]discover.Found{
		"/feed.xml":     {Kind: discover.KindFeed, Format: "rss", Title: "Ministry news", Via: discover.ViaLink, Items: 2},
		"/atom":         {Kind: discover.KindFeed, Format: "atom", Title: "Press releases", Via: discover.ViaLink, Items: 1},
		"/news.xml":     {Kind: discover.KindNewsSitemap, Via: discover.ViaRobots, Items: 1},
		"/index.xml":    {Kind: discover.KindSitemapIndex, Via: discover.ViaRobots, Items: 2},
		"/plain.xml.gz": {Kind: discover.KindSitemap, Via: srv.URL + "/index.xml", Items: 2},
		"/big.xml":      {Kind: discover.KindSitemap, Via: discover.ViaRobots, Items: 50_000},
	}
	for path, w := range want {
		g := got[path]
		g.URL, g.Error = "", ""
		if g != w {
			t.Errorf("%s: %+v, want %+v", path, got[path], w)
		}
	}
	// The news sitemap the index lists too is listed (and fetched) once.
	if n := len(res.Sources); n != 7 {
		t.Errorf("%d sources, want 7: %+v", n, res.Sources)
	}
	// An entity bomb expands nothing: XML's decoder knows no entity a
	// DOCTYPE declares, and reads one <loc>.
	if b := got["/bomb.xml"]; b.Items > 1 {
		t.Errorf("the entity bomb: %+v, want at most its one <loc>", b)
	}
}

// TestDiscoverTriesCommonPathsOnlyWithoutLinks: a page that links no feed
// has its usual feed addresses tried, the first that is a feed kept.
func TestDiscoverTriesCommonPathsOnlyWithoutLinks(t *testing.T) {
	srv := portal(t, `<html><head><title>Plain</title></head><body>no feed links</body></html>`)
	res, err := discover.Discover(context.Background(), client(t), srv.URL+"/", discover.Limits{Feeds: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) == 0 || res.Sources[0].URL != srv.URL+"/feed" || res.Sources[0].Via != discover.ViaCommonPath || res.Sources[0].Kind != discover.KindFeed {
		t.Fatalf("sources %+v, want %s/feed found by its common path first", res.Sources, srv.URL)
	}
}

// TestDiscoverKeepsTheGuard: without private addresses allowed, a page on
// loopback is refused before anything is fetched.
func TestDiscoverKeepsTheGuard(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	c, err := fetch.New(fetch.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := discover.Discover(context.Background(), c, srv.URL+"/", discover.DefaultLimits); err == nil || hits.Load() != 0 {
		t.Fatalf("Discover of a loopback page: %v with %d requests, want a refusal and none", err, hits.Load())
	}
}

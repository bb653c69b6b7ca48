package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
)

// discoverer is the env's discovery: the crawler's client, allowed to
// reach the loopback portals the tests serve, without host spacing.
func (e *env) discoverer() discover.Discoverer {
	e.t.Helper()
	client, err := fetch.New(fetch.Config{AllowPrivate: true, MaxRedirects: fetch.DefaultMaxRedirects})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(client.CloseIdleConnections)
	return discover.Discoverer{Fetcher: client, Limits: discover.DefaultLimits}
}

// portal serves a homepage that links an RSS feed, and a robots.txt that
// names a news sitemap; hits counts the requests it answered.
func portal(t *testing.T) (srv *httptest.Server, hits *atomic.Int64) {
	t.Helper()
	hits = new(atomic.Int64)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<html><head><title>Ministry</title>
				<link rel="alternate" type="application/rss+xml" title="Ministry news" href="/news.rss"></head>
				<body><a href="/story/1">A story</a></body></html>`)
		case "/news.rss":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Ministry news</title>
				<item><title>One</title><link>`+srv.URL+`/story/1</link></item>
				<item><title>Two</title><link>`+srv.URL+`/story/2</link></item></channel></rss>`)
		case "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: %s/news-sitemap.xml\n", srv.URL)
		case "/news-sitemap.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
				xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
				<url><loc>`+srv.URL+`/story/1</loc><news:news><news:publication_date>2026-12-03T06:00:00Z</news:publication_date><news:title>One</news:title></news:news></url>
				</urlset>`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, hits
}

// The API lists a page's feed and its news sitemap, needs a write token,
// refuses what the crawler would not fetch, and a token gets a few
// discoveries a minute.
func TestAPIDiscoverListsFeedsAndSitemaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, hits := portal(t)
	body := fmt.Sprintf(`{"url":%q}`, srv.URL+"/")

	resp, b := e.do("POST", "/api/v1/discover", e.writeTk, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discover: %d %s", resp.StatusCode, b)
	}
	got := decode[discover.Result](t, b)
	kinds := map[string]discover.Found{}
	for _, s := range got.Sources {
		kinds[s.Kind] = s
	}
	if f := kinds["feed"]; f.URL != srv.URL+"/news.rss" || f.Format != "rss" || f.Items != 2 || f.Via != "link" || f.Title != "Ministry news" {
		t.Errorf("the feed: %+v", f)
	}
	if s := kinds["news_sitemap"]; s.URL != srv.URL+"/news-sitemap.xml" || s.Items != 1 || s.Via != "robots.txt" {
		t.Errorf("the news sitemap: %+v", s)
	}
	if len(got.Sources) != 2 {
		t.Errorf("sources %+v, want the feed and the news sitemap", got.Sources)
	}

	before := hits.Load()
	for _, c := range []struct {
		token, body string
		status      int
		detail      string
	}{
		{e.readTok, body, http.StatusForbidden, "may only read"},
		{"", body, http.StatusUnauthorized, "write token"},
		{e.writeTk, `{"url":""}`, http.StatusBadRequest, "give the address"},
		{e.writeTk, `{"url":"ftp://example.org/"}`, http.StatusBadRequest, "http"},
	} {
		resp, b := e.do("POST", "/api/v1/discover", c.token, c.body)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.detail) {
			t.Errorf("token %q, body %s: %d %s; want %d saying %q", c.token, c.body, resp.StatusCode, b, c.status, c.detail)
		}
	}
	if n := hits.Load(); n != before {
		t.Errorf("refused discoveries fetched %d times", n-before)
	}

	// The rate: the first discovery counted, and the minute may turn
	// during the loop, so the limit shows within twice its count.
	limited := false
	for range 2 * discoveriesPerMinute {
		resp, b := e.do("POST", "/api/v1/discover", e.writeTk, body)
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "discoveries in the last minute") {
				t.Errorf("429 without Retry-After or a reason: %s", b)
			}
			limited = true
			break
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("discover: %d %s", resp.StatusCode, b)
		}
	}
	if !limited {
		t.Errorf("%d discoveries of one token in a row were all served", 2*discoveriesPerMinute+1)
	}
}

// The limiter counts per token and minute, and bounds the discoveries
// running at once.
func TestDiscoveryLimiter(t *testing.T) {
	var l discoveryLimiter
	now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	for i := range discoveriesPerMinute {
		done, err := l.take("a", now)
		if err != nil {
			t.Fatalf("discovery %d of a minute: %v", i+1, err)
		}
		done()
		done() // ending twice frees one place
	}
	if _, err := l.take("a", now.Add(30*time.Second)); err != errDiscoveryRate {
		t.Fatalf("one more in the same minute: %v, want the rate refusal", err)
	}
	if done, err := l.take("a", now.Add(time.Minute)); err != nil {
		t.Fatalf("the next minute: %v", err)
	} else {
		done()
	}
	var running []func()
	for i := range discoveriesAtOnce {
		done, err := l.take(fmt.Sprint("token", i), now.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, done)
	}
	if _, err := l.take("other", now.Add(time.Minute)); err != errDiscoveryBusy {
		t.Fatalf("one more while %d run: %v, want the busy refusal", discoveriesAtOnce, err)
	}
	running[0]()
	if _, err := l.take("other", now.Add(time.Minute)); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}

// The page form's second button shows what a portal offers, with the form
// to watch it filled in.
func TestUIDiscoverShowsSourcesAndTheForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv, _ := portal(t)
	resp, page := e.form("/pages/discover", e.writeTk, url.Values{"url": {srv.URL + "/"}})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("discover: %d %s", resp.StatusCode, page)
	}
	for _, want := range []string{`id="sources"`, "news sitemap", "Ministry news", "linked by the page", "named by robots.txt",
		`value="` + srv.URL + `/"`, `formaction="/pages/discover"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the discovery page lacks %q", want)
		}
	}
	if _, page := e.get("/pages", e.writeTk); !strings.Contains(page, "Find its feeds") {
		t.Error("the pages list has no button to find a page's feeds")
	}
	resp, page = e.form("/pages/discover", e.writeTk, url.Values{"url": {"ftp://example.org/"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `id="discover-error"`) {
		t.Errorf("a URL the crawler refuses: %d, want 400 with the reason shown", resp.StatusCode)
	}
}

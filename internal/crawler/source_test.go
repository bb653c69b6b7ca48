package crawler_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A source job fetches the feed conditionally, applies the page's keyword
// rules to its items, sends their digest, says unchanged when the digest
// is the job's, and fails with a message for a body that is no feed.
func TestCheckOfAFeed(t *testing.T) {
	t.Parallel()
	var broken atomic.Bool
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v2"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v2"`)
		if broken.Load() {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "not a feed at all")
			return
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprintf(w, `<rss version="2.0"><channel><title>T</title>
<item><title>Politics: vote</title><link>/politik/1</link><pubDate>Tue, 01 Dec 2026 10:00:00 GMT</pubDate></item>
<item><title>Sport: match</title><link>/sport/2</link></item></channel></rss>`)
	})
	svc := newService(t, &recorder{})
	src := &watch.SourceRef{ID: 4, Kind: watch.SourceFeed, URL: srv.URL + "/feed.xml"}
	job := watch.Job{ID: 1, BaseURL: src.URL, Source: src, Options: &watch.LinkOptions{ExcludeURL: []string{"/sport/"}}}
	task := svc.Check(context.Background(), job)
	if task.Failed() || task.Source == nil || task.Source.ID != 4 || len(task.Context) != 1 || task.ETag != `"v2"` || task.ItemsDigest == "" {
		t.Fatalf("task = %+v, want the politics item alone with the source, ETag and digest", task)
	}
	if l := task.Context[0]; l.URL != srv.URL+"/politik/1" || l.Text != "Politics: vote" || l.PublishedAt == nil ||
		!l.PublishedAt.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("item = %+v", l)
	}
	job.ItemsDigest = task.ItemsDigest
	if again := svc.Check(context.Background(), job); !again.Unchanged || len(again.Context) != 0 {
		t.Fatalf("the same items again = %+v, want unchanged", again)
	}
	job.ETag = `"v2"`
	if cond := svc.Check(context.Background(), job); !cond.NotModified() || cond.Status != 304 {
		t.Fatalf("a conditional fetch = %+v, want 304", cond)
	}
	broken.Store(true)
	job.ETag = ""
	if bad := svc.Check(context.Background(), job); !bad.Failed() || !strings.Contains(bad.Error, "not a feed") {
		t.Fatalf("a body that is no feed = %+v", bad)
	}
}

// fakeDiscoverer answers every discovery with its result.
type fakeDiscoverer struct{ res discover.Result }

func (f fakeDiscoverer) DiscoverThrough(context.Context, string, string) (discover.Result, error) {
	return f.res, nil
}

// A discovery job sends the feeds and news sitemaps of the kinds the page
// chose, and nothing else discovery lists.
func TestDiscoveryKeepsTheChosenKinds(t *testing.T) {
	t.Parallel()
	pub := &recorder{}
	f := fakeDiscoverer{res: discover.Result{Sources: []discover.Found{
		{URL: "https://a.example/rss", Kind: discover.KindFeed, Title: "News"},
		{URL: "https://a.example/news.xml", Kind: discover.KindNewsSitemap},
		{URL: "https://a.example/sitemap.xml", Kind: discover.KindSitemap},
		{URL: "https://a.example/broken", Kind: discover.KindUnreadable},
	}}}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks", Discoverer: f}, nil, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := watch.EncodeJob(watch.Job{ID: 3, BaseURL: "https://a.example/", Discover: true, Sources: []string{"homepage", "feeds"}})
	if err := svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		t.Fatal(err)
	}
	task, err := watch.DecodeTask(pub.msgs[0].Body)
	if err != nil || !task.Discover || len(task.Discovered) != 1 || task.Discovered[0].Kind != watch.SourceFeed || task.Discovered[0].Title != "News" {
		t.Fatalf("discovery task = %+v, %v; want the feed alone", task, err)
	}
}

// A page's cookie goes to its feed on its own origin, never to a feed
// hosted on another; its other headers go to both.
func TestSourceHeadersKeepSecretsHome(t *testing.T) {
	t.Parallel()
	var cookies, languages atomic.Int64
	handler := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Cookie") != "" {
			cookies.Add(1)
		}
		if r.Header.Get("Accept-Language") == "de" {
			languages.Add(1)
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		fmt.Fprint(w, `<rss version="2.0"><channel><title>T</title></channel></rss>`)
	}
	home, elsewhere := serve(t, handler), serve(t, handler)
	svc := newService(t, &recorder{})
	headers := []watch.Header{{Name: "Cookie", Value: "session=1"}, {Name: "Accept-Language", Value: "de"}}
	for _, feed := range []string{home.URL + "/rss", elsewhere.URL + "/rss"} {
		src := &watch.SourceRef{ID: 1, Kind: watch.SourceFeed, URL: feed}
		if task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: feed, PageURL: home.URL + "/", Source: src, Headers: headers}); task.Failed() {
			t.Fatalf("check of %s: %s", feed, task.Error)
		}
	}
	if cookies.Load() != 1 || languages.Load() != 2 {
		t.Fatalf("%d fetches with the cookie, %d with the language; want the cookie at home only, the language at both", cookies.Load(), languages.Load())
	}
}

// A news sitemap is read within its own cap, not the body cap: one of
// 12 MB (over the fetcher's default 10 MiB), gzipped, is read, with its
// first MaxSourceItems stories; past SitemapMaxBytes the check fails as
// too large and sends nothing.
func TestCheckOfALargeSitemap(t *testing.T) {
	t.Parallel()
	var body bytes.Buffer
	zw := gzip.NewWriter(&body)
	fmt.Fprint(zw, `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">`)
	pad := strings.Repeat("x", 1000)
	for i := range 12_000 {
		fmt.Fprintf(zw, "<url><loc>/story/%d</loc><news:news><news:title>Story %d</news:title></news:news><!-- %s --></url>\n", i, i, pad)
	}
	fmt.Fprint(zw, `</urlset>`)
	zw.Close()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(body.Bytes())
	})
	src := &watch.SourceRef{ID: 5, Kind: watch.SourceSitemap, URL: srv.URL + "/news.xml.gz"}
	job := watch.Job{ID: 1, BaseURL: src.URL, Source: src}
	task := newService(t, &recorder{}).Check(context.Background(), job)
	if task.Failed() || len(task.Context) != watch.MaxSourceItems || task.Truncated != 12_000-watch.MaxSourceItems ||
		task.Context[0].URL != srv.URL+"/story/0" || task.Context[0].Text != "Story 0" {
		t.Fatalf("a 12 MB sitemap: error %q, %d items, truncated %d", task.Error, len(task.Context), task.Truncated)
	}

	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	small, err := crawler.New(crawler.Config{TaskQueue: "tasks", SitemapMaxBytes: 1 << 20}, f, &recorder{}, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if task := small.Check(context.Background(), job); !task.Failed() || !strings.Contains(task.Error, "larger than 1048576 bytes") || len(task.Context) != 0 {
		t.Fatalf("a sitemap over SitemapMaxBytes: error %q, %d items; want it too large, nothing sent", task.Error, len(task.Context))
	}
}

package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// newsPortal is a loopback news portal with a homepage, an RSS feed and a
// news sitemap, each listing its own stories.
type newsPortal struct {
	mu                     sync.Mutex
	home, feed, sitemap    []string // story paths, newest first
	published              map[string]time.Time
	srv                    *httptest.Server
	feedHits, sitemapHits  int
	conditionalFeedFetches int
}

func newNewsPortal(t *testing.T) *newsPortal {
	p := &newsPortal{published: map[string]time.Time{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *newsPortal) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	base := p.srv.URL
	switch r.URL.Path {
	case "/robots.txt":
		fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: %s/news-sitemap.xml\n", base)
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><html><head><title>Portal</title>
<link rel="alternate" type="application/rss+xml" title="Portal news" href="/feed.xml"></head><body><main>`)
		for _, s := range p.home {
			fmt.Fprintf(w, `<h2><a href="%s">Homepage: %s</a></h2>`, s, s)
		}
		fmt.Fprint(w, `</main></body></html>`)
	case "/feed.xml":
		p.feedHits++
		etag := fmt.Sprintf(`"f%d"`, len(p.feed))
		if r.Header.Get("If-None-Match") == etag {
			p.conditionalFeedFetches++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Header().Set("ETag", etag)
		fmt.Fprintf(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Portal news</title><link>%s/</link>`, base)
		for _, s := range p.feed {
			fmt.Fprintf(w, `<item><title>Feed: %s</title><link>%s%s</link><guid>%s%s</guid>`, s, base, s, base, s)
			if at, ok := p.published[s]; ok {
				fmt.Fprintf(w, `<pubDate>%s</pubDate>`, at.Format(time.RFC1123Z))
			}
			fmt.Fprint(w, `</item>`)
		}
		fmt.Fprint(w, `</channel></rss>`)
	case "/news-sitemap.xml":
		p.sitemapHits++
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">`)
		for _, s := range p.sitemap {
			fmt.Fprintf(w, `<url><loc>%s%s</loc><news:news><news:publication><news:name>Portal</news:name><news:language>en</news:language></news:publication>`, base, s)
			if at, ok := p.published[s]; ok {
				fmt.Fprintf(w, `<news:publication_date>%s</news:publication_date>`, at.Format(time.RFC3339))
			}
			fmt.Fprintf(w, `<news:title>Sitemap: %s</news:title></news:news></url>`, s)
		}
		fmt.Fprint(w, `</urlset>`)
	default:
		if strings.HasPrefix(r.URL.Path, "/s/") || strings.HasPrefix(r.URL.Path, "/n/") {
			fmt.Fprintf(w, "<!DOCTYPE html><title>%s</title><p>A story.", r.URL.Path)
			return
		}
		http.NotFound(w, r)
	}
}

// set replaces what each of the portal's sources lists.
func (p *newsPortal) set(home, feed, sitemap []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.home, p.feed, p.sitemap = home, feed, sitemap
}

// TestSourcesRecordEveryStoryOnce: a page watched through its homepage,
// its RSS feed and its news sitemap (registered with the real CLI,
// discovered by the crawler) records each new story exactly once, with
// the source that saw it and the publication time that source states;
// the stories it knew before its sources' baselines are not news.
func TestSourcesRecordEveryStoryOnce(t *testing.T) {
	t.Parallel()
	sys := newSystem(t, "PORTALWATCH_SCHEDULER_DISCOVERY_POLL=200ms", "PORTALWATCH_ARTICLES=false")
	p := newNewsPortal(t)
	p.set([]string{"/s/1", "/s/2"}, []string{"/s/2", "/s/3"}, []string{"/s/4", "/s/2"})

	id := sys.add(p.srv.URL+"/", "--interval", "10s", "--sources", "homepage,feeds,sitemaps")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("processor")

	testsvc.Eventually(t, 90*time.Second, "the page's baseline and both sources' baselines", func() (bool, error) {
		var page, sources int
		err := sys.db.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM pages WHERE id = $1 AND baseline_at IS NOT NULL),
			(SELECT count(*) FROM sources WHERE page_id = $1 AND baseline_at IS NOT NULL)`, id).Scan(&page, &sources)
		return page == 1 && sources == 2, err
	})
	out, err := sys.watchctl("sources", fmt.Sprint(id))
	if err != nil || !strings.Contains(out, "/feed.xml") || !strings.Contains(out, "/news-sitemap.xml") || !strings.Contains(out, "Portal news") {
		t.Fatalf("watchctl sources: %v\n%s", err, out)
	}
	if n := len(sys.updates()); n != 0 {
		t.Fatalf("%d updates from the baselines, want none", n)
	}

	feedAt := time.Date(2026, 12, 1, 8, 15, 0, 0, time.UTC)
	sitemapAt := time.Date(2026, 12, 2, 17, 45, 0, 0, time.UTC)
	future := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	p.mu.Lock()
	p.published["/n/feed"], p.published["/n/sitemap"], p.published["/n/liar"] = feedAt, sitemapAt, future
	p.mu.Unlock()
	p.set([]string{"/n/home", "/n/both", "/s/1", "/s/2"},
		[]string{"/n/feed", "/n/liar", "/n/both", "/n/feed", "/s/2", "/s/3"}, // /n/feed twice: a duplicate GUID
		[]string{"/n/sitemap", "/n/both", "/s/4", "/s/2"})

	want := map[string]string{"/n/home": "homepage", "/n/feed": "feed", "/n/sitemap": "sitemap", "/n/liar": "feed", "/n/both": ""}
	type row struct {
		source    string
		published *time.Time
		text      string
	}
	var got map[string][]row
	read := func() (bool, error) {
		got = map[string][]row{}
		rows, err := sys.db.Query(t.Context(), `SELECT url, source, published_at, text FROM updates WHERE page_id = $1`, id)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		for rows.Next() {
			var u string
			var r row
			if err := rows.Scan(&u, &r.source, &r.published, &r.text); err != nil {
				return false, err
			}
			path := strings.TrimPrefix(u, p.srv.URL)
			got[path] = append(got[path], r)
		}
		return len(got) == len(want), rows.Err()
	}
	testsvc.Eventually(t, 90*time.Second, "every new story recorded", read)
	// Every source checks again at least once more: nothing is recorded twice.
	var checked time.Time
	if err := sys.db.QueryRow(t.Context(), `SELECT max(last_checked_at) FROM sources WHERE page_id = $1`, id).Scan(&checked); err != nil {
		t.Fatal(err)
	}
	sys.waitForCheck(id)
	testsvc.Eventually(t, 60*time.Second, "another check of each source", func() (bool, error) {
		var n int
		err := sys.db.QueryRow(t.Context(), `SELECT count(*) FROM sources WHERE page_id = $1 AND last_checked_at > $2`, id, checked).Scan(&n)
		return n == 2, err
	})
	if _, err := read(); err != nil {
		t.Fatal(err)
	}
	for path, source := range want {
		rs := got[path]
		if len(rs) != 1 {
			t.Errorf("%s recorded %d times, want once", path, len(rs))
			continue
		}
		r := rs[0]
		if source != "" && r.source != source {
			t.Errorf("%s recorded from %s, want %s", path, r.source, source)
		}
		switch path {
		case "/n/feed":
			if r.published == nil || !r.published.Equal(feedAt) || r.text != "Feed: /n/feed" {
				t.Errorf("/n/feed: published %v, text %q; want %s and the item's title", r.published, r.text, feedAt)
			}
		case "/n/sitemap":
			if r.published == nil || !r.published.Equal(sitemapAt) || r.text != "Sitemap: /n/sitemap" {
				t.Errorf("/n/sitemap: published %v, text %q; want %s and the news title", r.published, r.text, sitemapAt)
			}
		case "/n/liar":
			if r.published != nil {
				t.Errorf("/n/liar dated %v, a month ahead: want the date dropped", r.published)
			}
		case "/n/home":
			if r.published != nil || r.text != "Homepage: /n/home" {
				t.Errorf("/n/home: published %v, text %q", r.published, r.text)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("updates of %v, want exactly %v", got, want)
	}
	// The homepage's headline replaced a source's text of /n/both without
	// a revision.
	var text, source string
	var revisions int
	if err := sys.db.QueryRow(t.Context(), `SELECT text, source, (SELECT count(*) FROM events WHERE page_id = $1 AND kind = 'link.rewritten')
		FROM links WHERE page_id = $1 AND url = $2`, id, p.srv.URL+"/n/both").Scan(&text, &source, &revisions); err != nil {
		t.Fatal(err)
	}
	if text != "Homepage: /n/both" || source != "homepage" || revisions != 0 {
		t.Errorf("/n/both's link: %q from %s, %d revisions; want the homepage's headline and no revision", text, source, revisions)
	}
	p.mu.Lock()
	conditional := p.conditionalFeedFetches
	p.mu.Unlock()
	if conditional == 0 {
		t.Errorf("the feed was never fetched with its ETag")
	}
	out, err = sys.watchctl("updates", "--json")
	if err != nil || !strings.Contains(out, `"source":"sitemap"`) || !strings.Contains(out, `"published_at":"2026-12-02T17:45:00Z"`) {
		t.Errorf("watchctl updates --json: %v\n%s", err, out)
	}
}

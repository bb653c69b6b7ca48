package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// The API takes a page's sources on create and patch, refuses a source it
// does not know or a list without the homepage with the field named, lists
// the page's feeds and sitemaps, and gives its feeds as OPML; an update
// from a feed says so, with its publication time.
func TestAPISources(t *testing.T) {
	e := newEnv(t)
	w := e.writeTk
	resp, b := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/","sources":["homepage","podcasts"]}`)
	if p := decode[problemDetails](t, b); resp.StatusCode != 422 || len(p.Errors) != 1 || p.Errors[0].Field != "sources" || !strings.Contains(p.Detail, "podcasts") {
		t.Fatalf("an unknown source: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/","sources":["feeds"]}`)
	if p := decode[problemDetails](t, b); resp.StatusCode != 422 || !strings.Contains(p.Detail, "must include homepage") {
		t.Fatalf("sources without the homepage: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/","sources":["feeds","homepage"]}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	page := decode[pageJSON](t, b)
	if strings.Join(page.Sources, ",") != "homepage,feeds" || page.SourcesDiscoveredAt != nil {
		t.Fatalf("created page's sources %v, discovered %v", page.Sources, page.SourcesDiscoveredAt)
	}
	path := fmt.Sprintf("/api/v1/pages/%d", page.ID)
	resp, b = e.do("PATCH", path, w, `{"sources":["homepage","feeds","sitemaps"]}`)
	if resp.StatusCode != 200 || strings.Join(decode[pageJSON](t, b).Sources, ",") != "homepage,feeds,sitemaps" {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	ctx := context.Background()
	if err := e.st.RecordDiscovery(ctx, page.ID, []watch.DiscoveredSource{
		{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/feed.xml", Title: "Front & centre"},
		{Kind: watch.SourceSitemap, URL: "http://127.0.0.1:9/news.xml"},
	}, ""); err != nil {
		t.Fatal(err)
	}
	resp, b = e.do("GET", path+"/sources", e.readTok, "")
	list := decode[struct {
		Sources []sourceJSON `json:"sources"`
	}](t, b)
	if resp.StatusCode != 200 || len(list.Sources) != 2 || list.Sources[0].Kind != "feed" || list.Sources[0].Status != "pending" || !list.Sources[0].Chosen {
		t.Fatalf("sources: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do("GET", "/api/v1/pages/999/sources", e.readTok, ""); resp.StatusCode != 404 {
		t.Fatalf("sources of no page: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", fmt.Sprintf("/pages/%d/sources.opml", page.ID), e.readTok, "")
	opml := string(b)
	if resp.StatusCode != 200 || !strings.Contains(opml, `xmlUrl="http://127.0.0.1:9/feed.xml"`) || !strings.Contains(opml, `text="127.0.0.1:9 — Front &amp; centre"`) ||
		strings.Contains(opml, "news.xml") {
		t.Fatalf("OPML of the feeds: %d\n%s", resp.StatusCode, opml)
	}

	// A story a feed saw first, dated by it.
	feed := list.Sources[0]
	if _, err := e.st.RecordSourceCheck(ctx, watch.SourceCheck{PageID: page.ID, Source: watch.SourceRef{ID: feed.ID, Kind: "feed", URL: feed.URL},
		FetchedAt: time.Now(), Status: 200}, []watch.NewLink{newLink("http://127.0.0.1:9/old", nil)}); err != nil {
		t.Fatal(err)
	}
	published := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	if _, err := e.st.RecordSourceCheck(ctx, watch.SourceCheck{PageID: page.ID, Source: watch.SourceRef{ID: feed.ID, Kind: "feed", URL: feed.URL},
		FetchedAt: time.Now(), Status: 200, Caps: watch.Caps{PerCheck: 10, PerDay: 10}}, []watch.NewLink{newLink("http://127.0.0.1:9/fresh", &published)}); err != nil {
		t.Fatal(err)
	}
	resp, b = e.do("GET", "/api/v1/updates", e.readTok, "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"source":"feed"`) || !strings.Contains(string(b), `"published_at":"2026-12-02T07:00:00Z"`) ||
		!strings.Contains(string(b), fmt.Sprintf(`"source_id":%d`, feed.ID)) {
		t.Fatalf("updates: %d %s", resp.StatusCode, b)
	}
	_, body := e.get(fmt.Sprintf("/pages/%d", page.ID), w)
	if !strings.Contains(body, `id="sources"`) || !strings.Contains(body, "Front &amp; centre") || !strings.Contains(body, "via feed") ||
		!strings.Contains(body, "news sitemap") || !strings.Contains(body, "first check to come") {
		t.Fatalf("the page view:\n%s", body)
	}
	if resp, b := e.do("PATCH", path, w, `{"sources":["homepage","feeds"]}`); resp.StatusCode != 200 {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	if _, body := e.get(fmt.Sprintf("/pages/%d", page.ID), w); !strings.Contains(body, "off: the page is not watched through its news sitemaps") ||
		strings.Contains(body, "not_chosen<") {
		t.Fatalf("the page view of a sitemap no longer chosen:\n%s", body)
	}
}

// GET /sources.opml gives the feeds of every watched page, or of the pages
// of a tag, as one OPML list a feed reader imports: each named after its
// page and its own title, linking the page, its tags as categories; a
// sitemap, a page in the trash and a visitor without a token get none.
func TestFeedsOPML(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	register := func(name, url, tags string, found ...watch.DiscoveredSource) int64 {
		t.Helper()
		resp, b := e.do("POST", "/api/v1/pages", e.writeTk,
			fmt.Sprintf(`{"url":%q,"name":%q,"tags":[%s],"sources":["homepage","feeds","sitemaps"]}`, url, name, tags))
		if resp.StatusCode != 201 {
			t.Fatalf("create %s: %d %s", url, resp.StatusCode, b)
		}
		id := decode[pageJSON](t, b).ID
		if err := e.st.RecordDiscovery(ctx, id, found, ""); err != nil {
			t.Fatal(err)
		}
		return id
	}
	register("Ministry of Health", "http://127.0.0.1:9/health/", `"health","gov"`,
		watch.DiscoveredSource{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/health/press.rss", Title: "Press releases"},
		watch.DiscoveredSource{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/health/speeches.rss", Title: "Ministry of Health"},
		watch.DiscoveredSource{Kind: watch.SourceSitemap, URL: "http://127.0.0.1:9/health/news.xml"})
	register("Ministry of Roads", "http://127.0.0.1:9/roads/", `"gov"`,
		watch.DiscoveredSource{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/roads/feed.atom"})
	trashed := register("Old portal", "http://127.0.0.1:9/old/", `"health"`,
		watch.DiscoveredSource{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/old/feed.rss", Title: "Old news"})
	if _, err := e.st.TrashPage(ctx, trashed); err != nil {
		t.Fatal(err)
	}

	resp, b := e.do("GET", "/sources.opml", e.readTok, "")
	opml := string(b)
	want := []string{
		`<title>Feeds of the watched pages</title>`,
		`text="Ministry of Health — Press releases" title="Ministry of Health — Press releases" type="rss" htmlUrl="http://127.0.0.1:9/health/" xmlUrl="http://127.0.0.1:9/health/press.rss" category="/gov,/health"`,
		`text="Ministry of Health" title="Ministry of Health" type="rss" htmlUrl="http://127.0.0.1:9/health/" xmlUrl="http://127.0.0.1:9/health/speeches.rss"`,
		`text="Ministry of Roads" title="Ministry of Roads" type="rss" htmlUrl="http://127.0.0.1:9/roads/" xmlUrl="http://127.0.0.1:9/roads/feed.atom" category="/gov"`,
	}
	for _, w := range want {
		if !strings.Contains(opml, w) {
			t.Errorf("all feeds: want %s in\n%s", w, opml)
		}
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/x-opml; charset=utf-8" ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="portalwatch-feeds.opml"`) ||
		strings.Contains(opml, "news.xml") || strings.Contains(opml, "Old news") || strings.Count(opml, "<outline") != 3 {
		t.Fatalf("all feeds: %d %v\n%s", resp.StatusCode, resp.Header, opml)
	}

	resp, b = e.do("GET", "/sources.opml?tag=health", e.readTok, "")
	opml = string(b)
	if resp.StatusCode != 200 || strings.Count(opml, "<outline") != 2 || strings.Contains(opml, "roads") ||
		!strings.Contains(opml, "<title>Feeds of the pages tagged health</title>") ||
		!strings.Contains(resp.Header.Get("Content-Disposition"), `filename="portalwatch-feeds-health.opml"`) {
		t.Fatalf("feeds of a tag: %d %v\n%s", resp.StatusCode, resp.Header, opml)
	}
	if resp, b := e.do("GET", "/sources.opml?tag=nothing", e.readTok, ""); resp.StatusCode != 200 || strings.Contains(string(b), "<outline") {
		t.Fatalf("feeds of a tag no page has: %d\n%s", resp.StatusCode, b)
	}
	if resp, b := e.do("GET", "/sources.opml", "", ""); strings.Contains(string(b), "<opml") || !strings.Contains(string(b), "Sign in") {
		t.Fatalf("feeds without a token: %d\n%s", resp.StatusCode, b)
	}
	if _, body := e.get("/pages", e.readTok); !strings.Contains(body, `href="/sources.opml"`) {
		t.Fatalf("the pages list links no feeds' OPML:\n%s", body)
	}
}

// PATCH /api/v1/sources/{id} gives a source its own interval or its
// page's again, with a write token; the listing shows which; bad input
// names the field and says what to send.
func TestAPISourceInterval(t *testing.T) {
	e := newEnv(t)
	resp, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/","interval":"10m","sources":["homepage","feeds"]}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	page := decode[pageJSON](t, b)
	if err := e.st.RecordDiscovery(context.Background(), page.ID, []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: "http://127.0.0.1:9/feed.xml"}}, ""); err != nil {
		t.Fatal(err)
	}
	list := func() sourceJSON {
		t.Helper()
		resp, b := e.do("GET", fmt.Sprintf("/api/v1/pages/%d/sources", page.ID), e.readTok, "")
		l := decode[struct {
			Sources []sourceJSON `json:"sources"`
		}](t, b)
		if resp.StatusCode != 200 || len(l.Sources) != 1 {
			t.Fatalf("sources: %d %s", resp.StatusCode, b)
		}
		return l.Sources[0]
	}
	src := list()
	if src.Interval != "10m0s" || src.IntervalSeconds != 600 || !src.FollowsPage {
		t.Fatalf("before any change: %+v; want the page's 10m", src.SourceSchedule)
	}
	path := fmt.Sprintf("/api/v1/sources/%d", src.ID)
	if resp, b := e.do("PATCH", path, e.readTok, `{"interval":"2m"}`); resp.StatusCode != 403 {
		t.Fatalf("a read token: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", path, e.writeTk, `{"interval":"2m"}`)
	if got := decode[sourceJSON](t, b); resp.StatusCode != 200 || got.Interval != "2m0s" || got.FollowsPage || got.ID != src.ID {
		t.Fatalf("interval 2m: %d %s", resp.StatusCode, b)
	}
	if got := list(); got.IntervalSeconds != 120 || got.FollowsPage {
		t.Fatalf("listed after 2m: %+v", got.SourceSchedule)
	}
	if _, body := e.get(fmt.Sprintf("/pages/%d", page.ID), e.writeTk); !strings.Contains(body, "<td>2m</td>") {
		t.Fatalf("the page view does not show the source's 2m:\n%s", body)
	}
	resp, b = e.do("PATCH", path, e.writeTk, `{"interval":"page"}`)
	if got := decode[sourceJSON](t, b); resp.StatusCode != 200 || got.Interval != "10m0s" || !got.FollowsPage {
		t.Fatalf("interval page: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", path, e.writeTk, `{"paused":true}`)
	if got := decode[sourceJSON](t, b); resp.StatusCode != 200 || !got.Paused || got.Status != "paused" {
		t.Fatalf("paused: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", path, e.writeTk, `{"paused":false}`)
	if got := decode[sourceJSON](t, b); resp.StatusCode != 200 || got.Paused || got.Status != "pending" {
		t.Fatalf("resumed: %d %s; want it pending its silent baseline", resp.StatusCode, b)
	}
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{path, `{"interval":"5s"}`, 422, `the shortest is 10s; or "page"`},
		{path, `{"interval":"often"}`, 422, "is not a duration"},
		{path, `{}`, 400, "give interval"},
		{path, `{"interval":"2m","enabled":false}`, 400, ""},
		{"/api/v1/sources/999", `{"interval":"2m"}`, 404, "no source has id 999"},
		{"/api/v1/sources/x", `{"interval":"2m"}`, 404, "not a source id"},
	} {
		resp, b := e.do("PATCH", c.path, e.writeTk, c.body)
		p := decode[problemDetails](t, b)
		if resp.StatusCode != c.status || !strings.Contains(p.Detail, c.want) {
			t.Errorf("PATCH %s %s: %d %s; want %d with %q", c.path, c.body, resp.StatusCode, b, c.status, c.want)
		}
		if c.status == 422 && (len(p.Errors) != 1 || p.Errors[0].Field != "interval") {
			t.Errorf("PATCH %s %s: errors %+v; want the field interval named", c.path, c.body, p.Errors)
		}
	}
}

func newLink(u string, published *time.Time) watch.NewLink {
	k := shortlink.Key(u)
	return watch.NewLink{Key: k, URL: u, Text: "Story " + u, Code: shortlink.Code(k, 8), PublishedAt: published}
}

// The form's checkboxes choose the sources, on add and on edit.
func TestFormSources(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	w := e.writeTk
	resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"5m"}, "source_feeds": {"on"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add: %d", resp.StatusCode)
	}
	p, err := e.st.Page(context.Background(), 1)
	if err != nil || strings.Join(p.Sources, ",") != "homepage,feeds" {
		t.Fatalf("added page's sources %v, %v", p.Sources, err)
	}
	_, body := e.get("/pages/1", w)
	if !strings.Contains(body, `name="source_feeds" checked`) || strings.Contains(body, `name="source_sitemaps" checked`) ||
		!strings.Contains(body, "No feed or news sitemap found yet") {
		t.Fatalf("the page form:\n%s", body)
	}
	resp, _ = e.form("/pages/1", w, url.Values{"interval": {"5m"}, "source_sitemaps": {"on"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("edit: %d", resp.StatusCode)
	}
	if p, _ := e.st.Page(context.Background(), 1); strings.Join(p.Sources, ",") != "homepage,sitemaps" {
		t.Fatalf("edited page's sources %v", p.Sources)
	}
}

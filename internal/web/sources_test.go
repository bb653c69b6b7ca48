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
	if resp.StatusCode != 200 || !strings.Contains(opml, `xmlUrl="http://127.0.0.1:9/feed.xml"`) || !strings.Contains(opml, `text="Front &amp; centre"`) ||
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
		!strings.Contains(body, "news sitemap") {
		t.Fatalf("the page view:\n%s", body)
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

package web

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// newsOf registers a page of url (reading articles unless off) and records
// a baseline and then one check that finds links, at at, so that each link
// is an update; the page reads their articles when it asks for them.
func (e *env) newsOf(url string, articlesOff bool, at time.Time, links ...watch.NewLink) watch.Page {
	e.t.Helper()
	ctx := context.Background()
	page, err := e.st.CreatePage(ctx, watch.PageSpec{URL: url, ArticlesOff: articlesOff})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at.Add(-time.Minute), Status: 200, Articles: true}, nil); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, Articles: true}, links); err != nil {
		e.t.Fatal(err)
	}
	return page
}

// readArticles does what the extractor does with every article due: it
// stores the article read returns for the link, or leaves it pending when
// read returns false. It returns the ids stored, by link URL.
func (e *env) readArticles(read func(url string) (watch.Article, bool)) map[string]int64 {
	e.t.Helper()
	ctx := context.Background()
	ids := map[string]int64{}
	var left []watch.ArticleWork
	defer func() {
		// What was not read is due again, as an extractor hands back.
		if err := e.st.ReleaseArticleWork(ctx, left); err != nil {
			e.t.Fatal(err)
		}
	}()
	// A claim takes one link of a URL at a time: claim until none is due.
	for {
		work, err := e.st.ClaimArticleWork(ctx, 100, time.Hour)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(work) == 0 {
			return ids
		}
		e.readClaimed(ctx, work, read, ids, &left)
	}
}

// readClaimed reads the claimed work as readArticles says.
func (e *env) readClaimed(ctx context.Context, work []watch.ArticleWork, read func(url string) (watch.Article, bool),
	ids map[string]int64, left *[]watch.ArticleWork) {
	for _, w := range work {
		a, ok := read(w.URL)
		if !ok {
			*left = append(*left, w)
			continue
		}
		if id, known, _, err := e.st.KnownArticle(ctx, w.URL); err != nil {
			e.t.Fatal(err)
		} else if known != "" {
			if err := e.st.FinishArticleWork(ctx, w); err != nil {
				e.t.Fatal(err)
			}
			ids[w.URL] = id
			continue
		}
		if a.URL == "" {
			a.URL = w.URL
		}
		if a.FetchedAt.IsZero() {
			a.FetchedAt = time.Now()
		}
		id, err := e.st.RecordArticle(ctx, w, watch.ArticleOutcome{Article: a, LinkURL: w.URL})
		if err != nil {
			e.t.Fatal(err)
		}
		ids[w.URL] = id
	}
}

// story is the article the tests store for a link: a headline, a lead, a
// date, two authors and a body of two paragraphs.
func story(headline string) watch.Article {
	return watch.Article{Status: watch.ArticleOK, Headline: headline, Description: "The lead of " + headline,
		Body: "First paragraph of " + headline + ".\n\nSecond <b>paragraph</b>.", DatePublished: "2026-11-30T06:00:00+01:00",
		Author: []string{"Anna Muster", "Ben Beispiel"}, InLanguage: "de", Sources: map[string]string{"headline": "json-ld"}}
}

// TestAPIArticles: updates carry their articles (pending, read, none for a
// page that reads none), bodies only with content=full, and an article is
// read whole with its sightings at /api/v1/articles/{id}.
func TestAPIArticles(t *testing.T) {
	e := newEnv(t)
	at := time.Now().Add(-time.Hour)
	e.newsOf("https://zeitung.example/", false, at,
		watch.NewLink{Key: 1, URL: "https://zeitung.example/read", Text: "Read", Code: "c1"},
		watch.NewLink{Key: 2, URL: "https://zeitung.example/later", Text: "Later", Code: "c2"})
	e.newsOf("https://blatt.example/", false, at.Add(time.Second),
		watch.NewLink{Key: 1, URL: "https://zeitung.example/read", Text: "Also read", Code: "c3"})
	e.newsOf("https://plain.example/", true, at.Add(2*time.Second),
		watch.NewLink{Key: 1, URL: "https://plain.example/x", Text: "Plain", Code: "c4"})
	ids := e.readArticles(func(url string) (watch.Article, bool) {
		return story("Gelesen"), strings.HasSuffix(url, "/read")
	})
	id := ids["https://zeitung.example/read"]
	if id == 0 {
		t.Fatalf("no article stored: %v", ids)
	}

	byText := func(path string) map[string]watch.Update {
		t.Helper()
		resp, b := e.do("GET", path, e.readTok, "")
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		out := map[string]watch.Update{}
		for _, u := range decode[struct{ Updates []watch.Update }](t, b).Updates {
			out[u.Text] = u
		}
		return out
	}
	ups := byText("/api/v1/updates")
	if a := ups["Read"].Article; a == nil || a.Status != watch.ArticleOK || a.ID != id || a.Headline != "Gelesen" ||
		a.Description != "The lead of Gelesen" || len(a.Author) != 2 || a.Body != "" {
		t.Errorf("the read update's article: %+v, want it without its body", a)
	}
	if a := ups["Also read"].Article; a == nil || a.ID != id {
		t.Errorf("another page's link to the same story: %+v, want article %d", a, id)
	}
	if a := ups["Later"].Article; a == nil || a.Status != watch.ArticlePending {
		t.Errorf("the update still waiting: %+v, want pending", a)
	}
	if a := ups["Plain"].Article; a != nil {
		t.Errorf("an update of a page that reads no articles: %+v, want none", a)
	}
	full := byText("/api/v1/updates?content=full")
	if a := full["Read"].Article; a == nil || !strings.Contains(a.Body, "Second <b>paragraph</b>.") {
		t.Errorf("content=full: %+v, want the body", a)
	}
	if resp, _ := e.do("GET", "/api/v1/updates?content=some", e.readTok, ""); resp.StatusCode != 400 {
		t.Errorf("content=some: %d, want 400", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/api/v1/removals?content=full", e.readTok, ""); resp.StatusCode != 400 {
		t.Errorf("removals with content=full: %d, want 400", resp.StatusCode)
	}

	path := fmt.Sprintf("/api/v1/articles/%d", id)
	resp, b := e.do("GET", path, e.readTok, "")
	as := decode[watch.ArticleSightings](t, b)
	if resp.StatusCode != 200 || as.ID != id || as.Headline != "Gelesen" || !strings.Contains(as.Body, "First paragraph") ||
		len(as.Sightings) != 2 || as.Sightings[0].Text != "Also read" || as.Sightings[1].Text != "Read" {
		t.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if !strings.Contains(string(b), `"date_published":"2026-11-30T06:00:00+01:00"`) || !strings.Contains(string(b), `"article_body":`) {
		t.Errorf("GET %s does not carry the API names: %s", path, b)
	}
	for _, missing := range []string{fmt.Sprintf("/api/v1/articles/%d", id+1000), "/api/v1/articles/abc", "/api/v1/articles/0"} {
		resp, b := e.do("GET", missing, e.readTok, "")
		if p := decode[problemDetails](t, b); resp.StatusCode != http.StatusNotFound || p.Status != 404 || p.Detail == "" {
			t.Errorf("GET %s: %d %s, want a 404 problem", missing, resp.StatusCode, b)
		}
	}
	if resp, _ := e.do("GET", path, "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
	}
}

// TestFeedsCarryArticles: an entry whose link was read as an article is
// titled with its headline, dated when it says it appeared, signed by its
// authors and summed up by its lead; content=full adds the body, as text
// in every format. The validators change when an article arrives.
func TestFeedsCarryArticles(t *testing.T) {
	e := newEnv(t)
	page := e.newsOf("https://zeitung.example/", false, time.Now().Add(-time.Hour),
		watch.NewLink{Key: 1, URL: "https://zeitung.example/read", Text: "Read", Code: "c1"},
		watch.NewLink{Key: 2, URL: "https://zeitung.example/later", Text: "Later", Code: "c2"})
	e.readArticles(func(url string) (watch.Article, bool) {
		a := story("Gelesen <img src=x onerror=alert(1)>")
		return a, strings.HasSuffix(url, "/read")
	})
	published := time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)
	ups, err := e.st.QueryUpdates(context.Background(), watch.UpdateFilter{PageID: page.ID})
	if err != nil || len(ups) != 2 {
		t.Fatalf("updates %v, %v", ups, err)
	}
	found := ups[0].DiscoveredAt.UTC().Truncate(time.Second) // both found by one check; RSS has seconds only
	parser := gofeed.NewParser()
	for _, ext := range []string{"atom", "rss", "json"} {
		for _, full := range []bool{false, true} {
			path := fmt.Sprintf("/feeds/pages/%d.%s", page.ID, ext)
			if full {
				path += "?content=full"
			}
			resp, body := e.do("GET", path, e.readTok, "")
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			feed, err := parser.Parse(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s does not parse: %v", path, err)
			}
			items := map[string]*gofeed.Item{}
			for _, it := range feed.Items {
				items[it.Link] = it
			}
			read, later := items["https://zeitung.example/read"], items["https://zeitung.example/later"]
			if read == nil || later == nil {
				t.Fatalf("%s: items %v", path, items)
			}
			if read.Title != "Gelesen <img src=x onerror=alert(1)>" || later.Title != "Later" {
				t.Errorf("%s: titles %q and %q, want the headline and the link text", path, read.Title, later.Title)
			}
			if read.PublishedParsed == nil || !read.PublishedParsed.Equal(published) {
				t.Errorf("%s: published %v, want the article's %v", path, read.PublishedParsed, published)
			}
			if later.PublishedParsed == nil || !later.PublishedParsed.Truncate(time.Second).Equal(found) {
				t.Errorf("%s: the pending entry published %v, want when it was found, %v", path, later.PublishedParsed, found)
			}
			if ext != "rss" && (read.UpdatedParsed == nil || !read.UpdatedParsed.Truncate(time.Second).Equal(found)) {
				t.Errorf("%s: updated %v, want when the link was found, %v", path, read.UpdatedParsed, found)
			}
			var authors []string
			for _, a := range read.Authors {
				authors = append(authors, a.Name)
			}
			if ext == "rss" {
				authors = read.DublinCoreExt.Creator
			}
			if strings.Join(authors, ", ") != "Anna Muster, Ben Beispiel" {
				t.Errorf("%s: authors %q, want the article's", path, authors)
			}
			// What each format calls its summary and its content.
			summary, content := read.Description, read.Content
			if ext == "rss" {
				summary, content = html.UnescapeString(read.Description), read.Description
			}
			// RSS has one description: the body when there is one.
			if !(full && ext == "rss") && !strings.Contains(summary, "The lead of Gelesen") {
				t.Errorf("%s: summary %q, want the lead", path, summary)
			}
			hasBody := strings.Contains(content, "Second <b>paragraph</b>.") || strings.Contains(content, "Second &lt;b&gt;paragraph&lt;/b&gt;.")
			if hasBody != full {
				t.Errorf("%s: content %q; body shown %t, want %t", path, content, hasBody, full)
			}
			if full && ext == "rss" && !strings.Contains(content, "<p>First paragraph of Gelesen &lt;img") {
				t.Errorf("%s: the body is not escaped paragraphs: %q", path, content)
			}
			if ext != "json" && (strings.Contains(string(body), "<img") || strings.Contains(string(body), "<b>")) {
				t.Errorf("%s carries the crawled markup as markup:\n%s", path, body)
			}
		}
	}
	if resp, _ := e.do("GET", fmt.Sprintf("/feeds/pages/%d.atom?content=most", page.ID), e.readTok, ""); resp.StatusCode != 400 {
		t.Errorf("content=most: %d, want 400", resp.StatusCode)
	}

	// The pending article arrives: the feed changes though its newest
	// update does not, and a full feed has validators of its own.
	path := fmt.Sprintf("/feeds/pages/%d.atom", page.ID)
	resp, _ := e.do("GET", path, e.readTok, "")
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp, _ := e.do("GET", path+"?content=full", e.readTok, ""); resp.Header.Get("ETag") == etag {
		t.Errorf("the full feed has the ETag of the plain one")
	}
	if resp, _ := e.do("GET", path, e.readTok, "", "If-None-Match", etag); resp.StatusCode != 304 {
		t.Fatalf("an unchanged feed: %d, want 304", resp.StatusCode)
	}
	e.readArticles(func(string) (watch.Article, bool) {
		a := story("Später")
		a.FetchedAt = time.Now().Add(time.Minute) // a second later than the first, whatever the clock's grain
		return a, true
	})
	resp, body := e.do("GET", path, e.readTok, "", "If-None-Match", etag)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Später") {
		t.Errorf("after an article arrived, a request with the old ETag: %d, want 200 with its headline", resp.StatusCode)
	}
	if resp, _ := e.do("GET", path, e.readTok, "", "If-Modified-Since", lastMod); resp.StatusCode != 200 {
		t.Errorf("after an article arrived, a request with the old Last-Modified: %d, want 200", resp.StatusCode)
	}
}

// TestRiverShowsArticles: under a link read as an article, the river shows
// its headline when the link said something else, its lead, when it was
// published and by whom; a pending article is a small label, and a page
// that reads none shows nothing more than before.
func TestRiverShowsArticles(t *testing.T) {
	e := newEnv(t)
	e.newsOf("https://zeitung.example/", false, time.Now().Add(-time.Hour),
		watch.NewLink{Key: 1, URL: "https://zeitung.example/read", Text: "Kurz", Code: "c1"},
		watch.NewLink{Key: 2, URL: "https://zeitung.example/later", Text: "Later", Code: "c2"},
		watch.NewLink{Key: 3, URL: "https://zeitung.example/paid", Text: "Paid", Code: "c3"})
	e.readArticles(func(url string) (watch.Article, bool) {
		switch {
		case strings.HasSuffix(url, "/read"):
			return story("Die lange <Überschrift>"), true
		case strings.HasSuffix(url, "/paid"):
			return watch.Article{Status: watch.ArticlePaywall}, true
		}
		return watch.Article{}, false
	})
	_, body := e.get("/", e.readTok)
	for _, want := range []string{
		`<p class="article-headline">Die lange &lt;Überschrift&gt;</p>`,
		`<p class="lead">The lead of Die lange &lt;Überschrift&gt;</p>`,
		`Published <time datetime="2026-11-30T05:00:00Z"`,
		`by Anna Muster, Ben Beispiel</p>`,
		`<p class="article-status">Article pending</p>`,
		`<p class="article-status">Article behind a paywall</p>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the river lacks %s:\n%s", want, body)
		}
	}
}

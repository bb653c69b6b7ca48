package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

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
	work, err := e.st.ClaimArticleWork(ctx, 100, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, w := range work {
		a, ok := read(w.URL)
		if !ok {
			continue
		}
		if id, known, _, err := e.st.KnownArticle(ctx, w.URL); err != nil {
			e.t.Fatal(err)
		} else if known != "" {
			if err := e.st.LinkArticle(ctx, w, id); err != nil {
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
	return ids
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

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// updates shows when each article says it was published, --json carries
// the whole update with its article, and article prints one article with
// its sightings.
func TestUpdatesAndArticleShowArticles(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	for i, links := range [][]watch.NewLink{nil, {
		{Key: 1, URL: "https://zeitung.example/read", Text: "Read", Code: "c1"},
		{Key: 2, URL: "https://zeitung.example/later", Text: "Later", Code: "c2"},
	}} {
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(i) * time.Minute), Status: 200, Articles: true}, links); err != nil {
			t.Fatal(err)
		}
	}
	work, err := st.ClaimArticleWork(ctx, 10, time.Hour)
	if err != nil || len(work) != 2 {
		t.Fatalf("work %v, %v", work, err)
	}
	var id int64
	for _, w := range work {
		if w.URL != "https://zeitung.example/read" {
			continue
		}
		if id, err = st.RecordArticle(ctx, w, watch.ArticleOutcome{LinkURL: w.URL, Article: watch.Article{
			Status: watch.ArticleOK, URL: w.URL, Headline: "The whole headline", Description: "The lead.",
			Body: "The body.", DatePublished: "2026-11-30T06:00:00Z", Author: []string{"Anna Muster"}, FetchedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := runCLI(t, e, "updates")
	published := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC).Local().Format("2006-01-02 15:04")
	if code != 0 || !strings.Contains(out, "PUBLISHED") || !strings.Contains(out, published) || !strings.Contains(out, "pending") {
		t.Errorf("updates: exit %d %s\n%s", code, errOut, out)
	}
	_, out, _ = runCLI(t, e, "updates", "--json")
	if !strings.Contains(out, `"headline":"The whole headline"`) || !strings.Contains(out, `"status":"pending"`) || strings.Contains(out, "article_body") {
		t.Errorf("updates --json: want the articles without their bodies:\n%s", out)
	}
	if _, out, _ = runCLI(t, e, "updates", "--json", "--content", "full"); !strings.Contains(out, `"article_body":"The body."`) {
		t.Errorf("updates --json --content full: want the body:\n%s", out)
	}

	code, out, _ = runCLI(t, e, "article", fmt.Sprint(id))
	for _, want := range []string{"headline: The whole headline", "authors: Anna Muster", "lead: The lead.", "The body.", "seen 1 time:", "https://zeitung.example/read"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("article %d: exit %d, lacks %q:\n%s", id, code, want, out)
		}
	}
	_, out, _ = runCLI(t, e, "article", fmt.Sprint(id), "--json")
	var as watch.ArticleSightings
	if err := json.Unmarshal([]byte(out), &as); err != nil || as.ID != id || len(as.Sightings) != 1 || as.Body != "The body." {
		t.Errorf("article --json: %v %+v", err, as)
	}
	if code, _, errOut := runCLI(t, e, "article", fmt.Sprint(id+100)); code != exitUsage || !strings.Contains(errOut, "no article has id") {
		t.Errorf("article of a missing id: exit %d %q, want 2", code, errOut)
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestTableAlignsWideCharacters: the columns after a CJK or emoji cell
// start where they do after a Latin one, as a terminal shows them.
func TestTableAlignsWideCharacters(t *testing.T) {
	var out strings.Builder
	tw := newTable(&out)
	fmt.Fprintln(tw, "PAGE\tTEXT\tURL")
	fmt.Fprintln(tw, "1 Ministry\tNew decree\thttps://ministry.example/a")
	fmt.Fprintln(tw, "2 新华网\t北京发布新规定\thttps://news.example/b")
	fmt.Fprintln(tw, "3 Café 🎉\tÜberschrift 🎉\thttps://cafe.example/c")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		i := strings.Index(line, "http")
		if strings.HasPrefix(line, "PAGE") {
			i = strings.Index(line, "URL")
		}
		at = append(at, runewidth.StringWidth(line[:i]))
	}
	for _, a := range at[1:] {
		if a != at[0] {
			t.Fatalf("the URL column starts at display columns %v:\n%s", at, out.String())
		}
	}
}

// TestUpdatesShowPlaces: the PLACE column says where each link stood, and
// "-" for a link whose place is not known.
func TestUpdatesShowPlaces(t *testing.T) {
	var out strings.Builder
	events := groupBursts([]watch.Update{
		{ID: 2, PageID: 1, Text: "Headline", URL: "https://a.example/x",
			Place: watch.Place{Position: 3, Heading: 2, Landmark: watch.LandmarkMain}},
		{ID: 1, PageID: 1, Text: "Old", URL: "https://a.example/old"},
	})
	if err := printEvents(&out, events, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "PLACE") || !strings.Contains(lines[1], "#3 main h2") || !strings.Contains(lines[2], " - ") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestUpdatesShowStatedDates: the PUBLISHED column gives the date a feed or
// sitemap stated whenever the article has none to give, whether it is
// pending, failed or no article, and the article's own date over it.
func TestUpdatesShowStatedDates(t *testing.T) {
	stated := time.Date(2026, 12, 4, 4, 0, 0, 0, time.Local)
	cases := []struct {
		name    string
		article *watch.Article
		want    string
	}{
		{"no article read", nil, "2026-12-04 04:00"},
		{"pending", &watch.Article{Status: watch.ArticlePending}, "2026-12-04 04:00"},
		{"failed", &watch.Article{Status: watch.ArticleError}, "2026-12-04 04:00"},
		{"undated article", &watch.Article{Status: watch.ArticleOK}, "2026-12-04 04:00"},
		{"dated article", &watch.Article{Status: watch.ArticleOK, DatePublished: "2026-12-03T09:30:00Z"},
			time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC).Local().Format("2006-01-02 15:04")},
	}
	for _, c := range cases {
		u := watch.Update{Source: watch.SourceFeed, PublishedAt: &stated, Article: c.article}
		if got := updatePublished(u); got != c.want {
			t.Errorf("%s: PUBLISHED = %q, want %q", c.name, got, c.want)
		}
	}
	if got := updatePublished(watch.Update{Article: &watch.Article{Status: watch.ArticleError}}); got != string(watch.ArticleError) {
		t.Errorf("failed article without a stated date: PUBLISHED = %q, want %q", got, watch.ArticleError)
	}
}

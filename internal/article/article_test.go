package article

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// body is enough paragraphs for the body extractor to take them as an article.
const body = `<article><p>The council voted on Tuesday to close the old bridge for repairs, a decision that
residents had awaited for more than a year while the cracks in its pillars grew wider.</p>
<p>Engineers said the work would take eight months and cost about four million euros, paid by the
region and the city in equal parts, with a temporary footbridge open from June.</p>
<p>Shop owners on both banks worry about the loss of passing trade, and the council promised
to review parking fees in the old town while the bridge is closed.</p></article>`

func testPage(head string) string {
	return "<!doctype html><html><head>" + head + "</head><body><nav><a href=/>Home</a> <a href=/news>News</a></nav>" + body + "<footer>© 2024 The Daily</footer></body></html>"
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestExtractFields(t *testing.T) {
	const pageURL = "https://www.example.co.uk/news/bridge-closes"
	tests := []struct {
		name string
		html string
		url  string // pageURL when ""
		want Article
	}{{
		name: "json-ld @graph with author references",
		html: testPage(`<title>Bridge closes | The Daily</title>
<script type="application/ld+json">{"@context":"https://schema.org","@graph":[
 {"@type":"WebSite","@id":"https://www.example.co.uk/#site","name":"The Daily"},
 {"@type":"Person","@id":"https://www.example.co.uk/#anna","name":"Anna Smith"},
 {"@type":["NewsArticle","ReportageNews"],"headline":"Old bridge to close for eight months",
  "description":"Repairs start in May.","datePublished":"2024-05-01T09:30:00+02:00",
  "dateModified":"2024-05-02T10:00:00+02:00","author":[{"@id":"https://www.example.co.uk/#anna"},{"@type":"Person","name":"Ben Jones"}],
  "inLanguage":"en-GB","articleSection":["Local"],"keywords":"bridge, council, repairs",
  "image":{"@type":"ImageObject","url":"https://cdn.example.co.uk/bridge.jpg"}}]}</script>`),
		want: Article{
			Headline: "Old bridge to close for eight months", Description: "Repairs start in May.",
			DatePublished: "2024-05-01T09:30:00+02:00", DateModified: "2024-05-02T10:00:00+02:00",
			Author: []string{"Anna Smith", "Ben Jones"}, InLanguage: "en-GB", ArticleSection: "Local",
			Keywords: []string{"bridge", "council", "repairs"}, Image: "https://cdn.example.co.uk/bridge.jpg",
			URL: pageURL,
			Sources: map[string]string{"headline": "json-ld", "datePublished": "json-ld", "author": "json-ld",
				"keywords": "json-ld", "image": "json-ld", "url": "page"},
		},
	}, {
		name: "several json-ld blocks, the article in an array, after a breadcrumb",
		html: testPage(`<script type="application/ld+json">{"@type":"BreadcrumbList","itemListElement":[]}</script>
<script type="application/ld+json">[{"@type":"Organization","name":"The Daily"},{"@type":"BlogPosting","headline":"A post","datePublished":"2023-11-05","author":"Carla Diaz"}]</script>`),
		want: Article{Headline: "A post", DatePublished: "2023-11-05", Author: []string{"Carla Diaz"},
			Sources: map[string]string{"headline": "json-ld", "datePublished": "json-ld", "author": "json-ld"}},
	}, {
		name: "opengraph and article meta",
		html: testPage(`<meta property="og:title" content="OG headline"><meta property="og:description" content="OG lead">
<meta property="article:published_time" content="2024-03-10T07:00:00-05:00"><meta property="article:modified_time" content="2024-03-11">
<meta property="article:author" content="https://www.example.co.uk/authors/dan"><meta name="author" content="Dan Brown">
<meta property="article:section" content="Politics"><meta property="article:tag" content="elections"><meta property="article:tag" content="polls">
<meta property="og:image" content="/img/lead.jpg"><meta property="og:locale" content="en_GB">
<link rel="canonical" href="https://example.co.uk/news/bridge-closes?ref=canon">`),
		want: Article{Headline: "OG headline", Description: "OG lead", DatePublished: "2024-03-10T07:00:00-05:00",
			DateModified: "2024-03-11", Author: []string{"Dan Brown"}, ArticleSection: "Politics",
			Keywords: []string{"elections", "polls"}, Image: "https://www.example.co.uk/img/lead.jpg", InLanguage: "en-GB",
			URL: "https://example.co.uk/news/bridge-closes?ref=canon",
			Sources: map[string]string{"headline": "opengraph", "datePublished": "opengraph", "author": "meta:author",
				"keywords": "opengraph", "url": "link[rel=canonical]", "inLanguage": "opengraph"}},
	}, {
		name: "parsely, sailthru and dublin core meta",
		html: testPage(`<meta name="parsely-title" content="Parsely title"><meta name="parsely-pub-date" content="2022-08-14T16:45:00Z">
<meta name="sailthru.author" content="Eve Adams and Frank Li"><meta name="DC.language" content="de">
<meta name="news_keywords" content="rail, strike">`),
		want: Article{Headline: "Parsely title", DatePublished: "2022-08-14T16:45:00Z", Author: []string{"Eve Adams", "Frank Li"},
			InLanguage: "de", Keywords: []string{"rail", "strike"},
			Sources: map[string]string{"headline": "meta:parsely-title", "datePublished": "meta:parsely-pub-date",
				"author": "meta:sailthru.author", "inLanguage": "meta:dc.language", "keywords": "meta:news_keywords"}},
	}, {
		name: "time[datetime], h1 and a byline in the DOM",
		html: `<html lang="fr"><head><title>Site – Le pont</title></head><body><h1>Le vieux pont ferme</h1>
<p class="byline">Par Gilles Martin</p><time datetime="2021-02-03T08:00:00+01:00" pubdate>3 février</time>` + body + `</body></html>`,
		want: Article{Headline: "Le vieux pont ferme", DatePublished: "2021-02-03T08:00:00+01:00", Author: []string{"Gilles Martin"},
			InLanguage: "fr", Sources: map[string]string{"headline": "dom", "datePublished": "time[datetime]", "author": "dom", "inLanguage": "dom"}},
	}, {
		name: "date in the URL path",
		html: testPage(`<title>Bridge</title>`),
		url:  "https://www.example.co.uk/2024/05/01/bridge-closes/",
		want: Article{Headline: "Bridge", DatePublished: "2024-05-01", Sources: map[string]string{"datePublished": "url"}},
	}, {
		name: "date as a run of digits in the URL",
		html: testPage(`<title>Bridge</title>`),
		url:  "https://www.example.co.uk/news/20240501-bridge-closes.html",
		want: Article{Headline: "Bridge", DatePublished: "2024-05-01", Sources: map[string]string{"datePublished": "url"}},
	}, {
		name: "canonical on another registrable domain is refused",
		html: testPage(`<title>Bridge</title><link rel="canonical" href="https://evil.example.com/steal">
<meta property="og:url" content="https://other.co.uk/news/bridge">`),
		want: Article{Headline: "Bridge", URL: pageURL, Sources: map[string]string{"url": "page"}},
	}, {
		name: "canonical on a sibling host of the same domain is kept",
		html: testPage(`<title>Bridge</title><link rel="canonical" href="https://amp.example.co.uk/news/bridge-closes">`),
		want: Article{Headline: "Bridge", URL: "https://amp.example.co.uk/news/bridge-closes", Sources: map[string]string{"url": "link[rel=canonical]"}},
	}, {
		name: "date-only stays a date, offsets are kept, a missing offset is not invented",
		html: testPage(`<meta property="article:published_time" content="2019-12-31"><meta property="article:modified_time" content="2020-01-02T23:15:00">`),
		want: Article{DatePublished: "2019-12-31", DateModified: "2020-01-02T23:15:00"},
	}, {
		name: "a json-ld date with a negative offset and fractions",
		html: testPage(`<script type="application/ld+json">{"@type":"Article","headline":"H","datePublished":"2024-05-01T23:59:59.123-07:00"}</script>`),
		want: Article{DatePublished: "2024-05-01T23:59:59-07:00"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := pageURL
			if tt.url != "" {
				u = tt.url
			}
			got, err := Extract(context.Background(), []byte(tt.html), mustURL(t, u), Options{})
			if err != nil {
				t.Fatal(err)
			}
			check := func(field, got, want string) {
				if want != "" && got != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
			}
			w := tt.want
			check("headline", got.Headline, w.Headline)
			check("description", got.Description, w.Description)
			check("datePublished", got.DatePublished, w.DatePublished)
			check("dateModified", got.DateModified, w.DateModified)
			check("inLanguage", got.InLanguage, w.InLanguage)
			check("articleSection", got.ArticleSection, w.ArticleSection)
			check("image", got.Image, w.Image)
			check("url", got.URL, w.URL)
			if w.Author != nil && !slices.Equal(got.Author, w.Author) {
				t.Errorf("author = %q, want %q", got.Author, w.Author)
			}
			if w.Keywords != nil && !slices.Equal(got.Keywords, w.Keywords) {
				t.Errorf("keywords = %q, want %q", got.Keywords, w.Keywords)
			}
			for field, src := range w.Sources {
				if got.Sources[field] != src {
					t.Errorf("sources[%s] = %q, want %q", field, got.Sources[field], src)
				}
			}
			if !strings.Contains(got.ArticleBody, "eight months") || strings.Contains(got.ArticleBody, "Home") || strings.Contains(got.ArticleBody, "©") {
				t.Errorf("articleBody = %q, want the story's paragraphs and no navigation or footer", got.ArticleBody)
			}
		})
	}
}

func TestExtractBodyKeepsParagraphs(t *testing.T) {
	a, err := Extract(context.Background(), []byte(testPage("<title>T</title>")), mustURL(t, "https://example.com/a"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(a.ArticleBody, "\n\n")
	if len(paras) != 3 || !strings.HasPrefix(paras[1], "Engineers said") {
		t.Errorf("articleBody has %d paragraphs, want 3 separated by blank lines:\n%s", len(paras), a.ArticleBody)
	}
}

func TestExtractErrors(t *testing.T) {
	tests := []struct {
		name string
		page string
		url  string
		opts Options
		want error
	}{
		{"relative URL", testPage(""), "/news/a", Options{}, ErrBadURL},
		{"ftp URL", testPage(""), "ftp://example.com/a", Options{}, ErrBadURL},
		{"too many bytes", testPage(""), "https://example.com/a", Options{MaxBytes: 100}, ErrTooLarge},
		{"too many nodes", testPage(""), "https://example.com/a", Options{MaxNodes: 10}, ErrTooLarge},
		{"no article", "<html><body><nav><a href=/>Home</a></nav></body></html>", "https://example.com/", Options{}, ErrNoArticle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, _ := url.Parse(tt.url)
			_, err := Extract(context.Background(), []byte(tt.page), u, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("nil URL", func(t *testing.T) {
		if _, err := Extract(context.Background(), []byte(testPage("")), nil, Options{}); !errors.Is(err, ErrBadURL) {
			t.Fatalf("err = %v, want ErrBadURL", err)
		}
	})
	t.Run("context done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Extract(ctx, []byte(testPage("")), mustURL(t, "https://example.com/a"), Options{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestNormalizeDate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"2024-05-01", "2024-05-01"},
		{"2024-05-01T09:30:00+02:00", "2024-05-01T09:30:00+02:00"},
		{"2024-05-01T09:30:00+0200", "2024-05-01T09:30:00+02:00"},
		{"2024-05-01T09:30:00Z", "2024-05-01T09:30:00Z"},
		{"2024-05-01T09:30:00", "2024-05-01T09:30:00"},
		{"2024-05-01 09:30:00", "2024-05-01T09:30:00"},
		{"Wed, 01 May 2024 09:30:00 +0200", "2024-05-01T09:30:00+02:00"},
		{"Wed, 01 May 2024 09:30:00 GMT", "2024-05-01T09:30:00Z"},
		{"May 1, 2024", "2024-05-01"},
		{"20240501", "2024-05-01"},
		{"2024-05-01T09:30:00.000+02:00[Europe/Paris]", "2024-05-01"},
		{"1850-01-01", ""},
		{"yesterday", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := normalizeDate(tt.in); got != tt.want {
			t.Errorf("normalizeDate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

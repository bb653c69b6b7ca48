package domwalk_test

import (
	"bytes"
	"io"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

type corpusPage struct {
	name string
	url  *url.URL
	html []byte // decoded to UTF-8, as the crawler hands pages over
}

// loadCorpus returns the corpus pages (shared/corpus/pages: news portals,
// Wikipedia, blogs… in their original charsets) decoded to UTF-8. It skips
// the test when the corpus is absent, unless CI=true, where that fails.
func loadCorpus(tb testing.TB) []corpusPage {
	tb.Helper()
	var pages []corpusPage
	for _, p := range corpus.Pages(tb) {
		r, err := charset.NewReader(bytes.NewReader(p.Body), p.ContentType)
		if err != nil {
			tb.Fatalf("%s: detect charset: %v", p.Name, err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			tb.Fatalf("%s: decode: %v", p.Name, err)
		}
		u, err := url.Parse("https://" + strings.ReplaceAll(p.Name, "_", "-") + ".corpus.example/index.html")
		if err != nil {
			tb.Fatal(err)
		}
		pages = append(pages, corpusPage{name: p.Name, url: u, html: data})
	}
	return pages
}

func TestCorpus(t *testing.T) {
	pages := loadCorpus(t)
	total := 0
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			links, stats, err := domwalk.Parse(bytes.NewReader(p.html), p.url, domwalk.Limits{})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			checkLinks(t, links, domwalk.Limits{})
			if stats.Links != len(links) || stats.Links+stats.Duplicates+stats.Dropped.Total() != stats.Anchors {
				t.Fatalf("inconsistent stats %+v for %d links", stats, len(links))
			}
			if stats.Truncated() || stats.Flattened {
				t.Logf("page cut short or flattened: %+v", stats)
			}
			total += len(links)
		})
	}
	t.Logf("%d pages, %d links", len(pages), total)
}

func BenchmarkParse(b *testing.B) {
	pages := loadCorpus(b)
	size := 0
	for _, p := range pages {
		size += len(p.html)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	links := 0
	for b.Loop() {
		links = 0
		for _, p := range pages {
			l, _, err := domwalk.Parse(bytes.NewReader(p.html), p.url, domwalk.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			links += len(l)
		}
	}
	b.ReportMetric(float64(len(pages)), "pages/op")
	b.ReportMetric(float64(links), "links/op")
}

func BenchmarkLinks(b *testing.B) {
	pages := loadCorpus(b)
	docs := make([]*html.Node, len(pages))
	size := 0
	for i, p := range pages {
		doc, err := html.ParseWithOptions(bytes.NewReader(p.html), html.ParseOptionEnableScripting(false))
		if err != nil {
			b.Fatalf("%s: %v", p.name, err)
		}
		docs[i] = doc
		size += len(p.html)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	links := 0
	for b.Loop() {
		links = 0
		for i, doc := range docs {
			l, _ := domwalk.Links(doc, pages[i].url, domwalk.Limits{})
			links += len(l)
		}
	}
	b.ReportMetric(float64(len(pages)), "pages/op")
	b.ReportMetric(float64(links), "links/op")
}

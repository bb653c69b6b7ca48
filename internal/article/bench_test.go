package article

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

// benchPages are the first pages of the body benchmark in testdata, real
// article pages, as Extract receives them.
func benchPages(b *testing.B, n int) (pages [][]byte, urls []*url.URL) {
	b.Helper()
	var truth map[string]struct{ URL string }
	raw, err := os.ReadFile("testdata/scrapinghub/ground-truth.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		b.Fatal(err)
	}
	paths, _ := filepath.Glob("testdata/scrapinghub/html/*.html.gz")
	for _, p := range paths[:min(n, len(paths))] {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		page, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		u, _ := url.Parse(truth[filepath.Base(p[:len(p)-len(".html.gz")])].URL)
		pages, urls = append(pages, page), append(urls, u)
	}
	return pages, urls
}

// BenchmarkExtract extracts 20 real article pages in turn; one op is one page.
func BenchmarkExtract(b *testing.B) {
	pages, urls := benchPages(b, 20)
	total := 0
	for _, p := range pages {
		total += len(p)
	}
	b.SetBytes(int64(total / len(pages)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Extract(context.Background(), pages[i%len(pages)], urls[i%len(pages)], Options{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestCorpusPages runs Extract on the article pages of ../shared/corpus
// (mozilla/readability's test pages): none may fail but for the reasons it
// documents, and most must give a headline and a body.
func TestCorpusPages(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the shared corpus")
	}
	pages := corpus.Pages(t)
	u, _ := url.Parse("https://www.example.com/article")
	tried, withBody, withDate := 0, 0, 0
	for _, p := range pages {
		if len(p.Name) < 12 || p.Name[:12] != "readability_" || !utf8.Valid(p.Body) {
			continue
		}
		tried++
		pu := u
		if s := StatedURL(p.Body); s != nil {
			pu = s
		}
		a, err := Extract(context.Background(), p.Body, pu, Options{})
		if err != nil {
			t.Logf("%s: %v", p.Name, err)
			continue
		}
		if a.Headline != "" && len(a.ArticleBody) > 200 {
			withBody++
		}
		if a.DatePublished != "" {
			withDate++
		}
	}
	t.Logf("%d corpus article pages: %d with a headline and a body, %d with a publication date", tried, withBody, withDate)
	if tried > 0 && withBody < tried*8/10 {
		t.Errorf("only %d of %d pages gave a headline and a body", withBody, tried)
	}
}

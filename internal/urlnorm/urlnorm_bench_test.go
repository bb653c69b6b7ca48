package urlnorm_test

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
)

const benchCorpusDir = "../../../shared/corpus/pages"

type corpusHrefs struct {
	base  *url.URL
	hrefs []string
}

// loadHrefs returns every <a href> of the corpus pages, as written, with
// each page's URL. It skips the benchmark when the corpus is absent, unless
// CI=true.
func loadHrefs(b *testing.B) ([]corpusHrefs, int, int) {
	paths, err := filepath.Glob(filepath.Join(benchCorpusDir, "*.html"))
	if err != nil || len(paths) == 0 {
		if os.Getenv("CI") == "true" {
			b.Fatalf("corpus %s not found (CI=true: it must be present)", benchCorpusDir)
		}
		b.Skipf("corpus %s not found; set it up to run this benchmark", benchCorpusDir)
	}
	var pages []corpusHrefs
	n, size := 0, 0
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		doc, _ := fetch.DecodeHTML(raw, "")
		base, _ := url.Parse("https://" + strings.TrimSuffix(filepath.Base(p), ".html") + ".corpus.example/news/index.html")
		page := corpusHrefs{base: base}
		z := html.NewTokenizer(bytes.NewReader(doc))
		for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
			if tt != html.StartTagToken {
				continue
			}
			if name, hasAttr := z.TagName(); string(name) == "a" && hasAttr {
				for {
					k, v, more := z.TagAttr()
					if string(k) == "href" {
						page.hrefs = append(page.hrefs, string(v))
						size += len(v)
					}
					if !more {
						break
					}
				}
			}
		}
		n += len(page.hrefs)
		pages = append(pages, page)
	}
	return pages, n, size
}

// BenchmarkResolveCorpus resolves and normalises every href of the real
// pages against its page's URL, as the DOM walk does. One op is the whole
// corpus; ns/link is the figure to compare.
func BenchmarkResolveCorpus(b *testing.B) {
	pages, n, size := loadHrefs(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pages {
			for _, h := range p.hrefs {
				urlnorm.Resolve(p.base, h)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/link")
	b.ReportMetric(float64(n), "links/op")
}

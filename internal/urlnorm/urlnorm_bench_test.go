package urlnorm_test

import (
	"bytes"
	"net/url"
	"testing"

	"golang.org/x/net/html"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
)

type corpusHrefs struct {
	base  *url.URL
	hrefs []string
}

// loadHrefs returns every <a href> of the corpus pages, as written, with
// each page's URL. It skips the benchmark when the corpus is absent, unless
// CI=true.
func loadHrefs(b *testing.B) ([]corpusHrefs, int, int) {
	var pages []corpusHrefs
	n, size := 0, 0
	for _, p := range corpus.Pages(b) {
		doc, _ := fetch.DecodeHTML(p.Body, p.ContentType)
		base, _ := url.Parse("https://" + p.Name + ".corpus.example/news/index.html")
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

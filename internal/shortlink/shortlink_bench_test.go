package shortlink_test

import (
	"bytes"
	"net/url"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
)

// corpusURLs returns the normalised URLs of every link of the corpus pages,
// as the processor receives them. It skips the benchmark when the corpus is
// absent, unless CI=true.
func corpusURLs(b *testing.B) ([]string, int) {
	var urls []string
	size := 0
	for _, p := range corpus.Pages(b) {
		doc, _ := fetch.DecodeHTML(p.Body, p.ContentType)
		base, _ := url.Parse("https://" + p.Name + ".corpus.example/")
		links, _, err := domwalk.Parse(bytes.NewReader(doc), base, domwalk.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range links {
			urls = append(urls, l.URL)
			size += len(l.URL)
		}
	}
	return urls, size
}

// BenchmarkCorpus computes what the processor computes for each link of the
// real pages: the key, the default-length code and its integer value.
func BenchmarkCorpus(b *testing.B) {
	urls, size := corpusURLs(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, u := range urls {
			k := shortlink.Key(u)
			_ = shortlink.Code(k, shortlink.DefaultLength)
			_ = shortlink.CodeValue(k, shortlink.DefaultLength)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(urls)), "ns/link")
	b.ReportMetric(float64(len(urls)), "links/op")
}

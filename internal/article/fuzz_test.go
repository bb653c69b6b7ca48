package article

import (
	"context"
	"net/url"
	"testing"
	"time"
)

// FuzzExtract holds Extract to never panic and to return in bounded time
// on any page.
func FuzzExtract(f *testing.F) {
	f.Add([]byte(testPage(`<script type="application/ld+json">{"@graph":[{"@type":"NewsArticle","headline":"H","author":{"@id":"#a"}},{"@id":"#a","name":"A"}]}</script>`)))
	f.Add([]byte(`<html><head><meta property="article:published_time" content="2024-05-01T09:30:00+02:00"><link rel=canonical href="//x"></head><body><time datetime="9999-99-99">x</time><h1>t</h1></body></html>`))
	f.Add([]byte(`<script type="application/ld+json">[[[[[[{"@type":["Article"],"author":[[[{"name":1}]]],"keywords":[{"@id":"x"}]}]]]]]]</script>`))
	f.Add([]byte("<table><tr><td><p><b><i><u>\x00\xff<br><svg><math><template><p>"))
	u, _ := url.Parse("https://www.example.com/2024/05/01/story")
	f.Fuzz(func(t *testing.T, page []byte) {
		start := time.Now()
		a, err := Extract(context.Background(), page, u, Options{MaxBytes: 1 << 20, MaxNodes: 20_000})
		if err == nil && a == nil {
			t.Fatal("nil article and nil error")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Extract took %v on a %d-byte page", d, len(page))
		}
	})
}

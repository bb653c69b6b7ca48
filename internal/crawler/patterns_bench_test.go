package crawler_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// pageFetcher answers every fetch with one page held in memory.
type pageFetcher struct {
	url  *url.URL
	html []byte
}

func (f *pageFetcher) Fetch(context.Context, watch.FetchRequest) (watch.FetchResult, error) {
	return watch.FetchResult{Status: 200, FinalURL: f.url, HTML: f.html, FetchedAt: time.Now()}, nil
}

// linkPage returns a page of n links whose URLs look like a news portal's
// (about 70 bytes each), or, with a word of word bytes in each, like a
// hostile page's: a run of word characters is what makes `\w{n}` costly.
func linkPage(n, word int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `<a href="/politik/2026/11/30/artikel-%d-ueber-etwas-wichtiges%s.html?seite=%d">Artikel %d</a>`+"\n",
			i, strings.Repeat("w", word), i%7, i)
	}
	return []byte(b.String())
}

// BenchmarkCheckIgnorePatterns is one check of a page whose owner set
// ignore patterns: fetch (from memory), parse, walk, filter.
//   - typical: 5,000 links and five patterns of the kind README shows; the
//     patterns were compiled at every check before they were cached.
//   - hostile: 50 links, each with a run of 1,500 word characters, and
//     `\w{1000}x` (nine characters, 1,003 instructions), which the caps
//     now refuse at registration and the crawler skips when an old row
//     holds it.
//   - at-cap: the same page and a pattern of the same kind at the caps
//     (193 instructions).
func BenchmarkCheckIgnorePatterns(b *testing.B) {
	u, _ := url.Parse("https://news.example/")
	cases := []struct {
		name        string
		links, word int
		patterns    []string
	}{
		{"typical", 5000, 0, []string{`\?page=\d+`, `[?&]utm_[a-z]+=`, `^https?://pubads\.g\.doubleclick\.net/`, `[?&]source=hbsad(&|$)`,
			`^https?://(www\.)?news\.example/(tag|category|author)/[^/]+/?$`}},
		{"hostile", 50, 1500, []string{`\w{1000}x`}},
		{"at-cap", 50, 1500, []string{`\w{100}\w{90}x`}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			f := &pageFetcher{url: u, html: linkPage(tc.links, tc.word)}
			svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, &discard{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			job := watch.Job{ID: 1, BaseURL: u.String(), Options: &watch.LinkOptions{Ignore: tc.patterns}}
			b.SetBytes(int64(len(f.html)))
			b.ReportAllocs()
			for b.Loop() {
				if task := svc.Check(context.Background(), job); task.Failed() || len(task.Context) == 0 {
					b.Fatalf("check failed or found nothing: %+v", task.Error)
				}
			}
		})
	}
}

package processor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// corpusLinks returns the links of the corpus pages that have at least
// minLinks, as a crawler would send them (decoded, parsed, normalised). It
// skips the benchmark when the corpus is absent, unless CI=true.
func corpusLinks(b *testing.B, minLinks, maxPages int) [][]watch.Link {
	var out [][]watch.Link
	for _, p := range corpus.Pages(b) {
		html, _ := fetch.DecodeHTML(p.Body, p.ContentType)
		u, _ := url.Parse("https://" + p.Name + ".corpus.example/")
		links, _, err := domwalk.Parse(bytes.NewReader(html), u, domwalk.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if len(links) >= minLinks {
			out = append(out, links)
		}
		if len(out) == maxPages {
			break
		}
	}
	return out
}

// benchProcessor is a processor on a fresh database and Redis prefix, with
// one registered page per corpus page.
type benchProcessor struct {
	svc   *processor.Service
	st    *store.Store
	dsn   string
	pages []watch.Page
}

func newBenchProcessor(b *testing.B, redisURL string, pages int) *benchProcessor {
	return newBenchProcessorWith(b, redisURL, pages, processor.Config{})
}

func newBenchProcessorWith(b *testing.B, redisURL string, pages int, cfg processor.Config) *benchProcessor {
	ctx := context.Background()
	dsn := testsvc.Postgres(b)
	st, err := store.Open(ctx, dsn, store.GenericPlans()) // as cmd/processor
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	if _, err := st.Migrate(ctx, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	liveURL, prefix := testsvc.Redis(b)
	if redisURL == "" {
		redisURL = liveURL
	}
	set, err := seen.Open(redisURL, seen.Config{Prefix: prefix, Epoch: "bench", Timeout: 200 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { set.Close() })
	svc, err := processor.New(cfg, st, set, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	bp := &benchProcessor{st: st, svc: svc, dsn: dsn}
	for i := range pages {
		p, err := st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://portal-%d.example/", i)})
		if err != nil {
			b.Fatal(err)
		}
		bp.pages = append(bp.pages, p)
	}
	return bp
}

func (bp *benchProcessor) handle(b *testing.B, page watch.Page, links []watch.Link, at time.Time) int {
	return bp.handleTask(b, watch.Task{BaseURL: page.BaseURL, ID: page.ID, Status: 200, FetchedAt: at, Context: links})
}

// handleTask handles one task as a delivery and returns its size.
func (bp *benchProcessor) handleTask(b *testing.B, task watch.Task) int {
	body, err := json.Marshal(task)
	if err != nil {
		b.Fatal(err)
	}
	if err := bp.svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		b.Fatal(err)
	}
	return len(body)
}

// quietRedisLog drops go-redis's own log lines.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

// withNews returns links plus n links never seen before.
func withNews(links []watch.Link, round, n int) []watch.Link {
	out := append(make([]watch.Link, 0, len(links)+n), links...)
	for j := range n {
		out = append(out, watch.Link{URL: fmt.Sprintf("https://news.example/%d/%d.html", round, j), Text: "Breaking story"})
	}
	return out
}

// BenchmarkHandle is the processor's per-task path against the real
// PostgreSQL and Redis, with the links of real pages (pages with at least
// 100 links). One op handles one task.
//
//   - steady: the common case. The page's baseline is recorded; each task
//     carries its links plus 3 new ones, so Redis answers for all but 3 and
//     PostgreSQL inserts 3 links and 3 updates.
//   - no-cache: Redis is unreachable, so PostgreSQL decides every link
//     (INSERT … ON CONFLICT DO NOTHING on all of them), as after a flush.
//   - baseline: the first check of a page: every link is inserted.
func BenchmarkHandle(b *testing.B) {
	corpus := corpusLinks(b, 100, 30)
	if len(corpus) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	run := func(b *testing.B, redisURL string) {
		bp := newBenchProcessor(b, redisURL, len(corpus))
		at := time.Now().Add(-time.Hour)
		for i, links := range corpus {
			bp.handle(b, bp.pages[i], links, at)
		}
		var bytes, links int
		round := 0
		b.ReportAllocs()
		for b.Loop() {
			i := round % len(corpus)
			at = at.Add(time.Millisecond)
			task := withNews(corpus[i], round, 3)
			bytes += bp.handle(b, bp.pages[i], task, at)
			links += len(task)
			round++
		}
		b.SetBytes(int64(bytes / max(round, 1)))
		b.ReportMetric(float64(links)/float64(max(round, 1)), "links/task")
	}
	b.Run("steady", func(b *testing.B) { run(b, "") })
	b.Run("no-cache", func(b *testing.B) {
		// go-redis logs each failed dial on its own; its lines would break
		// the benchmark's result lines.
		redis.SetLogger(quietRedisLog{})
		run(b, "redis://127.0.0.1:1/0")
	})
	b.Run("baseline", func(b *testing.B) {
		bp := newBenchProcessor(b, "", 0)
		ctx := context.Background()
		var bytes, links, n int
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			page, err := bp.st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://baseline-%d.example/", n)})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			task := corpus[n%len(corpus)]
			bytes += bp.handle(b, page, task, time.Now())
			links += len(task)
			n++
		}
		b.SetBytes(int64(bytes / max(n, 1)))
		b.ReportMetric(float64(links)/float64(max(n, 1)), "links/task")
	})
}

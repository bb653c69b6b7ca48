package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// BenchmarkHandleSource is the processor's path for a feed's task against
// the real PostgreSQL: a feed of 60 items of which each check brings 2
// new ones, on 30 pages. One op handles one task.
//
//   - whole: the task carries all 60 items, as the processor sends them
//     today: PostgreSQL looks up every one.
//   - new-only: the task carries only the 2 new items, what a cache of the
//     items each page's sources listed would leave to PostgreSQL.
//   - known: the task carries the 60 items, all known already (the
//     homepage or another source of the page recorded them first), as
//     most checks of a busy portal's feed find them.
//
// Their difference is what such a cache could save PostgreSQL and the
// processor a source check. pg-ns/op is PostgreSQL's CPU a task (pgCPU).
func BenchmarkHandleSource(b *testing.B) {
	const pages, items, fresh = 30, 60, 2
	run := func(b *testing.B, whole, known bool) {
		bp := newBenchProcessor(b, "", pages)
		ctx := context.Background()
		feeds := make([]*watch.SourceRef, pages)
		all := []string{watch.SourcesHomepage, watch.SourcesFeeds}
		for i, p := range bp.pages {
			if _, err := bp.st.EditPage(ctx, p.ID, watch.PageEdit{Sources: &all}); err != nil {
				b.Fatal(err)
			}
			bp.handleTask(b, watch.Task{BaseURL: p.BaseURL, ID: p.ID, Discover: true,
				Discovered: []watch.DiscoveredSource{{Kind: watch.SourceFeed, URL: p.BaseURL + "rss", Title: "RSS"}}})
			sources, err := bp.st.Sources(ctx, p.ID)
			if err != nil || len(sources) != 1 {
				b.Fatalf("sources of page %d = %+v, %v", p.ID, sources, err)
			}
			feeds[i] = &watch.SourceRef{ID: sources[0].ID, Kind: watch.SourceFeed, URL: sources[0].URL}
		}
		// Each page's feed lists items [first, first+items) of its stories.
		item := func(page, n int) watch.Link {
			return watch.Link{URL: fmt.Sprintf("https://portal-%d.example/story/%d", page, n), Text: fmt.Sprintf("Story %d", n)}
		}
		checks := 0
		feedTask := func(page, first int, onlyNew bool) watch.Task {
			checks++
			t := watch.Task{BaseURL: feeds[page].URL, ID: bp.pages[page].ID, Status: 200, Source: feeds[page],
				ItemsDigest: fmt.Sprint(checks), FetchedAt: time.Now()}
			from := first
			if onlyNew {
				from = first + items - fresh
			}
			for n := from; n < first+items; n++ {
				t.Context = append(t.Context, item(page, n))
			}
			return t
		}
		for i := range pages {
			bp.handleTask(b, feedTask(i, 0, false)) // the feed's baseline
		}
		firsts := make([]int, pages)
		round := 0
		probe := probePool(b, bp.dsn)
		pgBefore := pgCPU(b, probe)
		b.ReportAllocs()
		for b.Loop() {
			i := round % pages
			if !known {
				firsts[i] += fresh
			}
			bp.handleTask(b, feedTask(i, firsts[i], !whole))
			round++
		}
		b.ReportMetric(float64(pgCPU(b, probe)-pgBefore)/float64(max(round, 1)), "pg-ns/op")
	}
	b.Run("whole", func(b *testing.B) { run(b, true, false) })
	b.Run("new-only", func(b *testing.B) { run(b, false, false) })
	b.Run("known", func(b *testing.B) { run(b, true, true) })
}

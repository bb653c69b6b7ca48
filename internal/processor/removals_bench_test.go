package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// BenchmarkRemovalTracking is the price of removals: the processor's
// per-task path on real pages (at least 100 links) with removals off and on
// (K = 2), on two kinds of front page. On "rotating" pages each check shows
// 3 new stories and loses the 3 that came 10 checks before, as make bench's
// farm does: removals-on holds the 3 links that left as pending in the
// page's row and, once they have been absent for two checks, records them.
// On "growing" pages each check adds 3 stories and none leaves: what
// following costs a check that records no removal. Each task carries its
// page's following state as the scheduler's job would (read once a round,
// in which each page is checked once), so a check whose buckets each lost
// at most one link is recorded by the statement that compares no set; one
// whose bucket lost several compares that bucket. Compare ns/op, and
// PostgreSQL's CPU around each arm (the README gives the figures). A page
// whose set does not change is sent as "unchanged" and only ages its
// pending absences.
func BenchmarkRemovalTracking(b *testing.B) {
	corpus := corpusLinks(b, 100, 30)
	if len(corpus) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	for _, page := range []struct {
		name string
		keep int // stories a page shows: the newest ones
	}{{"rotating", 30}, {"growing", 1 << 30}} {
		for _, k := range []int{0, 2} {
			name := page.name + "/removals-off"
			if k > 0 {
				name = page.name + "/removals-on"
			}
			b.Run(name, func(b *testing.B) {
				bp := newBenchProcessorWith(b, "", len(corpus), processor.Config{RemovalChecks: k})
				pool, err := pgxpool.New(context.Background(), bp.dsn)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				at := time.Now().Add(-time.Hour)
				for i, links := range corpus {
					bp.handle(b, bp.pages[i], links, at)
				}
				round := 0
				states := map[int64]*watch.Followed{}
				b.ReportAllocs()
				for b.Loop() {
					i := round % len(corpus)
					if i == 0 {
						states = scheduledStates(b, pool)
					}
					at = at.Add(time.Millisecond)
					p := bp.pages[i]
					bp.handleTask(b, watch.Task{BaseURL: p.BaseURL, ID: p.ID, Status: 200, FetchedAt: at,
						Context: withStories(corpus[i], round/len(corpus)+1, page.keep), Followed: states[p.ID]})
					round++
				}
			})
		}
	}
}

// scheduledStates is every followed page's following state, as the
// scheduler puts it in its jobs (store.ClaimDueQuery).
func scheduledStates(b *testing.B, pool *pgxpool.Pool) map[int64]*watch.Followed {
	rows, err := pool.Query(context.Background(), `
		SELECT id, ok_checks, link_buckets, pending_keys, pending_since, gone_keys FROM pages
		WHERE pending_keys IS NOT NULL AND cardinality(link_buckets) = 64`)
	if err != nil {
		b.Fatal(err)
	}
	out := map[int64]*watch.Followed{}
	for rows.Next() {
		var (
			id int64
			f  watch.Followed
		)
		if err := rows.Scan(&id, &f.Checks, &f.Buckets, &f.Pending, &f.PendingSince, &f.Gone); err != nil {
			b.Fatal(err)
		}
		out[id] = &f
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// withStories is links as the page shows them at round r: 3 new stories a
// round on top, the newest keep of them, then the page's own links.
func withStories(links []watch.Link, r, keep int) []watch.Link {
	out := make([]watch.Link, 0, len(links)+min(3*r, keep))
	for j := max(0, 3*r-keep); j < 3*r; j++ {
		out = append(out, watch.Link{URL: fmt.Sprintf("https://news.example/%d.html", j), Text: "Breaking story"})
	}
	return append(out, links...)
}

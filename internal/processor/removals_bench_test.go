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
// per-task path on real pages (at least 100 links), with removals off and
// on (K = 2) side by side, on two kinds of front page. On "rotating" pages
// each check shows 3 new stories and loses the 3 that came 10 checks
// before, as make bench's farm does: removals-on holds the 3 links that
// left as pending and, once they have been absent for two checks, records
// them. On "growing" pages each check adds 3 stories and none leaves: what
// following costs a check that records no removal.
//
// One op checks the same page once on each of two processors, one with
// removals off and one with them on, each on a database of its own, so
// both arms run under the same load from the rest of the machine: their
// ratio (pg-on/off) holds where each arm's time moves by a third between
// runs. pg-off-ns/op and pg-on-ns/op are PostgreSQL's CPU per check
// (pgCPU); ns/op is both checks. Each task carries its page's following
// state as the scheduler's job would (read once a round, in which each
// page is checked once).
func BenchmarkRemovalTracking(b *testing.B) {
	corpus := corpusLinks(b, 100, 30)
	if len(corpus) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	for _, page := range []struct {
		name string
		keep int // stories a page shows: the newest ones
	}{{"rotating", 30}, {"growing", 1 << 30}} {
		b.Run(page.name, func(b *testing.B) {
			arms := []*removalArm{newRemovalArm(b, corpus, 0), newRemovalArm(b, corpus, 2)}
			round := 0
			at := time.Now().Add(-time.Hour)
			b.ReportAllocs()
			for _, a := range arms {
				a.pgBefore = pgCPU(b, a.probe)
			}
			for b.Loop() {
				i := round % len(corpus)
				at = at.Add(time.Millisecond)
				for _, a := range arms {
					a.check(b, i, round, at, withStories(corpus[i], round/len(corpus)+1, page.keep))
				}
				round++
			}
			off, on := arms[0].pgPerCheck(b, round), arms[1].pgPerCheck(b, round)
			b.ReportMetric(off, "pg-off-ns/op")
			b.ReportMetric(on, "pg-on-ns/op")
			b.ReportMetric(on/off, "pg-on/off")
		})
	}
}

// removalArm is one processor of BenchmarkRemovalTracking, on its own
// database, with the corpus' baselines recorded.
type removalArm struct {
	bp       *benchProcessor
	probe    *pgxpool.Pool
	states   map[int64]*watch.Followed
	pgBefore time.Duration
}

func newRemovalArm(b *testing.B, corpus [][]watch.Link, k int) *removalArm {
	bp := newBenchProcessorWith(b, "", len(corpus), processor.Config{RemovalChecks: k})
	at := time.Now().Add(-2 * time.Hour)
	for i, links := range corpus {
		bp.handle(b, bp.pages[i], links, at)
	}
	return &removalArm{bp: bp, probe: probePool(b, bp.dsn)}
}

// check sends the i-th page's task of round r, fetched at at, with links.
func (a *removalArm) check(b *testing.B, i, r int, at time.Time, links []watch.Link) {
	if i == 0 {
		a.states = scheduledStates(b, a.probe)
	}
	p := a.bp.pages[i]
	a.bp.handleTask(b, watch.Task{BaseURL: p.BaseURL, ID: p.ID, Status: 200, FetchedAt: at,
		Context: links, Followed: a.states[p.ID]})
}

// pgPerCheck is PostgreSQL's CPU per check of the arm since its start.
func (a *removalArm) pgPerCheck(b *testing.B, checks int) float64 {
	return float64(pgCPU(b, a.probe)-a.pgBefore) / float64(max(checks, 1))
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

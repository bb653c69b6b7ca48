package processor_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// BenchmarkRemovalTracking is the price of removals: the processor's
// per-task path on real pages (at least 100 links), with removals off and
// on (K = 2) side by side, on three kinds of front page. On "rotating"
// pages each check shows 3 new stories and loses the 3 that came 10 checks
// before, as make bench's farm does: removals-on holds the 3 links that
// left as pending and, once they have been absent for two checks, records
// them. On "growing" pages each check adds 3 stories and none leaves: what
// following costs a check that records no removal. "history" pages replay
// the real homepage histories of ../shared/corpus/history, forth and back,
// each page from another version: dozens of links come and go at a check.
//
// One op checks the same page once on each of two processors, one with
// removals off and one with them on, each on a database of its own, so
// both arms run under the same load from the rest of the machine: their
// ratio (pg-on/off) holds where each arm's time moves by a third between
// runs. pg-off-ns/op and pg-on-ns/op are PostgreSQL's CPU per check
// (pgCPU), the scheduler's claim of the page included, which records the
// removals the page's last check made due; ns/op is both checks. Each page
// is checked once a round.
func BenchmarkRemovalTracking(b *testing.B) {
	pages := corpusLinks(b, 100, 30)
	if len(pages) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	histories := historyLinks(b)
	for _, kind := range []struct {
		name string
		// links is page i's links at round r.
		links func(i, r int) []watch.Link
	}{
		{"rotating", func(i, r int) []watch.Link { return withStories(pages[i], r, 30) }},
		{"growing", func(i, r int) []watch.Link { return withStories(pages[i], r, 1<<30) }},
		{"history", func(i, r int) []watch.Link {
			versions := histories[i%len(histories)]
			v := (i + r) % (2*len(versions) - 2) // forth and back
			return versions[min(v, 2*len(versions)-2-v)]
		}},
	} {
		b.Run(kind.name, func(b *testing.B) {
			first := make([][]watch.Link, len(pages))
			for i := range first {
				first[i] = kind.links(i, 0)
			}
			arms := []*removalArm{newRemovalArm(b, first, 0), newRemovalArm(b, first, 2)}
			round := 0
			at := time.Now().Add(-time.Hour)
			b.ReportAllocs()
			for _, a := range arms {
				a.pgBefore = pgCPU(b, a.probe)
			}
			for b.Loop() {
				i := round % len(pages)
				at = at.Add(time.Millisecond)
				for _, a := range arms {
					a.check(b, i, round, at, kind.links(i, round/len(pages)+1))
				}
				round++
			}
			off, on := arms[0].pgPerCheck(b, round), arms[1].pgPerCheck(b, round)
			b.ReportMetric(off, "pg-off-ns/op")
			b.ReportMetric(on, "pg-on-ns/op")
			b.ReportMetric(on/off, "pg-on/off")
			for _, a := range arms {
				b.Logf("removals %d: PostgreSQL's CPU per check: %v claiming it (recording its due removals included), %v in all; %d removals; %d statements refused",
					a.k, a.claimCPU/time.Duration(max(round, 1)), time.Duration(a.pgPerCheck(b, round)), a.removals(b), a.refused(b))
			}
		})
	}
}

// historyLinks is the links of every version of each homepage history of
// the corpus, as a crawler would send them.
func historyLinks(b *testing.B) [][][]watch.Link {
	dirs, err := os.ReadDir(filepath.Join(corpus.Dir(), "history"))
	if err != nil {
		corpus.History(b, "") // skips, or fails with CI=true
	}
	var out [][][]watch.Link
	for _, d := range dirs {
		var versions [][]watch.Link
		for _, snap := range corpus.History(b, d.Name()) {
			html, _ := fetch.DecodeHTML(snap.Body, snap.ContentType)
			links, _, err := domwalk.Parse(bytes.NewReader(html), snap.URL, domwalk.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			versions = append(versions, links)
		}
		if len(versions) > 1 {
			out = append(out, versions)
		}
	}
	if len(out) == 0 {
		b.Skip("no homepage history of two versions in the corpus")
	}
	return out
}

// removalArm is one processor of BenchmarkRemovalTracking, on its own
// database, with the corpus' baselines recorded.
type removalArm struct {
	bp       *benchProcessor
	probe    *pgxpool.Pool
	states   map[int64]*watch.Followed
	k        int
	pgBefore time.Duration
	// claimCPU is PostgreSQL's CPU in the claims, part of the arm's whole.
	claimCPU time.Duration
}

func newRemovalArm(b *testing.B, first [][]watch.Link, k int) *removalArm {
	bp := newBenchProcessorWith(b, "", len(first), processor.Config{RemovalChecks: k})
	at := time.Now().Add(-2 * time.Hour)
	for i, links := range first {
		bp.handle(b, bp.pages[i], links, at)
	}
	return &removalArm{bp: bp, probe: probePool(b, bp.dsn), k: k}
}

// check sends the i-th page's task of round r, fetched at at, with links.
// A round starts by claiming every page as the scheduler does, so each
// task carries its job's following state, the claim records the removals
// the round before made due, and its cost is counted.
func (a *removalArm) check(b *testing.B, i, r int, at time.Time, links []watch.Link) {
	if i == 0 {
		t0 := pgCPU(b, a.probe)
		a.states = a.claim(b)
		a.claimCPU += pgCPU(b, a.probe) - t0
	}
	p := a.bp.pages[i]
	a.bp.handleTask(b, watch.Task{BaseURL: p.BaseURL, ID: p.ID, Status: 200, FetchedAt: at,
		Context: links, Followed: a.states[p.ID]})
}

// claim makes every page due and claims it through the scheduler's
// statement (store.ClaimDue), and returns each page's following state as
// its job carries it.
func (a *removalArm) claim(b *testing.B) map[int64]*watch.Followed {
	ctx := context.Background()
	if _, err := a.probe.Exec(ctx, `UPDATE pages SET next_check_at = now() - interval '1 second', lease_until = NULL`); err != nil {
		b.Fatal(err)
	}
	states := map[int64]*watch.Followed{}
	_, err := a.bp.st.ClaimDue(ctx, watch.ClaimParams{Limit: len(a.bp.pages), Lease: time.Hour},
		func(_ context.Context, jobs []watch.Job) ([]watch.Postponed, error) {
			for _, j := range jobs {
				states[j.ID] = j.Followed
			}
			return nil, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	return states
}

// removals is how many removals the arm recorded.
func (a *removalArm) removals(b *testing.B) int64 {
	var n int64
	if err := a.probe.QueryRow(context.Background(), `SELECT count(*) FROM removals`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// refused is how many of the arm's statements failed: a check whose page's
// state moved since its job was claimed is refused (PW001) and computed
// again, which the benchmark's rounds should never cause.
func (a *removalArm) refused(b *testing.B) int64 {
	var n int64
	if err := a.probe.QueryRow(context.Background(),
		`SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// pgPerCheck is PostgreSQL's CPU per check of the arm since its start.
func (a *removalArm) pgPerCheck(b *testing.B, checks int) float64 {
	return float64(pgCPU(b, a.probe)-a.pgBefore) / float64(max(checks, 1))
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

// BenchmarkHourlyCounts is the price, on the check path, of the pages
// list's sparklines: migration 00017's statement trigger on updates, which
// upserts one page_hours row per page and hour a check inserts into. Two
// processors, removals at their default, check the same pages side by
// side, each on a database of its own; one database has the trigger
// dropped. On "rotating" pages each check records 3 new links; on
// "unchanged" pages none, the common case, in which the trigger still
// fires, on an empty transition table. pg-off-ns/op and pg-on-ns/op are
// PostgreSQL's CPU per check without and with the trigger.
func BenchmarkHourlyCounts(b *testing.B) {
	pages := corpusLinks(b, 100, 30)
	if len(pages) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	for _, kind := range []struct {
		name  string
		links func(i, r int) []watch.Link
	}{
		{"rotating", func(i, r int) []watch.Link { return withStories(pages[i], r, 30) }},
		{"unchanged", func(i, r int) []watch.Link { return withStories(pages[i], 0, 30) }},
	} {
		b.Run(kind.name, func(b *testing.B) {
			first := make([][]watch.Link, len(pages))
			for i := range first {
				first[i] = kind.links(i, 0)
			}
			arms := []*removalArm{newRemovalArm(b, first, processor.DefaultRemovalChecks), newRemovalArm(b, first, processor.DefaultRemovalChecks)}
			if _, err := arms[0].probe.Exec(context.Background(), `DROP TRIGGER updates_count_page_hours ON updates`); err != nil {
				b.Fatal(err)
			}
			round := 0
			at := time.Now().Add(-time.Hour)
			for _, a := range arms {
				a.pgBefore = pgCPU(b, a.probe)
			}
			for b.Loop() {
				i := round % len(pages)
				at = at.Add(time.Millisecond)
				for _, a := range arms {
					a.check(b, i, round, at, kind.links(i, round/len(pages)+1))
				}
				round++
			}
			off, on := arms[0].pgPerCheck(b, round), arms[1].pgPerCheck(b, round)
			b.ReportMetric(off, "pg-off-ns/op")
			b.ReportMetric(on, "pg-on-ns/op")
			b.ReportMetric(on/off, "pg-on/off")
			var hours int64
			if err := arms[1].probe.QueryRow(context.Background(), `SELECT coalesce(sum(links), 0) FROM page_hours`).Scan(&hours); err != nil {
				b.Fatal(err)
			}
			b.Logf("%d checks; the trigger counted %d new links", round, hours)
		})
	}
}

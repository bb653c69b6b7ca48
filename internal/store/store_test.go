package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func openStore(t *testing.T) (*store.Store, *pgxpool.Pool) { return systest.Store(t) }

func links(urls ...string) []watch.NewLink {
	out := make([]watch.NewLink, len(urls))
	for i, u := range urls {
		k := shortlink.Key(u)
		out[i] = watch.NewLink{Key: k, URL: u, Text: "text of " + u, Code: shortlink.Code(k, 8)}
	}
	return out
}

// keysOf is the keys of links: a check's whole link set.
func keysOf(links []watch.NewLink) []uint64 {
	keys := make([]uint64, 0, len(links))
	for _, l := range links {
		keys = append(keys, l.Key)
	}
	return keys
}

func ok(id int64, at time.Time) watch.Check {
	return watch.Check{PageID: id, FetchedAt: at, Status: 200}
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	applied, err := st.Migrate(context.Background(), testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("second Migrate applied %v, want nothing", applied)
	}
	v, err := st.SchemaVersion(context.Background())
	if err != nil || v < 1 {
		t.Fatalf("SchemaVersion = %d, %v; want at least 1", v, err)
	}
}

func TestConcurrentMigrationsApplyOnce(t *testing.T) {
	t.Parallel()
	dsn := testsvc.Postgres(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			st, err := store.Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			_, err = st.Migrate(ctx, testsvc.Logger(t))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
}

func TestBaselineThenOnlyNewLinksBecomeUpdates(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	rec, err := st.RecordCheck(ctx, ok(page.ID, t0), links("https://news.example/a", "https://news.example/b"))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Baseline || rec.Inserted != 2 || len(rec.Updates) != 0 {
		t.Fatalf("first check = %+v, want a baseline of 2 links and no updates", rec)
	}
	rec, err = st.RecordCheck(ctx, ok(page.ID, t0.Add(time.Second)), links("https://news.example/a", "https://news.example/c"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Baseline || rec.Inserted != 1 || len(rec.Updates) != 1 || rec.Updates[0].URL != "https://news.example/c" {
		t.Fatalf("second check = %+v, want exactly /c as an update", rec)
	}
	// A redelivery of the same check changes nothing.
	rec, err = st.RecordCheck(ctx, ok(page.ID, t0.Add(time.Second)), links("https://news.example/a", "https://news.example/c"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Inserted != 0 || len(rec.Updates) != 0 {
		t.Fatalf("redelivered check = %+v, want no effect", rec)
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 1 || ups[0].URL != "https://news.example/c" || ups[0].Text != "text of https://news.example/c" || ups[0].Code == "" {
		t.Fatalf("Updates = %+v, want /c once with its text and code", ups)
	}
}

func TestFailedCheckIsNotABaseline(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://down.example/"})
	_, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: time.Now(), Status: 503, Error: "HTTP 503"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := st.Page(ctx, page.ID)
	if !got.BaselineAt.IsZero() || got.LastError != "HTTP 503" || got.LastStatus != 503 || got.ConsecutiveFailures != 1 {
		t.Fatalf("page after a failed check = %+v, want error recorded, one failure, no baseline", got)
	}
	rec, err := st.RecordCheck(ctx, ok(page.ID, time.Now()), links("https://down.example/x"))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Baseline || len(rec.Updates) != 0 {
		t.Fatalf("first successful check after a failure = %+v, want the baseline", rec)
	}
	got, _ = st.Page(ctx, page.ID)
	if got.LastError != "" || got.ConsecutiveFailures != 0 {
		t.Fatalf("page after recovery = %+v, want the error cleared", got)
	}
}

func TestStaleCheckDoesNotRollBackValidators(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://etag.example/"})
	now := time.Now()
	newer := ok(page.ID, now)
	newer.ETag = `"v2"`
	if _, err := st.RecordCheck(ctx, newer, nil); err != nil {
		t.Fatal(err)
	}
	older := ok(page.ID, now.Add(-time.Minute))
	older.ETag = `"v1"`
	if _, err := st.RecordCheck(ctx, older, nil); err != nil {
		t.Fatal(err)
	}
	var etag string
	if err := pool.QueryRow(ctx, `SELECT etag FROM pages WHERE id = $1`, page.ID).Scan(&etag); err != nil {
		t.Fatal(err)
	}
	if etag != `"v2"` {
		t.Fatalf("etag after a stale check = %s, want the newer \"v2\"", etag)
	}
}

func TestRecordCheckOfRemovedPage(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	_, err := st.RecordCheck(context.Background(), ok(12345, time.Now()), links("https://x.example/"))
	if !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("RecordCheck of a missing page = %v, want ErrPageNotFound", err)
	}
}

func TestConcurrentChecksOfOnePageRecordEachLinkOnce(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://busy.example/"})
	if _, err := st.RecordCheck(ctx, ok(page.ID, time.Now()), links("https://busy.example/old")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := st.RecordCheck(ctx, ok(page.ID, time.Now()), links("https://busy.example/old", "https://busy.example/new1", "https://busy.example/new2")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ups, _ := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if len(ups) != 2 {
		t.Fatalf("8 concurrent deliveries of one check gave %d updates, want 2", len(ups))
	}
}

// Concurrent first checks, as after a crawler redelivers a page's first job:
// exactly one of them is the baseline, and what the others find on the same
// page is not news.
func TestConcurrentFirstChecksMakeOneBaseline(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	for round := range 5 {
		page, err := st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://first%d.example/", round)})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			baselines int
		)
		for i := range 8 {
			wg.Go(func() {
				rec, err := st.RecordCheck(ctx, ok(page.ID, time.Now()),
					links("https://first.example/a", "https://first.example/b", fmt.Sprintf("https://first.example/only%d", i)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if rec.Baseline {
					baselines++
				}
			})
		}
		wg.Wait()
		if baselines != 1 {
			t.Errorf("round %d: %d of 8 concurrent first checks were the baseline, want 1", round, baselines)
		}
		ups, _ := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
		if len(ups) != 7 {
			t.Errorf("round %d: %d updates, want 7 (each later check's own link)", round, len(ups))
		}
	}
}

func TestDuplicatePageAndRemove(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://dup.example/", Interval: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if p.Interval != 30*time.Second || !p.Enabled {
		t.Fatalf("CreatePage = %+v, want a 30s enabled page", p)
	}
	if _, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://dup.example/"}); !errors.Is(err, watch.ErrDuplicatePage) {
		t.Fatalf("second CreatePage = %v, want ErrDuplicatePage", err)
	}
	if _, err := st.TrashPage(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TrashPage(ctx, p.ID); !errors.Is(err, watch.ErrPageNotFound) {
		t.Fatalf("TrashPage twice = %v, want ErrPageNotFound", err)
	}
}

func TestQueryUpdatesByPageAndTime(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	var ids []int64
	for i := range 2 {
		p, err := st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://q%d.example/", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
		st.RecordCheck(ctx, ok(p.ID, time.Now()), nil) // baseline with no links
		for j := range 3 {
			if _, err := st.RecordCheck(ctx, ok(p.ID, time.Now()), links(fmt.Sprintf("https://q%d.example/%d", i, j))); err != nil {
				t.Fatal(err)
			}
		}
	}
	all, _ := st.QueryUpdates(ctx, watch.UpdateFilter{})
	if len(all) != 6 {
		t.Fatalf("all updates = %d, want 6", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].DiscoveredAt.After(all[i-1].DiscoveredAt) {
			t.Fatalf("updates not newest first: %v before %v", all[i-1].DiscoveredAt, all[i].DiscoveredAt)
		}
	}
	one, _ := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: ids[1], Limit: 2})
	if len(one) != 2 || one[0].PageID != ids[1] {
		t.Fatalf("page %d limit 2 = %+v", ids[1], one)
	}
	future, _ := st.QueryUpdates(ctx, watch.UpdateFilter{Since: time.Now().Add(time.Hour)})
	if len(future) != 0 {
		t.Fatalf("updates since an hour from now = %d, want 0", len(future))
	}
}

func TestPlainSQLInsertGetsDefaults(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url) VALUES ('https://plain.example/')`); err != nil {
		t.Fatal(err)
	}
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("Pages = %v, %v", pages, err)
	}
	p := pages[0]
	if p.Interval != watch.DefaultInterval || !p.Enabled || p.NextCheckAt.After(time.Now()) {
		t.Fatalf("plain SQL page = %+v, want default interval, enabled, due now", p)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url, check_interval) VALUES ('https://fast.example/', '1 second')`); err == nil {
		t.Fatal("an interval under 10 seconds was accepted")
	}
}

// TestShorterIntervalAndCheckNowApplyAtTheNextClaim: a shortened interval
// waited for the check scheduled with the old one; check now makes a page
// due at once, and a paused page stays paused.
func TestShorterIntervalAndCheckNowApplyAtTheNextClaim(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://example.com/", Interval: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Checked just now, as the claim of its check schedules the next: a
	// day away.
	if _, err := pool.Exec(ctx, `UPDATE pages SET last_checked_at = now(), next_check_at = now() + interval '1 day' WHERE id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	p, _ = st.Page(ctx, p.ID)
	if time.Until(p.NextCheckAt) < 23*time.Hour {
		t.Fatalf("after its first check the page is due at %s, want a day away", p.NextCheckAt)
	}
	short := time.Minute
	p, err = st.EditPage(ctx, p.ID, watch.PageEdit{Interval: &short})
	if err != nil || time.Until(p.NextCheckAt) > 2*time.Minute {
		t.Fatalf("after --interval 1m the page is due at %s (%v), want within a minute", p.NextCheckAt, err)
	}
	long := 48 * time.Hour
	if p2, err := st.EditPage(ctx, p.ID, watch.PageEdit{Interval: &long}); err != nil || !p2.NextCheckAt.Equal(p.NextCheckAt) {
		t.Fatalf("a longer interval moved the scheduled check: %s to %s (%v)", p.NextCheckAt, p2.NextCheckAt, err)
	}
	if p, err = st.CheckNow(ctx, p.ID); err != nil || time.Until(p.NextCheckAt) > 0 {
		t.Fatalf("after check now the page is due at %s (%v), want now", p.NextCheckAt, err)
	}
	off := false
	if _, err := st.EditPage(ctx, p.ID, watch.PageEdit{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CheckNow(ctx, p.ID); !errors.Is(err, watch.ErrPagePaused) {
		t.Errorf("check now of a paused page = %v, want ErrPagePaused", err)
	}
	if _, err := st.CheckNow(ctx, 999999); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("check now of no page = %v, want ErrPageNotFound", err)
	}
}

// TestRefusedAddsUseNoID: an add refused as a duplicate drew an id, so the
// next page's id skipped one.
func TestRefusedAddsUseNoID(t *testing.T) {
	st, _ := openStore(t)
	ctx := context.Background()
	a, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://example.com/a"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://example.com/a"}); !errors.Is(err, watch.ErrDuplicatePage) {
			t.Fatalf("a second add of one URL = %v, want ErrDuplicatePage", err)
		}
	}
	b, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://example.com/b"})
	if err != nil || b.ID != a.ID+1 {
		t.Errorf("the page after three refused adds has id %d (%v), want %d", b.ID, err, a.ID+1)
	}
}

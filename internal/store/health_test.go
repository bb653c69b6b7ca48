package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// keptCounts reads the page's kept_counts.
func keptCounts(t *testing.T, pool *pgxpool.Pool, id int64) []int32 {
	t.Helper()
	var counts []int32
	if err := pool.QueryRow(context.Background(), `SELECT kept_counts FROM pages WHERE id = $1`, id).Scan(&counts); err != nil {
		t.Fatal(err)
	}
	return counts
}

// healthRig records checks of one page, one second apart.
type healthRig struct {
	t    *testing.T
	page watch.Page
	at   time.Time
	rec  func(watch.Check, []watch.NewLink) (watch.Recorded, error)
	get  func() (watch.Page, error)
}

func newHealthRig(t *testing.T, url string) (*healthRig, *pgxpool.Pool) {
	st, pool := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return &healthRig{t: t, page: page, at: time.Now().Add(-time.Hour).Truncate(time.Microsecond),
		rec: func(c watch.Check, ls []watch.NewLink) (watch.Recorded, error) { return st.RecordCheck(ctx, c, ls) },
		get: func() (watch.Page, error) { return st.Page(ctx, page.ID) },
	}, pool
}

// read records a successful check that read the page and kept kept links,
// none of them new (as when the seen-set knows them all).
func (r *healthRig) read(kept int, missed ...string) watch.Recorded {
	r.t.Helper()
	r.at = r.at.Add(time.Second)
	c := ok(r.page.ID, r.at)
	c.FullSet, c.Reading = true, &watch.Reading{Kept: kept, MissedRegions: missed}
	return r.must(c, nil)
}

func (r *healthRig) fail(status int, challenge string) watch.Recorded {
	r.t.Helper()
	r.at = r.at.Add(time.Second)
	c := watch.Check{PageID: r.page.ID, FetchedAt: r.at, Status: status, Error: "failed", Challenge: challenge}
	return r.must(c, nil)
}

func (r *healthRig) must(c watch.Check, ls []watch.NewLink) watch.Recorded {
	r.t.Helper()
	rec, err := r.rec(c, ls)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// expect checks the page's stored health against the recorded one and want.
func (r *healthRig) expect(rec watch.Recorded, reason watch.Degradation, changed bool) watch.Health {
	r.t.Helper()
	p, err := r.get()
	if err != nil {
		r.t.Fatal(err)
	}
	if p.Health.Reason != reason || rec.Health.Reason != reason || rec.Changed != changed {
		r.t.Fatalf("health = %+v (page %+v), changed %t; want %q, changed %t", rec.Health, p.Health, rec.Changed, reason, changed)
	}
	if !p.Health.Since.Equal(rec.Health.Since) || p.Health.Detail != rec.Health.Detail {
		r.t.Fatalf("page health %+v, recorded %+v: want the same", p.Health, rec.Health)
	}
	if reason == "" && (p.Health.Detail != "" || !p.Health.Since.IsZero()) {
		r.t.Fatalf("healthy page keeps %+v", p.Health)
	}
	return p.Health
}

// Each reason of a successful check, its run kept across reasons, and a
// recovery; a stale check, a redelivery and a 304 change nothing.
func TestHealthOfSuccessfulChecks(t *testing.T) {
	r, pool := newHealthRig(t, "https://health.example/")
	// The baseline, with its links: no history, so it cannot be few_links.
	r.at = r.at.Add(time.Second)
	c := ok(r.page.ID, r.at)
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 3}
	r.expect(r.must(c, links("https://health.example/a", "https://health.example/b", "https://health.example/c")), "", false)
	for range 3 {
		r.expect(r.read(100), "", false)
	}
	first := r.at.Add(time.Second)
	rec := r.read(10)
	h := r.expect(rec, watch.FewLinks, true)
	if want := "10 links where it usually has 100 (median of its last 4 checks)"; h.Detail != want || !h.Since.Equal(first) {
		t.Fatalf("few links: %+v, want %q since %s", h, want, first)
	}
	// A redelivery of the same check: nothing moves, the count is not
	// appended twice.
	before := keptCounts(t, pool, r.page.ID)
	c = ok(r.page.ID, r.at)
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 10}
	r.expect(r.must(c, nil), watch.FewLinks, false)
	if after := keptCounts(t, pool, r.page.ID); !slices.Equal(before, after) || !slices.Equal(after, []int32{3, 100, 100, 100, 10}) {
		t.Fatalf("kept counts %v after a redelivery, %v before; want 3 100 100 100 10 both", after, before)
	}
	h = r.expect(r.read(0), watch.NoLinks, false)
	if h.Detail != watch.NoLinksDetail || !h.Since.Equal(first) {
		t.Fatalf("no links: %+v, want %q since %s (the run began with few links)", h, watch.NoLinksDetail, first)
	}
	h = r.expect(r.read(0, "#latest"), watch.RegionEmpty, false)
	if want := `no element matched the region "#latest"`; h.Detail != want || !h.Since.Equal(first) {
		t.Fatalf("region empty: %+v, want %q", h, want)
	}
	// A stale check (fetched before the last one) and a 304 keep the state.
	c = ok(r.page.ID, r.at.Add(-10*time.Second))
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 100}
	r.expect(r.must(c, nil), watch.RegionEmpty, false)
	r.at = r.at.Add(time.Second)
	r.expect(r.must(watch.Check{PageID: r.page.ID, FetchedAt: r.at, Status: 304}, nil), watch.RegionEmpty, false)
	// A check with new links (the statement with candidates) recovers it.
	r.at = r.at.Add(time.Second)
	c = ok(r.page.ID, r.at)
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 90}
	r.expect(r.must(c, links("https://health.example/new")), "", true)
	if got := keptCounts(t, pool, r.page.ID); !slices.Equal(got, []int32{3, 100, 100, 100, 10, 0, 0, 90}) {
		t.Fatalf("kept counts %v, want every check that read the page once", got)
	}
	// The history keeps the last ten.
	for range 5 {
		r.read(50)
	}
	if got := keptCounts(t, pool, r.page.ID); !slices.Equal(got, []int32{100, 10, 0, 0, 90, 50, 50, 50, 50, 50}) {
		t.Fatalf("kept counts %v, want the last ten", got)
	}
}

// A page too small, or with too short a history, is never few_links.
func TestFewLinksNeedsAHistoryAndAUsualSize(t *testing.T) {
	r, _ := newHealthRig(t, "https://tiny.example/")
	r.expect(r.read(4), "", false)
	r.expect(r.read(4), "", false)
	r.expect(r.read(4), "", false)
	r.expect(r.read(1), "", false) // the median is 4, under the floor
	r, _ = newHealthRig(t, "https://young.example/")
	r.expect(r.read(200), "", false)
	r.expect(r.read(200), "", false)
	r.expect(r.read(1), "", false) // two checks are no history yet
	r.expect(r.read(200), "", false)
	r.expect(r.read(39), watch.FewLinks, true) // under 20% of 200
	r.expect(r.read(40), "", true)             // 20% is enough
}

// A block (401, 403, 429, a challenge) degrades the page and forgets its
// validators; other failures leave its health alone.
func TestHealthOfFailedChecks(t *testing.T) {
	r, pool := newHealthRig(t, "https://blocked.example/")
	r.expect(r.read(50), "", false)
	r.expect(r.fail(500, ""), "", false)
	r.expect(r.fail(0, ""), "", false)
	if _, err := pool.Exec(context.Background(), `UPDATE pages SET etag = 'e', last_modified = 'm', links_digest = 'd', body_digest = 'b' WHERE id = $1`, r.page.ID); err != nil {
		t.Fatal(err)
	}
	first := r.at.Add(time.Second)
	h := r.expect(r.fail(403, ""), watch.Blocked, true)
	if want := "the page answered 403 Forbidden"; h.Detail != want || !h.Since.Equal(first) {
		t.Fatalf("blocked: %+v, want %q since %s", h, want, first)
	}
	var forgotten bool
	if err := pool.QueryRow(context.Background(), `SELECT etag IS NULL AND last_modified IS NULL AND links_digest IS NULL AND body_digest IS NULL
		FROM pages WHERE id = $1`, r.page.ID).Scan(&forgotten); err != nil || !forgotten {
		t.Fatalf("a block kept the page's validators or digests (%v): the next check could be a 304 that keeps it blocked", err)
	}
	r.expect(r.fail(504, ""), watch.Blocked, false) // a timeout says nothing new
	h = r.expect(r.fail(200, "Cloudflare"), watch.Challenge, false)
	if want := "the site answered with a Cloudflare challenge page instead of the page"; h.Detail != want || !h.Since.Equal(first) {
		t.Fatalf("challenge: %+v, want %q since %s", h, want, first)
	}
	h = r.expect(r.fail(429, ""), watch.Blocked, false)
	if want := "the page answered 429 Too Many Requests"; h.Detail != want {
		t.Fatalf("blocked: %q, want %q", h.Detail, want)
	}
	// A stale success, fetched before the block, does not lift it.
	c := ok(r.page.ID, first.Add(-time.Second))
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 50}
	r.expect(r.must(c, nil), watch.Blocked, false)
	r.expect(r.read(50), "", true)
	r.expect(r.fail(401, ""), watch.Blocked, true)
}

// Options that change what a page admits start its history afresh: a
// region that keeps a tenth of the links is the user's choice, no blind
// watch.
func TestOptionsChangeForgetsTheKeptCounts(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://narrowed.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	for range 4 {
		at = at.Add(time.Second)
		c := ok(page.ID, at)
		c.FullSet, c.Reading = true, &watch.Reading{Kept: 200}
		if _, err := st.RecordCheck(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	within := []string{"#latest"}
	if _, err := st.EditPage(ctx, page.ID, watch.PageEdit{Within: &within}); err != nil {
		t.Fatal(err)
	}
	if got := keptCounts(t, pool, page.ID); len(got) != 0 {
		t.Fatalf("kept counts %v after a change of regions, want none", got)
	}
	at = at.Add(time.Second)
	c := ok(page.ID, at)
	c.FullSet, c.Reading = true, &watch.Reading{Kept: 20}
	rec, err := st.RecordCheck(ctx, c, nil)
	if err != nil || rec.Health.Degraded() {
		t.Fatalf("the first check with the narrower region: %+v, %v; want healthy", rec.Health, err)
	}
}

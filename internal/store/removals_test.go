package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// recordRemovals records the pages' due removals, as the processors'
// sweep does (the claim of a page's next check records them in the
// pipeline), and returns the URLs of the removals it recorded as readers
// see them, sorted.
func recordRemovals(t *testing.T, st *store.Store, pages ...int64) string {
	t.Helper()
	ctx := context.Background()
	before := removalIDs(t, st)
	n, err := st.RecordRemovals(ctx, pages)
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.Removals(ctx, watch.RemovalFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var recorded []watch.Removal
	for _, r := range all {
		if !before[r.ID] {
			recorded = append(recorded, r)
		}
	}
	if int64(len(recorded)) != n {
		t.Fatalf("RecordRemovals said it recorded %d removals; readers see %d new ones", n, len(recorded))
	}
	return urls(recorded)
}

// removalIDs is the ids of every removal readers see.
func removalIDs(t *testing.T, st *store.Store) map[int64]bool {
	t.Helper()
	all, err := st.Removals(context.Background(), watch.RemovalFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	for _, r := range all {
		ids[r.ID] = true
	}
	return ids
}

// waitLockWaiters waits until at least n statements of the test's
// database wait for a lock.
func waitLockWaiters(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	testsvc.Eventually(t, 30*time.Second, fmt.Sprintf("%d statements waiting for a lock", n), func() (bool, error) {
		var got int
		err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&got)
		return got >= n, err
	})
}

// hasDue reports whether the page has due removals not yet recorded.
func hasDue(t *testing.T, pool *pgxpool.Pool, page int64) bool {
	t.Helper()
	var due bool
	if err := pool.QueryRow(context.Background(), `SELECT due_keys IS NOT NULL FROM pages WHERE id = $1`, page).Scan(&due); err != nil {
		t.Fatal(err)
	}
	return due
}

// urls is the URLs of removals, sorted.
func urls(rs []watch.Removal) string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.URL)
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// TestRemovalMigrationsKeepPendingAbsences migrates a database that 00007
// followed (a stored link set, a pending absence, a link an options change
// left out of the set) to 00008 and on to 00009 and 00011, where the
// followed set is bucket rows, links after them and gone keys, and then to
// 00012: the pending absences are carried along and recorded at the check
// they are due, the left-out link is not reported as removed, and a page
// 00007 never followed starts afresh. Down to 00011 the set goes back into
// bucket rows and a due removal not yet recorded is recorded; and down to
// 00007, and up again.
func TestRemovalMigrationsKeepPendingAbsences(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	mig := migrator(t, dsn)
	if _, err := mig.UpTo(ctx, 7); err != nil {
		t.Fatalf("migrate to 00007: %v", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	at := time.Now().Add(-time.Minute)
	var followed, fresh int64
	for _, p := range []struct {
		url string
		id  *int64
	}{{"https://followed.example/", &followed}, {"https://fresh.example/", &fresh}} {
		if err := pool.QueryRow(ctx, `INSERT INTO pages (base_url, baseline_at, last_checked_at, last_status, ok_checks)
			VALUES ($1, $2, $2, 200, 5) RETURNING id`, p.url, at).Scan(p.id); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `
			INSERT INTO links (page_id, link_key, url, text, code) SELECT $1, g, $2 || g, 'text ' || g, 'code' || g FROM generate_series(1, 3) g`,
			*p.id, p.url); err != nil {
			t.Fatal(err)
		}
	}
	// 00007's state of the followed page: its last set was {1, 2}; link 2
	// left at its fifth check, link 3 was left out by an options change.
	if _, err := pool.Exec(ctx, `
		INSERT INTO link_sets (page_id, digest, keys, fetched_at) VALUES ($1, 'd', '{1,2}', $2);
		`, followed, at); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE links SET absent_at = 5 WHERE page_id = $1 AND link_key = 2`, followed); err != nil {
		t.Fatal(err)
	}

	if _, err := mig.UpTo(ctx, 8); err != nil {
		t.Fatalf("migrate to 00008: %v", err)
	}
	state := func(page int64) string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `
			SELECT coalesce(pending_keys::text, 'NULL') || ' ' || coalesce(pending_since::text, 'NULL') || ' removed:' ||
				coalesce((SELECT string_agg(link_key::text, ',' ORDER BY link_key) FROM links WHERE page_id = $1 AND removed_at IS NOT NULL), '')
			FROM pages WHERE id = $1`, page).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := state(followed); got != "{2} {5} removed:3" {
		t.Fatalf("followed page after 00008: %s, want link 2 pending since check 5 and link 3 not followed", got)
	}
	if got := state(fresh); got != "NULL NULL removed:" {
		t.Fatalf("page 00007 never followed: %s, want not followed", got)
	}

	if _, err := mig.UpTo(ctx, 9); err != nil {
		t.Fatalf("migrate to 00009: %v", err)
	}
	storedSet := func(page int64) string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `
			SELECT coalesce(pending_keys::text, 'NULL') || ' ' || coalesce(pending_since::text, 'NULL') || ' set:' ||
				coalesce((SELECT string_agg(k::text, ',' ORDER BY k) FROM followed_keys, unnest(keys) AS k WHERE page_id = $1), '')
			FROM pages WHERE id = $1`, page).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := storedSet(followed); got != "{2} {5} set:1" {
		t.Fatalf("followed page after 00009: %s, want link 2 pending since check 5 and a set of link 1", got)
	}
	if got := storedSet(fresh); got != "NULL NULL set:" {
		t.Fatalf("page 00007 never followed, after 00009: %s, want not followed", got)
	}

	if _, err := mig.UpTo(ctx, 11); err != nil {
		t.Fatalf("migrate to 00011: %v", err)
	}
	// 00011's state, as its checks 6 and 7 could have left it: link 4
	// joined the set after its bucket's row was written, link 5 is listed
	// in the row but gone, pending since check 7.
	for _, sql := range []string{
		`INSERT INTO links (page_id, link_key, url, text, code, first_check)
		 VALUES ($1, 4, 'https://followed.example/4', 'text 4', 'code4', 7), ($1, 5, 'https://followed.example/5', 'text 5', 'code5', 6)`,
		`UPDATE followed_keys SET keys = '{1,5}', through = 6 WHERE page_id = $1 AND bucket = 0`,
		`UPDATE pages SET ok_checks = 7, gone_keys = '{5}', pending_keys = '{2,5}', pending_since = '{5,7}' WHERE id = $1`,
	} {
		if _, err := pool.Exec(ctx, sql, followed); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := mig.UpTo(ctx, 12); err != nil {
		t.Fatalf("migrate to 00012: %v", err)
	}
	baseKeys := "unnest(follow_base)" // a bigint[] until 00015
	following := func(page int64) string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `
			SELECT coalesce(pending_keys::text, 'NULL') || ' ' || coalesce(pending_since::text, 'NULL') || ' set:' ||
				CASE WHEN follow_base IS NULL THEN 'NULL' ELSE array_to_string(ARRAY(
					SELECT `+baseKeys+` EXCEPT SELECT unnest(follow_gone) UNION SELECT unnest(follow_added) ORDER BY 1), ',') END ||
				' due:' || coalesce(due_keys::text, 'NULL')
			FROM pages WHERE id = $1`, page).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := following(followed); got != "{2,5} {5,7} set:1,4 due:NULL" {
		t.Fatalf("followed page after 00012: %s, want links 2 and 5 pending and a set of links 1 and 4", got)
	}
	if got := following(fresh); got != "NULL NULL set:NULL due:NULL" {
		t.Fatalf("page 00007 never followed, after 00012: %s, want not followed", got)
	}
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	baseKeys = "follow_keys(follow_base)"
	if got := following(followed); got != "{2,5} {5,7} set:1,4 due:NULL" {
		t.Fatalf("followed page after 00015 (base in bytes): %s, want the set of links 1 and 4 kept", got)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	check := func(page int64, keys []uint64) bool {
		t.Helper()
		at = at.Add(time.Second)
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page, FetchedAt: at, Status: 200, FullSet: true,
			LinksDigest: fmt.Sprint(keys), Removals: watch.Removals{Checks: 2, Keys: keys}}, nil); err != nil {
			t.Fatal(err)
		}
		return hasDue(t, pool, page)
	}
	if !check(followed, []uint64{1, 4}) {
		t.Fatal("check 8 of the followed page made nothing due, want links 2 and 5 (absent since checks 5 and 7)")
	}
	if got := recordRemovals(t, st, followed); got != "[https://followed.example/2 https://followed.example/5]" {
		t.Fatalf("check 8 removed %s, want links 2 and 5", got)
	}
	if check(fresh, []uint64{}) || following(fresh) != "{} {} set: due:NULL" {
		t.Fatalf("the first followed check of a page: %s, want followed from an empty set, nothing due", following(fresh))
	}
	check(followed, []uint64{1})       // link 4 absent once
	if !check(followed, []uint64{1}) { // and twice: due, not yet recorded
		t.Fatal("link 4 absent twice: nothing due")
	}

	if _, err := mig.DownTo(ctx, 11); err != nil {
		t.Fatalf("migrate down to 00011: %v", err)
	}
	var rows, removed string
	if err := pool.QueryRow(ctx, `
		SELECT (SELECT string_agg(bucket || ':' || keys::text, ' ' ORDER BY bucket) FROM followed_keys
		        WHERE page_id = $1 AND cardinality(keys) > 0) || ' ' || pending_keys::text,
		       (SELECT string_agg(url, ' ' ORDER BY url) FROM removals WHERE page_id = $1)
		FROM pages WHERE id = $1`, followed).Scan(&rows, &removed); err != nil {
		t.Fatal(err)
	}
	if rows != "0:{1} {}" || removed != "https://followed.example/2 https://followed.example/4 https://followed.example/5" {
		t.Fatalf("back at 00011: rows and pending %q, removals %q; want link 1 followed, nothing pending, and 2, 4 and 5 removed", rows, removed)
	}
	if _, err := mig.DownTo(ctx, 7); err != nil {
		t.Fatalf("migrate down to 00007: %v", err)
	}
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}

// scheduledState is the following state the page's next job carries, from
// the scheduler's own claim.
func scheduledState(t *testing.T, st *store.Store, pool *pgxpool.Pool, page int64) *watch.Followed {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE pages SET next_check_at = now(), lease_until = NULL WHERE id = $1`, page); err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 100, Lease: time.Hour}, collect(&jobs)); err != nil {
		t.Fatalf("claim: %v", err)
	}
	for _, j := range jobs {
		if j.ID == page {
			return j.Followed
		}
	}
	t.Fatalf("page %d not claimed: jobs %v", page, jobs)
	return nil
}

// storyPage is a page of numbered stories followed through the
// scheduler's jobs, as the pipeline follows it.
type storyPage struct {
	t    *testing.T
	st   *store.Store
	pool *pgxpool.Pool
	page watch.Page
	at   time.Time
	on   map[int]bool // the stories on the page now
	seen map[int]bool // the stories recorded in links
	// recomputed counts the checks computed from the page's row.
	recomputed int
}

func newStoryPage(t *testing.T, name string) *storyPage {
	st, pool := openStore(t)
	page, err := st.CreatePage(context.Background(), watch.PageSpec{URL: "https://" + name + ".example/"})
	if err != nil {
		t.Fatal(err)
	}
	return &storyPage{t: t, st: st, pool: pool, page: page, at: time.Now().Add(-time.Hour), on: map[int]bool{}, seen: map[int]bool{}}
}

func (p *storyPage) url(i int) string { return fmt.Sprintf("%sstory/%d", p.page.BaseURL, i) }

// show puts stories on the page, hide takes them off.
func (p *storyPage) show(stories ...int) {
	for _, i := range stories {
		p.on[i] = true
	}
}

func (p *storyPage) hide(stories ...int) {
	for _, i := range stories {
		delete(p.on, i)
	}
}

// check records a whole check of the page as it is now, with its job's
// following state (nil: none), then records the removals it made due, and
// returns their story URLs.
func (p *storyPage) check(state *watch.Followed) string {
	p.t.Helper()
	var keys []uint64
	var candidates []watch.NewLink
	for i := range p.on {
		l := links(p.url(i))[0]
		keys = append(keys, l.Key)
		if !p.seen[i] {
			candidates, p.seen[i] = append(candidates, l), true
		}
	}
	p.at = p.at.Add(time.Second)
	rec, err := p.st.RecordCheck(context.Background(), watch.Check{PageID: p.page.ID, FetchedAt: p.at, Status: 200, FullSet: true,
		Removals: watch.Removals{Checks: 2, Keys: append([]uint64{}, keys...), Followed: state}}, candidates)
	if err != nil {
		p.t.Fatal(err)
	}
	if rec.Recomputed {
		p.recomputed++
	}
	return recordRemovals(p.t, p.st, p.page.ID)
}

// scheduled is check with the page's next job's state.
func (p *storyPage) scheduled() string { return p.check(scheduledState(p.t, p.st, p.pool, p.page.ID)) }

// removedURLs is the URLs of stories, as check returns them.
func (p *storyPage) removedURLs(stories ...int) string {
	var us []string
	for _, i := range stories {
		us = append(us, p.url(i))
	}
	slices.Sort(us)
	return fmt.Sprint(us)
}

// base is the page's follow_base and how many keys its delta holds.
func (p *storyPage) base() (string, int) {
	p.t.Helper()
	var base string
	var delta int
	if err := p.pool.QueryRow(context.Background(), `
		SELECT md5(follow_base), coalesce(cardinality(follow_added), 0) + coalesce(cardinality(follow_gone), 0)
		FROM pages WHERE id = $1`, p.page.ID).Scan(&base, &delta); err != nil {
		p.t.Fatal(err)
	}
	return base, delta
}

// TestRemovalsThroughJobs follows a page of 200 stories through the
// scheduler's jobs: a link absent for two checks is removed once; one back
// before that is not; one back after it is followed again and removed
// again when it leaves again. Links that come and go change only the small
// delta in the page's row, until it passes 64 keys and the check writes its
// own set as the new base.
func TestRemovalsThroughJobs(t *testing.T) {
	t.Parallel()
	p := newStoryPage(t, "jobs")
	for i := range 200 {
		p.show(i)
	}
	p.scheduled() // baseline: followed from here
	base, _ := p.base()

	p.hide(0)
	if got := p.scheduled(); got != "[]" {
		t.Fatalf("story 0's first absence removed %s", got)
	}
	if got, want := p.scheduled(), p.removedURLs(0); got != want {
		t.Fatalf("story 0 absent twice: removed %s, want %s", got, want)
	}
	p.show(0, 200, 201) // back, and two new stories
	if got := p.scheduled(); got != "[]" {
		t.Fatalf("story 0 back: removed %s", got)
	}
	p.hide(0, 1, 2, 3)
	p.scheduled()
	p.show(1) // back before its absence is due
	if got, want := p.scheduled(), p.removedURLs(0, 2, 3); got != want {
		t.Fatalf("stories 0, 2 and 3 absent twice, 1 back: removed %s, want %s", got, want)
	}
	if got := p.scheduled(); got != "[]" {
		t.Fatalf("a check with nothing due removed %s", got)
	}
	if now, delta := p.base(); now != base || delta != 5 {
		t.Fatalf("after 2 stories came and 3 left: base rewritten %t, delta %d keys; want the base kept and 5", now != base, delta)
	}

	// 30 stories leave and 40 come: past the delta's 64 keys.
	for i := 10; i < 40; i++ {
		p.hide(i)
	}
	for i := 300; i < 340; i++ {
		p.show(i)
	}
	p.scheduled()
	if now, delta := p.base(); now == base || delta != 0 {
		t.Fatalf("after 75 keys changed: base rewritten %t, delta %d keys; want a new base and no delta", now != base, delta)
	}
	var left []int
	for i := 10; i < 40; i++ {
		left = append(left, i)
	}
	if got, want := p.scheduled(), p.removedURLs(left...); got != want {
		t.Fatalf("30 stories absent twice across a new base: removed %s, want %s", got, want)
	}

	all, err := p.st.Removals(context.Background(), watch.RemovalFilter{PageID: p.page.ID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	removals, twice := len(all), 0
	for _, r := range all {
		if r.URL == p.url(0) {
			twice++
		}
	}
	if removals != 1+3+30 || twice != 2 {
		t.Fatalf("%d removals, story 0's %d; want %d, story 0's 2 (it left twice)", removals, twice, 1+3+30)
	}
	if p.recomputed != 0 {
		t.Fatalf("%d checks were computed again from the page's row; their jobs' states were right", p.recomputed)
	}
}

// A check whose job carries a state the page has left (another check of
// the page was recorded after the job was claimed, or the page's options
// changed) is refused by its statement, which so changes nothing, and is
// computed again from the page's row: it records what a check with the
// right state records.
func TestStaleJobStateIsComputedAgain(t *testing.T) {
	t.Parallel()
	p := newStoryPage(t, "stale")
	p.show(1, 2, 3)
	p.scheduled()
	stale := scheduledState(t, p.st, p.pool, p.page.ID)
	p.hide(3)
	p.check(nil) // story 3 absent once, recorded without a job's state
	if got, want := p.check(stale), p.removedURLs(3); got != want || p.recomputed != 2 {
		t.Fatalf("a check with a stale state, story 3 absent twice: removed %s, want %s; %d checks computed again, want 2",
			got, want, p.recomputed)
	}
	stale = scheduledState(t, p.st, p.pool, p.page.ID)
	within := []string{"#latest"}
	if _, err := p.st.EditPage(context.Background(), p.page.ID, watch.PageEdit{Within: &within}); err != nil {
		t.Fatal(err)
	}
	p.hide(1)
	if got := p.check(stale); got != "[]" {
		t.Fatalf("the check after an options change, with the state from before it, removed %s; want a re-baseline", got)
	}
	p.check(stale)
	if got := p.check(nil); got != "[]" {
		t.Fatalf("story 1, left out when the options changed, was removed: %s", got)
	}
}

// Two checks of one page at once (a redelivered job), without their jobs'
// states: each reads the page's state under its lock, so the second reads
// what the first wrote. Were it to read the state from before, the link the
// first check added and the second lacks would leave no trace and never be
// reported removed. Here the first check adds c, the second (fetched
// later) lacks it; c is removed two checks on.
func TestConcurrentChecksOfOnePageLoseNoRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://concurrent.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links("https://concurrent.example/a", "https://concurrent.example/b")
	abc := append(links("https://concurrent.example/c"), ab...)
	at := time.Now().Add(-time.Hour)
	check := func(ls []watch.NewLink, fetched time.Time) (watch.Recorded, error) {
		return st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: fetched, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keysOf(ls)}}, ls)
	}
	if _, err := check(ab, at); err != nil {
		t.Fatal(err)
	}

	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, `SELECT 1 FROM pages WHERE id = $1 FOR UPDATE`, page.ID); err != nil {
		t.Fatal(err)
	}
	waiting := func(n int) { waitLockWaiters(t, pool, n) }
	errs := make(chan error, 2)
	go func() { _, err := check(abc, at.Add(time.Second)); errs <- err }()
	waiting(1) // the first check queues for the lock first, so takes it first
	go func() { _, err := check(ab, at.Add(2*time.Second)); errs <- err }()
	waiting(2)
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	var removed []string
	for i := 3; i <= 5; i++ {
		if _, err := check(ab, at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if got := recordRemovals(t, st, page.ID); got != "[]" {
			removed = append(removed, got)
		}
	}
	if fmt.Sprint(removed) != "[[https://concurrent.example/c]]" {
		t.Fatalf("removed %v after the concurrent checks, want c once", removed)
	}
}

// A check answered 304 (no link set) only counts: it writes the page's row
// alone, and when that makes an absence due the removal is recorded, once.
func TestNotModifiedCheckRecordsADueRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://not-modified.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links("https://not-modified.example/a", "https://not-modified.example/b")
	at := time.Now().Add(-time.Hour)
	check := func(ls []watch.NewLink, keys []uint64, status int) bool {
		t.Helper()
		at = at.Add(time.Second)
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: status, FullSet: keys != nil,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, ls); err != nil {
			t.Fatal(err)
		}
		return hasDue(t, pool, page.ID)
	}
	check(ab, keysOf(ab), 200)
	if check(nil, []uint64{ab[0].Key}, 200) { // b absent once
		t.Fatal("a removal due after one absence")
	}
	if !check(nil, nil, 304) {
		t.Fatal("the 304 check after b's first absence made nothing due")
	}
	if got := recordRemovals(t, st, page.ID); got != "["+ab[1].URL+"]" {
		t.Fatalf("recorded %s, want b", got)
	}
	rs, err := st.Removals(ctx, watch.RemovalFilter{PageID: page.ID, Limit: 10})
	if err != nil || len(rs) != 1 || rs[0].Text != ab[1].Text || rs[0].PageID != page.ID {
		t.Fatalf("Removals = %+v, %v; want b with its text", rs, err)
	}
	if check(nil, nil, 304) {
		t.Fatal("the next 304 check made a removal due again")
	}
	if got := recordRemovals(t, st, page.ID); got != "[]" {
		t.Fatalf("recording again removed %s", got)
	}
}

// pageWithADueRemoval adds the page https://name.example/ and records
// three whole checks of it from at, with K = 2: links a and b, then a
// twice, so b's removal is due and not yet recorded.
func pageWithADueRemoval(t *testing.T, st *store.Store, name string, at time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://" + name + ".example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links(page.BaseURL+"a", page.BaseURL+"b")
	for j, ls := range [][]watch.NewLink{ab, ab[:1], ab[:1]} {
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(j) * time.Second),
			Status: 200, FullSet: true, Removals: watch.Removals{Checks: 2, Keys: keysOf(ls)}}, ls); err != nil {
			t.Fatal(err)
		}
	}
	return page.ID
}

// Removals made due are recorded exactly once however many processors
// record them at once, in whatever order they name the pages, and a
// processor that stopped before it recorded its pages' finds them again
// (PagesWithDueRemovals).
func TestDueRemovalsAreRecordedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := openStore(t)
	at := time.Now().Add(-time.Hour)
	var ids []int64
	for i := range 20 {
		ids = append(ids, pageWithADueRemoval(t, st, fmt.Sprintf("due-%d", i), at))
	}
	due, err := st.PagesWithDueRemovals(ctx, 100)
	if slices.Sort(due); err != nil || fmt.Sprint(due) != fmt.Sprint(ids) {
		t.Fatalf("PagesWithDueRemovals = %v, %v; want every page, %v", due, err, ids)
	}
	if some, err := st.PagesWithDueRemovals(ctx, 5); err != nil || len(some) != 5 {
		t.Fatalf("PagesWithDueRemovals(5) = %v, %v; want 5 pages", some, err)
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	var (
		wg       sync.WaitGroup
		recorded atomic.Int64
	)
	for _, order := range [][]int64{ids, reversed, ids[5:15], reversed[:10]} {
		wg.Go(func() {
			n, err := st.RecordRemovals(ctx, order)
			if err != nil {
				t.Error(err)
			}
			recorded.Add(n)
		})
	}
	wg.Wait()
	all, err := st.Removals(ctx, watch.RemovalFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, r := range all {
		removed = append(removed, r.URL)
	}
	if recorded.Load() != int64(len(ids)) || len(removed) != len(ids) || len(slices.Compact(slices.Sorted(slices.Values(removed)))) != len(ids) {
		t.Fatalf("%d removals recorded by four processors at once, %d listed, %d distinct; want one for each of %d pages",
			recorded.Load(), len(removed), len(slices.Compact(slices.Sorted(slices.Values(removed)))), len(ids))
	}
	if due, err := st.PagesWithDueRemovals(ctx, 100); err != nil || len(due) != 0 {
		t.Fatalf("pages with due removals after recording them: %v, %v", due, err)
	}
}

// A link that only a truncated check saw (the crawler's limits cut the
// page, so the check has no whole set) is followed from that check: when
// the next whole checks lack it, it is removed like any other.
func TestLinkSeenOnlyByATruncatedCheckIsRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := openStore(t)
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://truncated.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links("https://truncated.example/a", "https://truncated.example/b")
	brief := links("https://truncated.example/brief")
	at := time.Now().Add(-time.Hour)
	check := func(candidates []watch.NewLink, keys []uint64) string {
		t.Helper()
		at = at.Add(time.Second)
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, candidates); err != nil {
			t.Fatal(err)
		}
		return recordRemovals(t, st, page.ID)
	}
	check(ab, keysOf(ab))
	check(brief, nil) // truncated: the brief link and no whole set
	if got := check(nil, keysOf(ab)); got != "[]" {
		t.Fatalf("removed %s after one absence", got)
	}
	if got, want := check(nil, keysOf(ab)), "["+brief[0].URL+"]"; got != want {
		t.Fatalf("the link only a truncated check saw, absent twice since: removed %s, want %s", got, want)
	}
}

// A redelivered check (fetched no later than the page's last) that arrives
// after the page's options changed leaves the re-baseline to the next
// check: the links the new options leave out are never reported removed.
func TestRedeliveredCheckKeepsTheRebaseline(t *testing.T) {
	t.Parallel()
	p := newStoryPage(t, "redelivered")
	p.show(1, 2, 3)
	p.scheduled()
	last := p.at
	within := []string{"#latest"}
	if _, err := p.st.EditPage(context.Background(), p.page.ID, watch.PageEdit{Within: &within}); err != nil {
		t.Fatal(err)
	}
	p.at = last.Add(-time.Second) // the redelivery of the check before the last
	p.scheduled()
	p.at = last
	p.hide(1) // left out by the new options
	for range 3 {
		if got := p.scheduled(); got != "[]" {
			t.Fatalf("story 1, left out by the options change, was removed: %s", got)
		}
	}
}

// A page whose checks are always truncated (over the crawler's link cap)
// adds each check's new links to its followed set; past maxFollowDelta keys
// they become the base, so the page's row and jobs stay small, and a link
// that leaves afterwards is still removed by the next whole checks.
func TestAlwaysTruncatedPageFoldsItsAdditions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://capped.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	record := func(candidates []watch.NewLink, keys []uint64) {
		t.Helper()
		at = at.Add(time.Second)
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true, Truncated: 1,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, candidates); err != nil {
			t.Fatal(err)
		}
	}
	first := links("https://capped.example/first")
	record(first, keysOf(first)) // the whole set once: followed from here
	var all []watch.NewLink
	for i := range 40 {
		story := links(fmt.Sprintf("https://capped.example/story/%d", i), fmt.Sprintf("https://capped.example/story/%d/photo", i))
		all = append(all, story...)
		record(story, nil)
	}
	var base, delta int
	if err := pool.QueryRow(ctx, `SELECT length(follow_base) / 8, coalesce(cardinality(follow_added), 0) + coalesce(cardinality(follow_gone), 0)
		FROM pages WHERE id = $1`, page.ID).Scan(&base, &delta); err != nil {
		t.Fatal(err)
	}
	if base+delta != 81 || delta > 64 {
		t.Fatalf("after 80 links added by truncated checks: base %d, delta %d keys; want 81 followed, at most 64 in the delta", base, delta)
	}
	for range 2 { // whole checks without first
		at = at.Add(time.Second)
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keysOf(all)}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := recordRemovals(t, st, page.ID); got != "[https://capped.example/first]" {
		t.Fatalf("after two whole checks without it: removed %s, want first", got)
	}
}

// TestRemovalsGoWithTheirPage deletes pages while their due removals are
// being recorded, in both orders, with nothing between removals and pages
// but 00013's trigger: a removal recorded before its page's delete goes
// with the page, and a page deleted first gets none. Each race is forced
// by a transaction that holds the page's row while the recording and the
// delete queue behind it, one after the other.
func TestRemovalsGoWithTheirPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	at := time.Now().Add(-time.Hour)
	waiting := func(n int) { waitLockWaiters(t, pool, n) }
	for _, recordFirst := range []bool{true, false} {
		id := pageWithADueRemoval(t, st, fmt.Sprintf("race-%v", recordFirst), at)
		hold, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.Exec(ctx, `SELECT 1 FROM pages WHERE id = $1 FOR UPDATE`, id); err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			recorded int64
		)
		record := func() {
			wg.Go(func() {
				var err error
				if recorded, err = st.RecordRemovals(ctx, []int64{id}); err != nil {
					t.Error(err)
				}
			})
		}
		remove := func() {
			wg.Go(func() {
				// As EmptyTrash deletes a page for good; it skips a
				// locked row, so the race is forced with a plain delete.
				if _, err := pool.Exec(ctx, `DELETE FROM pages WHERE id = $1`, id); err != nil {
					t.Error(err)
				}
			})
		}
		first, second := record, remove
		if !recordFirst {
			first, second = remove, record
		}
		first()
		waiting(1)
		second()
		waiting(2)
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if want := map[bool]int64{true: 1, false: 0}[recordFirst]; recorded != want {
			t.Fatalf("recording first %v: %d removals recorded, want %d", recordFirst, recorded, want)
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM removals WHERE page_id = $1`, id).Scan(&left); err != nil || left != 0 {
			t.Fatalf("recording first %v: %d removals of the deleted page left, %v; want none", recordFirst, left, err)
		}
	}
}

// claimAll makes the pages due and claims them as the scheduler does, with
// publish, and returns what the claim did.
func claimAll(t *testing.T, st *store.Store, pool *pgxpool.Pool, publish func(context.Context, []watch.Job) ([]watch.Postponed, error), pages ...int64) (watch.Claimed, error) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `UPDATE pages SET next_check_at = now(), lease_until = NULL WHERE id = ANY ($1)`, pages); err != nil {
		t.Fatal(err)
	}
	return st.ClaimDue(ctx, watch.ClaimParams{Limit: 100, Lease: time.Hour}, publish)
}

// The claim of a page's next check records the removals its last check
// made due, once, with the link's URL and text as readers see them; a
// claim whose jobs could not be published records nothing and leaves them
// due for the next.
func TestClaimRecordsDueRemovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	id := pageWithADueRemoval(t, st, "claimed", time.Now().Add(-time.Hour))
	var jobs []watch.Job
	if _, err := claimAll(t, st, pool, func(context.Context, []watch.Job) ([]watch.Postponed, error) { return nil, errors.New("broker down") }, id); err == nil {
		t.Fatal("ClaimDue hid the publish failure")
	}
	if !hasDue(t, pool, id) || len(removalIDs(t, st)) != 0 {
		t.Fatal("a claim that failed to publish took the page's due removals")
	}
	c, err := claimAll(t, st, pool, collect(&jobs), id)
	if err != nil || c != (watch.Claimed{Jobs: 1, Removals: 1}) {
		t.Fatalf("ClaimDue = %+v, %v; want the page and its one due removal", c, err)
	}
	rs, err := st.Removals(ctx, watch.RemovalFilter{PageID: id, Limit: 10})
	if err != nil || len(rs) != 1 || rs[0].URL != "https://claimed.example/b" || rs[0].Text != "text of https://claimed.example/b" {
		t.Fatalf("removals after the claim: %+v, %v; want b with its text", rs, err)
	}
	if hasDue(t, pool, id) {
		t.Fatal("the claim left the removal it recorded due")
	}
	if c, err := claimAll(t, st, pool, collect(&jobs), id); err != nil || c.Removals != 0 {
		t.Fatalf("the next claim = %+v, %v; want no removal recorded again", c, err)
	}
}

// A check that makes a removal due while the claim of the page's next
// check holds its row waits for the claim, and adds its due key to the
// array the claim emptied: the claim records the removals due before it,
// the next claim the check's.
func TestCheckDuringTheClaimKeepsItsDueRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://during.example/"})
	if err != nil {
		t.Fatal(err)
	}
	abc := links("https://during.example/a", "https://during.example/b", "https://during.example/c")
	at := time.Now().Add(-time.Hour)
	check := func(ls []watch.NewLink, keys []uint64) error {
		at = at.Add(time.Second)
		_, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, ls)
		return err
	}
	for _, keys := range [][]uint64{keysOf(abc), keysOf(abc[:1]), {abc[0].Key, abc[2].Key}, keysOf(abc[:1])} {
		if err := check(abc, keys); err != nil { // b is due; c absent once
			t.Fatal(err)
		}
	}
	if got := removalIDs(t, st); len(got) != 0 {
		t.Fatalf("%d removals before any claim", len(got))
	}
	checked := make(chan error, 1)
	c, err := claimAll(t, st, pool, func(context.Context, []watch.Job) ([]watch.Postponed, error) {
		go func() { checked <- check(nil, keysOf(abc[:1])) }() // c absent twice
		waitLockWaiters(t, pool, 1)
		return nil, nil
	}, page.ID)
	if err != nil || c.Removals != 1 {
		t.Fatalf("the claim = %+v, %v; want b recorded", c, err)
	}
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	if c, err := claimAll(t, st, pool, collect(&jobs), page.ID); err != nil || c.Removals != 1 {
		t.Fatalf("the next claim = %+v, %v; want c, made due during the first claim", c, err)
	}
	rs, err := st.Removals(ctx, watch.RemovalFilter{PageID: page.ID, Limit: 10})
	if err != nil || urls(rs) != "[https://during.example/b https://during.example/c]" {
		t.Fatalf("removals: %s, %v; want b and c, once each", urls(rs), err)
	}
}

// A removal names its link by key; when links' retention prunes the link,
// the removal keeps a copy of its URL and text and is still listed.
func TestPrunedLinkKeepsItsRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	id := pageWithADueRemoval(t, st, "pruned", time.Now().Add(-time.Hour))
	if got := recordRemovals(t, st, id); got != "[https://pruned.example/b]" {
		t.Fatalf("recorded %s, want b", got)
	}
	for _, sql := range []string{
		`UPDATE links SET last_seen_at = now() - interval '100 days' WHERE page_id = $1 AND url = 'https://pruned.example/b'`,
		`UPDATE pages SET links_seen_at = now() WHERE id = $1`,
	} {
		if _, err := pool.Exec(ctx, sql, id); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.PruneLinks(ctx, 90*24*time.Hour, 100); err != nil || n != 1 {
		t.Fatalf("PruneLinks = %d, %v; want b pruned", n, err)
	}
	rs, err := st.Removals(ctx, watch.RemovalFilter{PageID: id, Limit: 10})
	if err != nil || len(rs) != 1 || rs[0].URL != "https://pruned.example/b" || rs[0].Text != "text of https://pruned.example/b" {
		t.Fatalf("removals after b was pruned: %+v, %v; want b with its text", rs, err)
	}
}

package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestRemovalMigrationsKeepPendingAbsences migrates a database that 00007
// followed (a stored link set, a pending absence, a link an options change
// left out of the set) to 00008 and on to 00009, 00010 and 00011: the
// pending absence is carried into the page's row and recorded at the check
// it was due, the left-out link is not reported as removed, and a page
// 00007 never followed starts afresh. A link 00010 follows without writing
// it into its bucket's row goes into the row on the way down to 00009, and
// a link 00011 lists as gone leaves its row on the way down to 00010; and
// down to 00007, and up again.
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

	if _, err := mig.UpTo(ctx, 10); err != nil {
		t.Fatalf("migrate to 00010: %v", err)
	}
	// The followed set of 00010: the rows' keys and the links after them.
	followedSet := func(page int64) string {
		t.Helper()
		var s string
		if err := pool.QueryRow(ctx, `
			SELECT coalesce(pending_keys::text, 'NULL') || ' ' || coalesce(pending_since::text, 'NULL') || ' set:' ||
				coalesce((SELECT string_agg(k::text, ',' ORDER BY k) FROM (
					SELECT unnest(keys) FROM followed_keys WHERE page_id = $1
					UNION
					SELECT l.link_key FROM links l JOIN followed_keys f ON f.page_id = l.page_id AND f.bucket = (l.link_key >> 59) & 31
					WHERE l.page_id = $1 AND l.first_check > f.through) AS s(k)), '')
			FROM pages WHERE id = $1`, page).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := followedSet(followed); got != "{2} {5} set:1" {
		t.Fatalf("followed page after 00010: %s, want it as after 00009", got)
	}

	if _, err := mig.UpTo(ctx, 11); err != nil {
		t.Fatalf("migrate to 00011: %v", err)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	var followedState *watch.Followed // the state a job carried, or none
	check := func(page int64, keys []uint64, links ...watch.NewLink) []watch.Removal {
		t.Helper()
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page, FetchedAt: at, Status: 200, FullSet: true,
			LinksDigest: fmt.Sprint(keys), Removals: watch.Removals{Checks: 2, Keys: keys, Followed: followedState}}, links)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Removed
	}
	if got := check(followed, []uint64{1}); len(got) != 1 || got[0].URL != "https://followed.example/2" {
		t.Fatalf("check 6 of the followed page removed %+v, want link 2 (absent since check 5)", got)
	}
	if got := followedSet(followed); got != "{} {} set:1" {
		t.Fatalf("followed page after its removal: %s", got)
	}
	if got := check(fresh, []uint64{}); len(got) != 0 {
		t.Fatalf("the first followed check of a page removed %+v, want nothing", got)
	}
	if got := followedSet(fresh); got != "{} {} set:" {
		t.Fatalf("fresh page after its first followed check: %s", got)
	}
	// Link 2 comes back and leaves again: not new, and removed again.
	check(followed, []uint64{1, 2})
	check(followed, []uint64{1})
	if got := check(followed, []uint64{1}); len(got) != 1 || got[0].URL != "https://followed.example/2" {
		t.Fatalf("link 2 back and gone again for two checks: removed %+v", got)
	}
	// New links 4 and then 5 (both in link 1's bucket) are followed
	// without a write of the bucket's row: 4 is removed when it leaves,
	// 5 is still on the page when 00010 goes down.
	link := func(k uint64) watch.NewLink {
		return watch.NewLink{Key: k, URL: fmt.Sprint("https://followed.example/", k), Text: fmt.Sprint("text ", k)}
	}
	check(followed, []uint64{1, 4}, link(4))
	if got, stored := followedSet(followed), rowKeys(t, pool, followed); got != "{} {} set:1,4" || stored != "1" {
		t.Fatalf("after link 4 was added: %s, row keys %s, want a set of 1 and 4 with only 1 written", got, stored)
	}
	check(followed, []uint64{1})
	if got := check(followed, []uint64{1}); len(got) != 1 || got[0].URL != "https://followed.example/4" {
		t.Fatalf("link 4 gone for two checks: removed %+v", got)
	}
	check(followed, []uint64{1, 5}, link(5))
	if got, stored := followedSet(followed), rowKeys(t, pool, followed); got != "{} {} set:1,5" || stored != "1" {
		t.Fatalf("after link 5 was added: %s, row keys %s, want a set of 1 and 5 with only 1 written", got, stored)
	}

	// Link 1 leaves at check 14, told by its job's state: its bucket's
	// row still lists it, as gone.
	followedState = scheduledState(t, st, pool, followed)
	check(followed, []uint64{5})
	followedState = nil
	var gone string
	if err := pool.QueryRow(ctx, `SELECT coalesce(gone_keys::text, 'NULL') FROM pages WHERE id = $1`, followed).Scan(&gone); err != nil {
		t.Fatal(err)
	}
	if got, stored := followedSet(followed), rowKeys(t, pool, followed); gone != "{1}" || got != "{1} {14} set:1,5" || stored != "1" {
		t.Fatalf("after link 1 left: gone %s, %s (gone keys not taken out), row keys %s; want gone {1}, pending {1} since 14, row keys 1",
			gone, got, stored)
	}

	if _, err := mig.DownTo(ctx, 10); err != nil {
		t.Fatalf("migrate down to 00010: %v", err)
	}
	if got := followedSet(followed); got != "{1} {14} set:5" {
		t.Fatalf("followed page back at 00010: %s, want link 1 pending since check 14 and a set of link 5", got)
	}
	if _, err := mig.DownTo(ctx, 9); err != nil {
		t.Fatalf("migrate down to 00009: %v", err)
	}
	if got := storedSet(followed); got != "{1} {14} set:5" {
		t.Fatalf("followed page back at 00009: %s, want link 1 pending and a set of link 5", got)
	}
	if _, err := mig.DownTo(ctx, 8); err != nil {
		t.Fatalf("migrate down to 00008: %v", err)
	}
	if got := state(followed); got != "{1} {14} removed:2,3,4" {
		t.Fatalf("followed page back at 00008: %s, want link 1 pending and links 2, 3 and 4 not followed", got)
	}
	if _, err := mig.DownTo(ctx, 7); err != nil {
		t.Fatalf("migrate down to 00007: %v", err)
	}
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
}

// rowKeys is the keys written in a page's followed_keys rows.
func rowKeys(t *testing.T, pool *pgxpool.Pool, page int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(k::text, ',' ORDER BY k), '') FROM followed_keys, unnest(keys) AS k WHERE page_id = $1`,
		page).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRemovalsFollowChangedBucketsOnly follows a page of 200 links whose
// checks each lose one link: each check compares key by key only the bucket
// of the key space that changed, and yet a link pending in a bucket the
// next check does not compare is still recorded when it is due, once, and a
// removed link that comes back is live again.
func TestRemovalsFollowChangedBucketsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://buckets.example/"})
	if err != nil {
		t.Fatal(err)
	}
	var all []watch.NewLink
	for i := range 200 {
		u := fmt.Sprintf("https://buckets.example/story/%d", i)
		all = append(all, watch.NewLink{Key: shortlink.Key(u), URL: u, Text: fmt.Sprint("Story ", i), Code: fmt.Sprint("c", i)})
	}
	// Two links in different buckets leave, one check apart.
	first := all[0]
	var second watch.NewLink
	for _, l := range all[1:] {
		if shortlink.KeyBucket(l.Key) != shortlink.KeyBucket(first.Key) {
			second = l
			break
		}
	}
	at := time.Now().Add(-time.Hour)
	check := func(links []watch.NewLink, without ...watch.NewLink) []string {
		t.Helper()
		at = at.Add(time.Second)
		keys := []uint64{}
	next:
		for _, l := range links {
			for _, w := range without {
				if w.Key == l.Key {
					continue next
				}
			}
			keys = append(keys, l.Key)
		}
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, links)
		if err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, r := range rec.Removed {
			urls = append(urls, r.URL)
		}
		return urls
	}
	check(all)                       // baseline: followed from here
	check(all, first)                // first missing once
	got := check(all, first, second) // first missing twice (its bucket unchanged), second once
	if fmt.Sprint(got) != fmt.Sprint([]string{first.URL}) {
		t.Fatalf("removed %v, want only %s", got, first.URL)
	}
	if got := check(all, first, second); fmt.Sprint(got) != fmt.Sprint([]string{second.URL}) {
		t.Fatalf("removed %v, want only %s", got, second.URL)
	}
	if got := check(all, first, second); len(got) != 0 {
		t.Fatalf("an unchanged check removed %v again", got)
	}
	check(all, second) // first is back: followed, not new
	var followed, rows, removals int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM followed_keys, unnest(keys) WHERE page_id = $1),
		(SELECT count(*) FROM followed_keys WHERE page_id = $1),
		(SELECT count(*) FROM removals WHERE page_id = $1)`, page.ID).Scan(&followed, &rows, &removals); err != nil {
		t.Fatal(err)
	}
	if followed != 199 || rows != shortlink.KeyBuckets || removals != 2 {
		t.Fatalf("%d followed links in %d rows and %d removals, want 199 in one row per bucket and 2", followed, rows, removals)
	}
	if got := check(all); len(got) != 0 {
		t.Fatalf("removed %v when every link is back", got)
	}
}

// Two checks of one page at once (a redelivered job): the second waits for
// the page's lock while the first rewrites the page's followed set, and then
// reads that set as it was when it began. It must not compare against it,
// or the link the first check added and the second lacks would leave no
// trace and never be reported removed. Here the first check adds c, the
// second (fetched later) lacks it; c is removed two checks on.
func TestConcurrentChecksOfOnePageLoseNoRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://concurrent.example/"})
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
	waiting := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var got int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock'
				  AND query LIKE '%WITH page AS%'`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d checks wait for the page's lock, want %d", got, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
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
		rec, err := check(ab, at.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rec.Removed {
			removed = append(removed, r.URL)
		}
	}
	if fmt.Sprint(removed) != "[https://concurrent.example/c]" {
		t.Fatalf("removed %v after the concurrent checks, want c once", removed)
	}
}

// A check answered 304 (no link set) only counts: it writes the page's row
// alone, and when that makes an absence due it records the removal, once.
func TestNotModifiedCheckRecordsADueRemoval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://not-modified.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links("https://not-modified.example/a", "https://not-modified.example/b")
	at := time.Now().Add(-time.Hour)
	check := func(ls []watch.NewLink, keys []uint64, status int) []watch.Removal {
		t.Helper()
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: status, FullSet: keys != nil,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, ls)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Removed
	}
	check(ab, keysOf(ab), 200)
	if got := check(nil, []uint64{ab[0].Key}, 200); len(got) != 0 { // b absent once
		t.Fatalf("removed %v after one absence", got)
	}
	var pending string
	if err := pool.QueryRow(ctx, `SELECT pending_keys::text FROM pages WHERE id = $1`, page.ID).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if got := check(nil, nil, 304); len(got) != 1 || got[0].URL != ab[1].URL || got[0].Text != ab[1].Text {
		t.Fatalf("the 304 check after b's first absence (pending %s) removed %+v, want b", pending, got)
	}
	if got := check(nil, nil, 304); len(got) != 0 {
		t.Fatalf("the next 304 check removed %+v again", got)
	}
	var removals int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM removals WHERE page_id = $1`, page.ID).Scan(&removals); err != nil || removals != 1 {
		t.Fatalf("%d removals (%v), want 1", removals, err)
	}
}

// A check that only adds links new to the page, told the page's bucket
// digests as its job carried them, is recorded without a write of the
// followed set's rows, and the links it added are followed all the same: one
// that leaves later is removed. A pending absence that such a check makes due
// is recorded, once. A check whose digests lie (a stale job) is recorded
// exactly as if they had been right: its short statement fails and changes
// nothing, and the comparing one records it.
func TestChecksThatOnlyAddLinksWriteNoFollowedRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://adding.example/"})
	if err != nil {
		t.Fatal(err)
	}
	story := func(i int) []watch.NewLink { return links(fmt.Sprintf("https://adding.example/story/%d", i)) }
	at := time.Now().Add(-time.Hour)
	// check records a check with the page's links on, the new ones among
	// them as candidates, and the following state its job carried.
	check := func(on, candidates []watch.NewLink, followed *watch.Followed) watch.Recorded {
		t.Helper()
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keysOf(on), Followed: followed}}, candidates)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	scheduled := func() *watch.Followed { return scheduledState(t, st, pool, page.ID) }
	rowVersions := func() string { return rowVersions(t, pool, page.ID) }

	var on []watch.NewLink
	for i := range 40 {
		on = append(on, story(i)...)
	}
	check(on, on, nil) // baseline: followed from here
	rows := rowVersions()
	for i := 40; i < 43; i++ {
		on = append(on, story(i)...)
		if rec := check(on, story(i), scheduled()); len(rec.Updates) != 1 || len(rec.Removed) != 0 {
			t.Fatalf("adding story %d: %d updates, removed %v; want 1 update and no removal", i, len(rec.Updates), urls(rec.Removed))
		}
	}
	if got := rowVersions(); got != rows {
		t.Fatalf("checks that only added links rewrote followed rows: %s, were %s", got, rows)
	}

	// Story 41, added without a row write, leaves: removed two checks on.
	without41 := slices.Concat(on[:41], on[42:])
	check(without41, nil, scheduled())
	if rec := check(without41, nil, scheduled()); urls(rec.Removed) != "[https://adding.example/story/41]" {
		t.Fatalf("story 41 absent twice: removed %v", urls(rec.Removed))
	}

	// Story 0 leaves; the next check only adds story 43 and makes story 0's
	// absence due.
	on = without41[1:]
	check(on, nil, scheduled())
	rows = rowVersions()
	on = append(on, story(43)...)
	if rec := check(on, story(43), scheduled()); len(rec.Updates) != 1 || urls(rec.Removed) != "[https://adding.example/story/0]" {
		t.Fatalf("adding story 43 when story 0's absence is due: %d updates, removed %v", len(rec.Updates), urls(rec.Removed))
	}
	if got := rowVersions(); got != rows {
		t.Fatalf("a check that only added a link rewrote followed rows: %s, were %s", got, rows)
	}

	// A stale job: the digests it carries say story 1's leaving is story
	// 44's adding alone. The check is recorded as any other: story 44 new
	// once, story 1 removed two checks on.
	stale := scheduled()
	stale.Buckets = shortlink.BucketDigests(keysOf(slices.Concat(on[1:], story(44))))
	stale.Buckets[shortlink.KeyBucket(story(44)[0].Key)] ^= int64(story(44)[0].Key)
	stale.Buckets[shortlink.KeyBuckets+shortlink.KeyBucket(story(44)[0].Key)] ^= int64(shortlink.Mix(story(44)[0].Key))
	on = append(on[1:], story(44)...)
	if rec := check(on, story(44), stale); len(rec.Updates) != 1 || len(rec.Removed) != 0 {
		t.Fatalf("a check with a stale job's digests: %d updates, removed %v; want 1 update", len(rec.Updates), urls(rec.Removed))
	}
	if rec := check(on, nil, scheduled()); urls(rec.Removed) != "[https://adding.example/story/1]" {
		t.Fatalf("story 1 absent twice after a stale job: removed %v", urls(rec.Removed))
	}
	var updates, removals int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM updates WHERE page_id = $1), (SELECT count(*) FROM removals WHERE page_id = $1)`,
		page.ID).Scan(&updates, &removals); err != nil {
		t.Fatal(err)
	}
	if updates != 5 || removals != 3 {
		t.Fatalf("%d updates and %d removals, want 5 (stories 40 to 44) and 3 (stories 41, 0 and 1)", updates, removals)
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

// rowVersions is the versions of a page's followed_keys rows: a rewritten
// row has a new one.
func rowVersions(t *testing.T, pool *pgxpool.Pool, page int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `SELECT string_agg(xmin::text || ':' || through, ',' ORDER BY bucket)
		FROM followed_keys WHERE page_id = $1`, page).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// urls is the URLs of removals, in order.
func urls(rs []watch.Removal) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.URL)
	}
	return fmt.Sprint(out)
}

// TestChecksThatLoseALinkPerBucketWriteNoFollowedRow follows a page of 400
// stories through the scheduler's jobs. A check whose buckets each lost at
// most one link, or got back one that left, is recorded without a write of
// the followed set's rows; the links that left are removed two checks on,
// once; one back before that is not removed, one back after it is in the
// set again and removed again when it leaves again. A bucket that loses two
// or three links at once cannot be told by the digests (three give a key
// of the right bucket that is no link), and is compared, which rewrites
// every bucket with a key that left, as does the check past maxGone such
// keys. Every removal is recorded exactly once.
func TestChecksThatLoseALinkPerBucketWriteNoFollowedRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://losing.example/"})
	if err != nil {
		t.Fatal(err)
	}
	stories := links(func() []string {
		var us []string
		for i := range 400 {
			us = append(us, fmt.Sprintf("https://losing.example/story/%d", i))
		}
		return us
	}()...)
	byBucket := map[int][]watch.NewLink{}
	for _, l := range stories {
		byBucket[shortlink.KeyBucket(l.Key)] = append(byBucket[shortlink.KeyBucket(l.Key)], l)
	}
	on := map[uint64]watch.NewLink{}
	at := time.Now().Add(-time.Hour)
	// check records a check of the stories on the page, with the following
	// state of the page's next job, and returns the URLs it removed.
	check := func(candidates ...watch.NewLink) string {
		t.Helper()
		keys := make([]uint64, 0, len(on))
		for k := range on {
			keys = append(keys, k)
		}
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keys, Followed: scheduledState(t, st, pool, page.ID)}}, candidates)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(rec.Removed, func(a, b watch.Removal) int { return strings.Compare(a.URL, b.URL) })
		return urls(rec.Removed)
	}
	leave := func(ls ...watch.NewLink) string {
		for _, l := range ls {
			delete(on, l.Key)
		}
		slices.SortFunc(ls, func(a, b watch.NewLink) int { return strings.Compare(a.URL, b.URL) })
		var us []string
		for _, l := range ls {
			us = append(us, l.URL)
		}
		return fmt.Sprint(us)
	}
	gone := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT coalesce(cardinality(gone_keys), 0) FROM pages WHERE id = $1`, page.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	rows := func() string { return rowVersions(t, pool, page.ID) }
	unwritten := func(step, was string) {
		t.Helper()
		if got := rows(); got != was {
			t.Fatalf("%s rewrote followed rows", step)
		}
	}

	for _, l := range stories {
		on[l.Key] = l
	}
	check(stories...) // baseline: followed from here
	baseline := rows()

	a := byBucket[0][0]
	leave(a)
	if got := check(); got != "[]" || gone() != 1 {
		t.Fatalf("story a's first absence: removed %s, %d gone keys; want nothing and 1", got, gone())
	}
	if got, want := check(), "["+a.URL+"]"; got != want {
		t.Fatalf("story a absent twice: removed %s, want %s", got, want)
	}
	on[a.Key] = a
	if got := check(); got != "[]" || gone() != 0 {
		t.Fatalf("story a back: removed %s, %d gone keys; want nothing and 0", got, gone())
	}
	b := byBucket[1][0]
	leave(a, b)
	check()
	on[b.Key] = b // back before its absence is due
	if got, want := check(), "["+a.URL+"]"; got != want {
		t.Fatalf("story a gone again and b back: removed %s, want %s only", got, want)
	}
	if got := check(); got != "[]" {
		t.Fatalf("a check with nothing due removed %s", got)
	}
	unwritten("checks that lost or got back one link a bucket", baseline)

	two := leave(byBucket[2][0], byBucket[2][1])
	check()
	if rows() == baseline || gone() != 0 {
		t.Fatalf("two links left one bucket: rows not rewritten, or %d gone keys", gone())
	}
	if got := check(); got != two {
		t.Fatalf("two links of a bucket absent twice: removed %s, want %s", got, two)
	}
	three := leave(byBucket[3][0], byBucket[3][1], byBucket[3][2])
	check()
	if got := check(); got != three {
		t.Fatalf("three links of a bucket absent twice: removed %s, want %s", got, three)
	}

	// One link a bucket leaves, in every bucket, at each of three checks:
	// the third would list more than maxGone keys that left, and compares.
	baseline = rows()
	var rounds []string
	for r := range 3 {
		var ls []watch.NewLink
		for bucket := range shortlink.KeyBuckets {
			if len(byBucket[bucket]) < 7 {
				t.Fatalf("bucket %d has %d stories, too few for this test", bucket, len(byBucket[bucket]))
			}
			ls = append(ls, byBucket[bucket][len(byBucket[bucket])-1-r])
		}
		rounds = append(rounds, leave(ls...))
		want := "[]"
		if r > 0 {
			want = rounds[r-1]
		}
		if got := check(); got != want {
			t.Fatalf("round %d of 32 links leaving: removed %s, want %s", r, got, want)
		}
		if r < 2 {
			unwritten(fmt.Sprintf("round %d of 32 links leaving", r), baseline)
			if gone() != 32*(r+1) {
				t.Fatalf("round %d: %d gone keys, want %d", r, gone(), 32*(r+1))
			}
		}
	}
	if rows() == baseline || gone() != 0 {
		t.Fatalf("past %d gone keys: rows not rewritten, or %d gone keys left", 64, gone())
	}
	if got := check(); got != rounds[2] {
		t.Fatalf("the last round absent twice: removed %s, want %s", got, rounds[2])
	}

	var removals, twice int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE link_key = $2) FROM removals WHERE page_id = $1`,
		page.ID, int64(a.Key)).Scan(&removals, &twice); err != nil {
		t.Fatal(err)
	}
	if removals != 2+2+3+3*32 || twice != 2 {
		t.Fatalf("%d removals, story a's %d; want %d, story a's 2 (it left twice)", removals, twice, 2+2+3+3*32)
	}
}

// A link that only a truncated check saw (the crawler's limits cut the
// page, so the check has no whole set) is followed from that check: when
// the next whole checks lack it, it is removed like any other.
func TestLinkSeenOnlyByATruncatedCheckIsRemoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := openStore(t)
	page, err := st.AddPage(ctx, store.NewPage{URL: "https://truncated.example/"})
	if err != nil {
		t.Fatal(err)
	}
	ab := links("https://truncated.example/a", "https://truncated.example/b")
	brief := links("https://truncated.example/brief")
	at := time.Now().Add(-time.Hour)
	check := func(candidates []watch.NewLink, keys []uint64) []watch.Removal {
		t.Helper()
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 2, Keys: keys}}, candidates)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Removed
	}
	check(ab, keysOf(ab))
	check(brief, nil) // truncated: the brief link and no whole set
	if got := check(nil, keysOf(ab)); len(got) != 0 {
		t.Fatalf("removed %+v after one absence", got)
	}
	if got := check(nil, keysOf(ab)); len(got) != 1 || got[0].URL != brief[0].URL {
		t.Fatalf("the link only a truncated check saw, absent twice since: removed %+v, want it", got)
	}
}

// The statements' Mix of a key (shortlink.MixSQL) is the processor's, for
// keys with the sign bit set or not.
func TestMixSQLIsMix(t *testing.T) {
	t.Parallel()
	_, pool := openStore(t)
	keys := []uint64{0, 1, 1 << 63, 1<<63 - 1, ^uint64(0), 3 << 62}
	for i := range 200 {
		keys = append(keys, shortlink.Key(fmt.Sprint("https://mix.example/", i)))
	}
	for _, k := range keys {
		var got int64
		if err := pool.QueryRow(context.Background(), `SELECT `+shortlink.MixSQL(`$1::bigint`), int64(k)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if uint64(got) != shortlink.Mix(k) {
			t.Fatalf("Mix(%x) in SQL = %x, want %x", k, uint64(got), shortlink.Mix(k))
		}
	}
}

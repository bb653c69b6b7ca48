package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestLeanRemovalsMigrationKeepsPendingAbsences migrates a database that
// 00007 followed (a stored link set, a pending absence, a link an options
// change left out of the set) to 00008: the pending absence is carried into
// the page's row and recorded at the check it was due, the left-out link is
// not reported as removed, and a page 00007 never followed starts afresh.
// Then down to 00007 and up again.
func TestLeanRemovalsMigrationKeepsPendingAbsences(t *testing.T) {
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

	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	check := func(page int64, keys []uint64) []watch.Removal {
		t.Helper()
		at = at.Add(time.Second)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page, FetchedAt: at, Status: 200, FullSet: true,
			LinksDigest: fmt.Sprint(keys), Removals: watch.Removals{Checks: 2, Keys: keys}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Removed
	}
	if got := check(followed, []uint64{1}); len(got) != 1 || got[0].URL != "https://followed.example/2" {
		t.Fatalf("check 6 of the followed page removed %+v, want link 2 (absent since check 5)", got)
	}
	if got := check(fresh, []uint64{}); len(got) != 0 {
		t.Fatalf("the first followed check of a page removed %+v, want nothing", got)
	}
	if got := state(fresh); got != "{} {} removed:1,2,3" {
		t.Fatalf("fresh page after its first followed check: %s", got)
	}

	if _, err := mig.DownTo(ctx, 7); err != nil {
		t.Fatalf("migrate down to 00007: %v", err)
	}
	if _, err := mig.UpTo(ctx, 8); err != nil {
		t.Fatalf("migrate up to 00008 again: %v", err)
	}
}

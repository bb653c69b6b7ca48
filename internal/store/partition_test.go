package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testsvc"
	"github.com/portalwatch/portalwatch/migrations"
)

// migrator returns a goose provider over the test database, to stop at a
// version and to go back down, which Store.Migrate never does.
func migrator(t *testing.T, dsn string) *goose.Provider {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tableShape is what the partitioning must keep of an installation.
type tableShape struct {
	links, updates, maxID int64
	linksSum, updatesSum           string
}

func shapeOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool) tableShape {
	t.Helper()
	var s tableShape
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM links), (SELECT count(*) FROM updates), (SELECT coalesce(max(id), 0) FROM updates),
		(SELECT md5(string_agg(concat_ws('|', page_id, link_key, url, text, code, first_seen_at, last_seen_at), ',' ORDER BY page_id, link_key)) FROM links),
		(SELECT md5(string_agg(concat_ws('|', id, page_id, link_key, url, text, code, discovered_at, xact), ',' ORDER BY id)) FROM updates)`).
		Scan(&s.links, &s.updates, &s.maxID, &s.linksSum, &s.updatesSum)
	if err != nil {
		t.Fatalf("read table shape: %v", err)
	}
	return s
}

// TestPartitionMigrationKeepsEveryRowAndGoesBack migrates a database with
// data from 00005 to 00006 and back: every row and the update ids' sequence
// survive both ways, and the check statement works on the partitioned
// tables.
func TestPartitionMigrationKeepsEveryRowAndGoesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	mig := migrator(t, dsn)
	if _, err := mig.UpTo(ctx, 5); err != nil {
		t.Fatalf("migrate to 00005: %v", err)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	// Three pages checked twice (baseline, then news), and one update from
	// ten weeks ago, so the migration makes partitions back to its week.
	at := time.Now()
	var pageIDs []int64
	for _, u := range []string{"https://a.example/", "https://b.example/", "https://c.example/"} {
		page, err := st.AddPage(ctx, store.NewPage{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		pageIDs = append(pageIDs, page.ID)
		if _, err := st.RecordCheck(ctx, ok(page.ID, at), numbered(u+"base", 0, 20)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RecordCheck(ctx, ok(page.ID, at.Add(time.Second)), numbered(u+"news", 0, 7)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE updates SET discovered_at = now() - interval '10 weeks' WHERE id = (SELECT min(id) FROM updates)`); err != nil {
		t.Fatal(err)
	}
	// A deleted newest update: its id must not be handed out again.
	if _, err := pool.Exec(ctx, `DELETE FROM updates WHERE id = (SELECT max(id) FROM updates)`); err != nil {
		t.Fatal(err)
	}
	before := shapeOf(t, ctx, pool)
	if before.links != 3*27 || before.updates != 3*7-1 {
		t.Fatalf("before: %d links, %d updates; want 81 and 20", before.links, before.updates)
	}

	if _, err := mig.UpTo(ctx, 6); err != nil {
		t.Fatalf("migrate to 00006: %v", err)
	}
	var linkParts, updateParts int
	var defaultRows int64
	if err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'links'::regclass),
		(SELECT count(*) FROM pg_inherits WHERE inhparent = 'updates'::regclass),
		(SELECT count(*) FROM updates_default)`).Scan(&linkParts, &updateParts, &defaultRows); err != nil {
		t.Fatal(err)
	}
	// Weeks: the one ten weeks ago through three ahead, 14 or 15 with the
	// current one depending on the weekday; plus the default.
	if linkParts != 32 || updateParts < 15 || updateParts > 16 || defaultRows != 0 {
		t.Fatalf("after 00006: %d links partitions, %d updates partitions, %d rows in the default; want 32, 15 or 16, 0",
			linkParts, updateParts, defaultRows)
	}
	after := shapeOf(t, ctx, pool)
	if after != before {
		t.Fatalf("00006 changed the data:\nbefore %+v\nafter  %+v", before, after)
	}

	// The check statement works: news for a page, nothing twice.
	rec, err := st.RecordCheck(ctx, ok(pageIDs[0], at.Add(2*time.Second)), numbered("https://a.example/news", 0, 9))
	if err != nil {
		t.Fatalf("check after 00006: %v", err)
	}
	if len(rec.Updates) != 2 {
		t.Fatalf("check after 00006 recorded %d updates, want the 2 new links", len(rec.Updates))
	}
	if rec.Updates[0].ID <= before.maxID+1 {
		t.Fatalf("first id after 00006 = %d; want past %d, the deleted newest id", rec.Updates[0].ID, before.maxID+1)
	}
	again, err := st.RecordCheck(ctx, ok(pageIDs[0], at.Add(3*time.Second)), numbered("https://a.example/news", 0, 9))
	if err != nil || len(again.Updates) != 0 {
		t.Fatalf("same links again after 00006: %d updates, %v; want none", len(again.Updates), err)
	}
	// Removing a page still removes its links and updates.
	if err := st.RemovePage(ctx, pageIDs[2]); err != nil {
		t.Fatal(err)
	}
	var orphans int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM links WHERE page_id = $1) + (SELECT count(*) FROM updates WHERE page_id = $1)`,
		pageIDs[2]).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("rows of a removed page after 00006: %d, %v; want 0", orphans, err)
	}

	beforeDown := shapeOf(t, ctx, pool)
	if _, err := mig.DownTo(ctx, 5); err != nil {
		t.Fatalf("migrate back to 00005: %v", err)
	}
	var partitioned bool
	if err := pool.QueryRow(ctx, `SELECT relkind = 'p' FROM pg_class WHERE oid = 'updates'::regclass`).Scan(&partitioned); err != nil || partitioned {
		t.Fatalf("updates partitioned after going down: %v, %v", partitioned, err)
	}
	if afterDown := shapeOf(t, ctx, pool); afterDown != beforeDown {
		t.Fatalf("going down changed the data:\nbefore %+v\nafter  %+v", beforeDown, afterDown)
	}
	rec, err = st.RecordCheck(ctx, ok(pageIDs[1], at.Add(4*time.Second)), numbered("https://b.example/news", 0, 8))
	if err != nil || len(rec.Updates) != 1 || rec.Updates[0].ID <= beforeDown.maxID {
		t.Fatalf("check after going down: %+v, %v; want one update with an id past %d", rec.Updates, err, beforeDown.maxID)
	}
}

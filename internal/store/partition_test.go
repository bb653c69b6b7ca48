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
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
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
	linksSum, updatesSum  string
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

	// Three pages with a baseline of 20 links and 7 news, written with the
	// SQL of 00005's schema (the store's code speaks the newest), and one
	// update from ten weeks ago, so the migration makes partitions back to
	// its week.
	var pageIDs []int64
	for _, u := range []string{"https://a.example/", "https://b.example/", "https://c.example/"} {
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO pages (base_url, baseline_at, last_checked_at, last_status)
			VALUES ($1, now(), now() - interval '1 minute', 200) RETURNING id`, u).Scan(&id); err != nil {
			t.Fatal(err)
		}
		pageIDs = append(pageIDs, id)
		if _, err := pool.Exec(ctx, `
			INSERT INTO links (page_id, link_key, url, text, code) SELECT $1, g, $2 || g, 'text ' || g, 'code' || g FROM generate_series(1, 27) g`, id, u); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `
			INSERT INTO updates (page_id, link_key, url, text, code) SELECT $1, g, $2 || g, 'text ' || g, 'code' || g FROM generate_series(21, 27) g`, id, u); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now()
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
	// The store's code speaks the newest schema.
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate past 00006: %v", err)
	}

	// The check statement works: news for a page, nothing twice.
	rec, err := st.RecordCheck(ctx, ok(pageIDs[0], at.Add(2*time.Second)), numbered("https://a.example/news", 0, 9))
	if err != nil {
		t.Fatalf("check after 00006: %v", err)
	}
	if len(rec.Updates) != 9 {
		t.Fatalf("check after 00006 recorded %d updates, want its 9 new links", len(rec.Updates))
	}
	if rec.Updates[0].ID <= before.maxID+1 {
		t.Fatalf("first id after 00006 = %d; want past %d, the deleted newest id", rec.Updates[0].ID, before.maxID+1)
	}
	again, err := st.RecordCheck(ctx, ok(pageIDs[0], at.Add(3*time.Second)), numbered("https://a.example/news", 0, 9))
	if err != nil || len(again.Updates) != 0 {
		t.Fatalf("same links again after 00006: %d updates, %v; want none", len(again.Updates), err)
	}
	// Deleting a page for good still deletes its links and updates.
	if _, err := st.TrashPage(ctx, pageIDs[2]); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EmptyTrash(ctx, 0, 10); err != nil || n != 1 {
		t.Fatalf("EmptyTrash = %d, %v; want the page deleted", n, err)
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
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate up again: %v", err)
	}
	rec, err = st.RecordCheck(ctx, ok(pageIDs[1], at.Add(4*time.Second)), numbered("https://b.example/news", 0, 8))
	if err != nil || len(rec.Updates) != 8 || rec.Updates[0].ID <= beforeDown.maxID {
		t.Fatalf("check after going down and up: %d updates, %v; want 8 with ids past %d", len(rec.Updates), err, beforeDown.maxID)
	}
}

// partitionLock is store's advisory lock key of partition maintenance.
const partitionLock int64 = 0x7077_7570_6172_7473

func countUpdates(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// Rows outside every partition wait in updates_default until maintenance
// makes their week's partition; retention then drops whole weeks, and the
// links of dropped updates stay known.
func TestMaintainUpdatePartitionsMovesStraysAndDropsOldWeeks(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://weeks.example/"})
	at := time.Now()
	st.RecordCheck(ctx, ok(page.ID, at), links("https://weeks.example/base"))
	if _, err := st.RecordCheck(ctx, ok(page.ID, at.Add(time.Second)), numbered("https://weeks.example/u", 0, 4)); err != nil {
		t.Fatal(err)
	}
	// u0 from ten weeks ago, u1 from six weeks ahead: no partition holds
	// either, so both rows move into updates_default.
	if _, err := pool.Exec(ctx, `
		UPDATE updates SET discovered_at = now() - interval '10 weeks' WHERE url = 'https://weeks.example/u0';
		UPDATE updates SET discovered_at = now() + interval '6 weeks' WHERE url = 'https://weeks.example/u1'`); err != nil {
		t.Fatal(err)
	}
	if n := countUpdates(t, ctx, pool, "updates_default"); n != 2 {
		t.Fatalf("updates_default holds %d rows, want the 2 out of range", n)
	}

	ch, err := st.MaintainUpdatePartitions(ctx, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Created) != 2 || ch.Moved != 2 || len(ch.Dropped) != 0 || ch.Skipped {
		t.Fatalf("first maintenance = %+v; want the 2 stray weeks made, 2 rows moved, nothing dropped", ch)
	}
	if n := countUpdates(t, ctx, pool, "updates_default"); n != 0 {
		t.Fatalf("updates_default holds %d rows after maintenance, want 0", n)
	}
	if n := countUpdates(t, ctx, pool, "updates"); n != 4 {
		t.Fatalf("%d updates after maintenance, want all 4", n)
	}
	again, err := st.MaintainUpdatePartitions(ctx, 0, 3)
	if err != nil || len(again.Created) != 0 || len(again.Dropped) != 0 {
		t.Fatalf("second maintenance = %+v, %v; want nothing to do", again, err)
	}
	// The horizon widens around the stray's week, six weeks ahead.
	wider, err := st.MaintainUpdatePartitions(ctx, 0, 7)
	if err != nil || len(wider.Created) != 3 {
		t.Fatalf("maintenance 7 weeks ahead = %+v, %v; want weeks 4, 5 and 7 made (6 exists)", wider, err)
	}

	dropped, err := st.MaintainUpdatePartitions(ctx, 30*24*time.Hour, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped.Dropped) != 1 || dropped.Dropped[0] != ch.Created[0] {
		t.Fatalf("maintenance with 30 days' retention dropped %v, want only %s", dropped.Dropped, ch.Created[0])
	}
	ups, _ := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if len(ups) != 3 {
		t.Fatalf("%d updates left, want the 3 not ten weeks old", len(ups))
	}
	// The dropped update's link stays known: it is not reported again.
	rec, err := st.RecordCheck(ctx, ok(page.ID, at.Add(2*time.Second)), numbered("https://weeks.example/u", 0, 4))
	if err != nil || len(rec.Updates) != 0 {
		t.Fatalf("links whose updates were dropped came back as %d updates, %v", len(rec.Updates), err)
	}
}

// Several processors maintain partitions: the one that finds the lock taken
// does nothing rather than making the same partition twice.
func TestMaintainUpdatePartitionsSkipsWhileAnotherHoldsTheLock(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `DROP TABLE updates_w`+weekAfterNext(t, ctx, pool)); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, partitionLock); err != nil {
		t.Fatal(err)
	}
	ch, err := st.MaintainUpdatePartitions(ctx, 0, 3)
	if err != nil || !ch.Skipped || len(ch.Created) != 0 {
		t.Fatalf("maintenance under another's lock = %+v, %v; want skipped", ch, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, partitionLock); err != nil {
		t.Fatal(err)
	}
	ch, err = st.MaintainUpdatePartitions(ctx, 0, 3)
	if err != nil || ch.Skipped || len(ch.Created) != 1 {
		t.Fatalf("maintenance after the lock is free = %+v, %v; want the missing week made", ch, err)
	}
}

// weekAfterNext returns the YYYYMMDD of the Monday two weeks after this
// week's, in UTC.
func weekAfterNext(t *testing.T, ctx context.Context, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(ctx, `SELECT to_char((date_trunc('week', now(), 'UTC') AT TIME ZONE 'UTC') + interval '2 weeks', 'YYYYMMDD')`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

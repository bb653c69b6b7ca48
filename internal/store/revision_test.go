package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// insertRevision writes a link.rewritten event as the check statement
// would, at the time given; the tests read what it wrote.
func insertRevision(t *testing.T, db *pgxpool.Pool, pageID int64, at time.Time, url, oldText, newText string) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRow(context.Background(), `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text)
		VALUES ($1, 'link.rewritten', $2, hashtextextended($3, 0), $3, $4, $5) RETURNING id`,
		pageID, at, url, oldText, newText).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// Revisions lists a page's headline rewrites newest first, a page at a
// time, leaves out other events and pages, and tells an empty list from a
// page that is not watched.
func TestRevisionsNewestFirstInPages(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://blatt.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if revs, err := st.Revisions(ctx, watch.RevisionFilter{PageID: page.ID}); err != nil || len(revs) != 0 {
		t.Fatalf("Revisions of a page without any = %v, %v; want none and no error", revs, err)
	}
	at := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	insertRevision(t, db, page.ID, at, "https://zeitung.example/a", "Alt", "Neu")
	insertRevision(t, db, other.ID, at, "https://blatt.example/x", "X", "Y")
	if _, err := db.Exec(ctx, `INSERT INTO events (page_id, kind, at, reason) VALUES ($1, 'page.degraded', now(), 'empty')`, page.ID); err != nil {
		t.Fatal(err)
	}
	insertRevision(t, db, page.ID, at.Add(time.Minute), "https://zeitung.example/a", "Neu", "Neuer")
	insertRevision(t, db, page.ID, at.Add(2*time.Minute), "https://zeitung.example/b", "Bee", "Biene")

	first, err := st.Revisions(ctx, watch.RevisionFilter{PageID: page.ID, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(first); got != "Bee→Biene Neu→Neuer" {
		t.Fatalf("first page = %s, want the two newest", got)
	}
	if r := first[0]; r.PageID != page.ID || r.URL != "https://zeitung.example/b" || !r.At.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("newest revision = %+v, want /b at %s", r, at.Add(2*time.Minute))
	}
	rest, err := st.Revisions(ctx, watch.RevisionFilter{PageID: page.ID, Before: first[1].ID, Limit: 2})
	if err != nil || texts(rest) != "Alt→Neu" {
		t.Fatalf("second page = %s, %v; want the oldest alone", texts(rest), err)
	}

	if _, err := st.Revisions(ctx, watch.RevisionFilter{PageID: 9999}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("Revisions of no page = %v, want ErrPageNotFound", err)
	}
	if _, err := st.TrashPage(ctx, page.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Revisions(ctx, watch.RevisionFilter{PageID: page.ID}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("Revisions of a page in the trash = %v, want ErrPageNotFound", err)
	}
}

func texts(revs []watch.Revision) string {
	var b []string
	for _, r := range revs {
		b = append(b, r.OldText+"→"+r.NewText)
	}
	return strings.Join(b, " ")
}

// A page's revisions are read through one of the indexes made for them,
// newest first without a sort, among many events of many pages.
func TestRevisionsQueryWalksAnIndex(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	var ids []int64
	for i := range 20 {
		p, err := st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://p%d.example/", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if _, err := db.Exec(ctx, `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text)
		SELECT p, 'link.rewritten', now() - n * interval '1 second', n, 'https://p.example/' || n, 'old', 'new'
		FROM unnest($1::bigint[]) AS p, generate_series(1, 500) AS n`, ids); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, "EXPLAIN (COSTS OFF) "+store.RevisionsQuery, ids[3], int64(1<<62), 100)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	rows.Close()
	text := strings.Join(plan, "\n")
	t.Logf("plan of RevisionsQuery:\n%s", text)
	if !strings.Contains(text, "events_page") && !strings.Contains(text, "events_revisions") || strings.Contains(text, "Sort") ||
		strings.Contains(text, "Seq Scan on events") {
		t.Fatalf("plan of RevisionsQuery:\n%s\nwant a walk of events_page or events_revisions, no sort", text)
	}
}

// PruneEvents deletes the events of checks older than its age, in
// batches, and keeps the newer ones.
func TestPruneEventsKeepsTheRecent(t *testing.T) {
	t.Parallel()
	st, db := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		insertRevision(t, db, page.ID, time.Now().Add(-30*24*time.Hour+time.Duration(i)*time.Minute), "https://zeitung.example/old", "a", "b")
	}
	insertRevision(t, db, page.ID, time.Now().Add(-time.Hour), "https://zeitung.example/new", "c", "d")
	if n, err := st.PruneEvents(ctx, 7*24*time.Hour, 2); err != nil || n != 2 {
		t.Fatalf("PruneEvents, batch 2 = %d, %v; want 2", n, err)
	}
	if n, err := st.PruneEvents(ctx, 7*24*time.Hour, 2); err != nil || n != 1 {
		t.Fatalf("PruneEvents, second batch = %d, %v; want the last old one", n, err)
	}
	revs, err := st.Revisions(ctx, watch.RevisionFilter{PageID: page.ID})
	if err != nil || texts(revs) != "c→d" {
		t.Fatalf("revisions left = %s, %v; want the recent one only", texts(revs), err)
	}
}

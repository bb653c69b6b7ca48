package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A link cut by the caps must not enter the seen-set: the next check, when
// there is room, records it.
func TestCutLinksAreRecordedLater(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{Caps: watch.Caps{PerCheck: 2}})
	f.deliver(t, f.task("/a"))
	task := f.task("/a", "/b", "/c", "/d")
	task.Truncated = 9
	f.deliver(t, task)
	p, _ := f.st.Page(context.Background(), f.page.ID)
	if p.LastCut != 1 || p.LastTruncated != 9 {
		t.Fatalf("page shows cut %d, truncated %d; want 1 and 9", p.LastCut, p.LastTruncated)
	}
	f.deliver(t, f.task("/a", "/b", "/c", "/d"))
	if got := fmt.Sprint(f.updates(t)); got != "[https://portal.example/d https://portal.example/c https://portal.example/b]" {
		t.Fatalf("updates = %s, want /b and /c, then the cut /d", got)
	}
	p, _ = f.st.Page(context.Background(), f.page.ID)
	if p.LastCut != 0 || p.LastTruncated != 0 {
		t.Fatalf("page after a check within the caps shows cut %d, truncated %d; want 0 and 0", p.LastCut, p.LastTruncated)
	}
}

// With link retention on, a whole check refreshes the page's links, and a
// retention round then forgets only the link that left the page.
func TestLinkRetentionForgetsOnlyLinksGoneFromThePage(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{LinkRefresh: processor.LinkRefreshFor(90 * 24 * time.Hour)})
	ctx := context.Background()
	f.deliver(t, f.task("/stays", "/gone"))
	if _, err := f.db.Exec(ctx, `UPDATE links SET last_seen_at = now() - interval '100 days'; UPDATE pages SET links_seen_at = NULL`); err != nil {
		t.Fatal(err)
	}
	f.deliver(t, f.task("/stays")) // refresh due: /stays is seen now, /gone is not
	pruner, err := processor.NewPruner(processor.RetentionConfig{Links: 90 * 24 * time.Hour, Batch: 1}, f.st, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	parts, links, err := pruner.Round(ctx)
	if err != nil || len(parts.Dropped) != 0 || links != 1 {
		t.Fatalf("Round = %+v, %d links, %v; want one link and no partition dropped", parts, links, err)
	}
	var left []string
	rows, _ := f.db.Query(ctx, `SELECT url FROM links`)
	for rows.Next() {
		var u string
		rows.Scan(&u)
		left = append(left, u)
	}
	if fmt.Sprint(left) != "[https://portal.example/stays]" {
		t.Fatalf("links left = %v, want only /stays", left)
	}
}

// With both retentions off the pruner still makes updates' partitions
// ahead: without them every insert would land in updates_default.
func TestRoundMakesUpdatePartitionsWithRetentionOff(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{})
	ctx := context.Background()
	var ahead string
	if err := f.db.QueryRow(ctx, `SELECT 'updates_w' || to_char((date_trunc('week', now(), 'UTC') AT TIME ZONE 'UTC') + interval '3 weeks', 'YYYYMMDD')`).Scan(&ahead); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `DROP TABLE `+ahead); err != nil {
		t.Fatal(err)
	}
	pruner, err := processor.NewPruner(processor.RetentionConfig{}, f.st, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	parts, _, err := pruner.Round(ctx)
	if err != nil || fmt.Sprint(parts.Created) != "["+ahead+"]" {
		t.Fatalf("Round = %+v, %v; want %s made again", parts, err, ahead)
	}
}

// Removals are kept as long as updates: a round with updates' retention set
// deletes the removals recorded before it, and only those.
func TestRoundDeletesRemovalsPastUpdatesRetention(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{RemovalChecks: 1})
	ctx := context.Background()
	f.deliver(t, f.task("/old", "/new", "/stays"))
	f.deliver(t, f.task("/new", "/stays"))
	f.deliver(t, f.task("/stays"))
	if got := len(f.removals(t)); got != 2 {
		t.Fatalf("%d removals recorded, want /old and /new", got)
	}
	if _, err := f.db.Exec(ctx, `UPDATE removals r SET removed_at = now() - interval '30 days'
		FROM links l WHERE l.page_id = r.page_id AND l.link_key = r.link_key AND l.url LIKE '%/old'`); err != nil {
		t.Fatal(err)
	}
	pruner, err := processor.NewPruner(processor.RetentionConfig{Updates: 7 * 24 * time.Hour, Batch: 1}, f.st, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pruner.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.removals(t)); got != "[https://portal.example/new]" {
		t.Fatalf("removals after the round = %s, want only /new", got)
	}
}

// Events are kept as long as updates, like removals: a round with
// updates' retention set deletes those of checks before it, and only those.
func TestRoundDeletesEventsPastUpdatesRetention(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{})
	ctx := context.Background()
	if _, err := f.db.Exec(ctx, `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text) VALUES
		($1, 'link.rewritten', now() - interval '30 days', 1, 'https://portal.example/a', 'Old', 'Older'),
		($1, 'link.rewritten', now() - interval '1 hour', 1, 'https://portal.example/a', 'Older', 'New')`, f.page.ID); err != nil {
		t.Fatal(err)
	}
	pruner, err := processor.NewPruner(processor.RetentionConfig{Updates: 7 * 24 * time.Hour, Batch: 1}, f.st, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pruner.Round(ctx); err != nil {
		t.Fatal(err)
	}
	revs, err := f.st.Revisions(ctx, watch.RevisionFilter{PageID: f.page.ID})
	if err != nil || len(revs) != 1 || revs[0].NewText != "New" {
		t.Fatalf("revisions after the round = %+v, %v; want only the one of an hour ago", revs, err)
	}
}

// A round deletes for good the pages that have been in the trash for 7
// days, with their rows, and the hourly counts older than the sparklines;
// a page trashed since, and newer counts, stay.
func TestRoundEmptiesTheTrashAndOldHourlyCounts(t *testing.T) {
	f := newFixtureWith(t, "", processor.Config{})
	ctx := context.Background()
	f.deliver(t, f.task("/a"))
	f.deliver(t, f.task("/a", "/b"))
	old, err := f.st.CreatePage(ctx, watch.PageSpec{URL: "https://old-trash.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{f.page.ID, old.ID} {
		if _, err := f.st.TrashPage(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.db.Exec(ctx, `UPDATE pages SET deleted_at = now() - interval '8 days' WHERE id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `INSERT INTO page_hours (page_id, hour, links) VALUES ($1, date_trunc('hour', now()) - interval '9 days', 4)`, f.page.ID); err != nil {
		t.Fatal(err)
	}
	pruner, err := processor.NewPruner(processor.RetentionConfig{}, f.st, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pruner.Round(ctx); err != nil {
		t.Fatal(err)
	}
	var pages, hours, recent int
	if err := f.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM page_hours WHERE hour < now() - interval '8 days'),
		(SELECT coalesce(sum(links), 0) FROM page_hours WHERE page_id = $1)`, f.page.ID).Scan(&pages, &hours, &recent); err != nil {
		t.Fatal(err)
	}
	if pages != 1 || hours != 0 || recent != 1 {
		t.Errorf("after a round: %d pages (want the one trashed today), %d hourly counts older than 8 days (want 0), %d recent new links counted (want 1)", pages, hours, recent)
	}
}

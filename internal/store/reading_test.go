package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// updateURLs returns the URLs of the updates f selects, newest first.
func updateURLs(t *testing.T, st *store.Store, f watch.UpdateFilter) []string {
	t.Helper()
	ups, err := st.QueryUpdates(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range ups {
		out = append(out, u.URL)
	}
	return out
}

// pageWithNews adds https://name.example/ and records its baseline and
// then one new link, name.example/news.
func pageWithNews(t *testing.T, st *store.Store, name string, tags ...string) watch.Page {
	t.Helper()
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://" + name + ".example/", Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if _, err := st.RecordCheck(ctx, ok(page.ID, at), links(page.BaseURL+"old")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordCheck(ctx, ok(page.ID, at.Add(time.Second)), links(page.BaseURL+"old", page.BaseURL+"news")); err != nil {
		t.Fatal(err)
	}
	return page
}

// A page in the trash is neither checked nor listed, nor are its updates;
// it comes back whole when restored or when its URL is added again, and
// is deleted for good only once it has been in the trash for the retention.
func TestTrashHidesAPageUntilRestoredAddedAgainOrEmptied(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	kept := pageWithNews(t, st, "kept", "desk")
	gone := pageWithNews(t, st, "gone", "desk")

	trashed, err := st.TrashPage(ctx, gone.ID)
	if err != nil || trashed.DeletedAt.IsZero() {
		t.Fatalf("TrashPage = %+v, %v; want the page with its deletion time", trashed, err)
	}
	if _, err := st.Page(ctx, gone.ID); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("Page of a trashed page = %v, want ErrPageNotFound", err)
	}
	if _, err := st.EditPage(ctx, gone.ID, watch.PageEdit{Name: new("x")}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("EditPage of a trashed page = %v, want ErrPageNotFound", err)
	}
	if _, err := st.CheckNow(ctx, gone.ID); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("CheckNow of a trashed page = %v, want ErrPageNotFound", err)
	}
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 1 || pages[0].ID != kept.ID {
		t.Errorf("Pages = %v, %v; want only page %d", pages, err, kept.ID)
	}
	for _, f := range []watch.UpdateFilter{{}, {Tag: "desk"}, {PageID: gone.ID}, {Text: "news"}} {
		want := []string{kept.BaseURL + "news"}
		if f.PageID != 0 {
			want = nil
		}
		if got := updateURLs(t, st, f); !slices.Equal(got, want) {
			t.Errorf("updates of %+v = %v, want %v", f, got, want)
		}
	}
	if _, err := st.FeedStamp(ctx, watch.FeedScope{PageID: gone.ID}); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("FeedStamp of a trashed page = %v, want ErrPageNotFound", err)
	}
	if watched, err := st.WatchedAmong(ctx, []string{kept.BaseURL, gone.BaseURL}); err != nil || !slices.Equal(watched, []string{kept.BaseURL}) {
		t.Errorf("WatchedAmong = %v, %v; want only the kept page", watched, err)
	}
	// Due, but in the trash: no claim takes it.
	if _, err := pool.Exec(ctx, `UPDATE pages SET next_check_at = now() - interval '1 hour', lease_until = NULL`); err != nil {
		t.Fatal(err)
	}
	var claimed []int64
	if _, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Minute}, func(_ context.Context, jobs []watch.Job) ([]watch.Postponed, error) {
		for _, j := range jobs {
			claimed = append(claimed, j.ID)
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(claimed, []int64{kept.ID}) {
		t.Errorf("claimed %v, want only page %d", claimed, kept.ID)
	}
	trash, err := st.TrashedPages(ctx)
	if err != nil || len(trash) != 1 || trash[0].ID != gone.ID {
		t.Fatalf("TrashedPages = %v, %v; want page %d", trash, err, gone.ID)
	}

	restored, err := st.RestorePage(ctx, gone.ID)
	if err != nil || !restored.DeletedAt.IsZero() || restored.NextCheckAt.After(time.Now()) {
		t.Fatalf("RestorePage = %+v, %v; want the page back, due now", restored, err)
	}
	if _, err := st.RestorePage(ctx, gone.ID); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("RestorePage of a watched page = %v, want ErrPageNotFound", err)
	}
	if got := updateURLs(t, st, watch.UpdateFilter{PageID: gone.ID}); !slices.Equal(got, []string{gone.BaseURL + "news"}) {
		t.Errorf("updates of the restored page = %v, want its news back", got)
	}

	// Adding the URL again restores it with the settings given now.
	if _, err := st.TrashPage(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	again, err := st.CreatePage(ctx, watch.PageSpec{URL: gone.BaseURL, Name: "Back", Interval: 10 * time.Minute,
		Options: watch.LinkOptions{Within: []string{"main"}}})
	if err != nil || again.ID != gone.ID || !again.Restored || again.Name != "Back" || again.Interval != 10*time.Minute {
		t.Fatalf("CreatePage of a trashed URL = %+v, %v; want page %d restored with the new settings", again, err, gone.ID)
	}
	if !again.RebaselinePending {
		t.Errorf("restored with other regions, the page does not re-baseline: its next check would report the newly admitted links")
	}
	if _, err := st.CreatePage(ctx, watch.PageSpec{URL: gone.BaseURL}); !errors.Is(err, watch.ErrDuplicatePage) {
		t.Errorf("CreatePage of a watched URL = %v, want ErrDuplicatePage", err)
	}

	// Emptying keeps what has not been in the trash for the retention.
	if _, err := st.TrashPage(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EmptyTrash(ctx, watch.TrashRetention, 100); err != nil || n != 0 {
		t.Fatalf("EmptyTrash of a fresh trash = %d, %v; want 0", n, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE pages SET deleted_at = now() - interval '8 days' WHERE id = $1`, gone.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EmptyTrash(ctx, watch.TrashRetention, 100); err != nil || n != 1 {
		t.Fatalf("EmptyTrash after 8 days = %d, %v; want 1", n, err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pages WHERE id = $1) + (SELECT count(*) FROM updates WHERE page_id = $1)
		+ (SELECT count(*) FROM links WHERE page_id = $1) + (SELECT count(*) FROM page_hours WHERE page_id = $1)`, gone.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows of the emptied page left (%v), want none", left, err)
	}
}

// A reader's mark only moves forward; the updates above it are unread.
func TestReadMarkOnlyMovesForward(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	if _, err := st.CreateToken(ctx, "reader", "pw_reader_secret", false); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.ReadMark(ctx, "reader"); ok || err != nil {
		t.Fatalf("ReadMark before any mark = %v, %v; want none", ok, err)
	}
	var pages []watch.Page
	for i := range 3 {
		pages = append(pages, pageWithNews(t, st, fmt.Sprintf("read%d", i)))
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{})
	if err != nil || len(ups) != 3 {
		t.Fatalf("QueryUpdates = %d, %v; want 3", len(ups), err)
	}
	middle := watch.CursorOf(ups[1])
	if err := st.MarkRead(ctx, "reader", middle); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CountUnread(ctx, middle, 100); err != nil || n != 1 {
		t.Errorf("CountUnread = %d, %v; want 1", n, err)
	}
	if got := updateURLs(t, st, watch.UpdateFilter{NewerThan: middle}); !slices.Equal(got, []string{ups[0].URL}) {
		t.Errorf("updates newer than the mark = %v, want %s", got, ups[0].URL)
	}
	// A tab left open sends an older mark: nothing changes.
	if err := st.MarkRead(ctx, "reader", watch.CursorOf(ups[2])); err != nil {
		t.Fatal(err)
	}
	if mark, ok, err := st.ReadMark(ctx, "reader"); err != nil || !ok || mark.ID != middle.ID || !mark.DiscoveredAt.Equal(middle.DiscoveredAt) {
		t.Errorf("ReadMark after an older mark = %+v, %v, %v; want %+v", mark, ok, err, middle)
	}
	if err := st.MarkRead(ctx, "reader", watch.CursorOf(ups[0])); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CountUnread(ctx, watch.CursorOf(ups[0]), 100); err != nil || n != 0 {
		t.Errorf("CountUnread after marking all = %d, %v; want 0", n, err)
	}
	// Unread updates of a page in the trash are not counted.
	if _, err := st.TrashPage(ctx, pages[2].ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.CountUnread(ctx, watch.Cursor{}, 100); err != nil || n != 2 {
		t.Errorf("CountUnread of everything with a page in the trash = %d, %v; want 2", n, err)
	}
	if err := st.MarkRead(ctx, "nobody", middle); !errors.Is(err, watch.ErrTokenNotFound) {
		t.Errorf("MarkRead of an unknown token = %v, want ErrTokenNotFound", err)
	}
	if err := st.RevokeToken(ctx, "reader"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := st.ReadMark(ctx, "reader"); ok || err != nil {
		t.Errorf("ReadMark of a revoked token = %v, %v; want none", ok, err)
	}
}

// The hourly counts of new links follow the updates as they are recorded,
// and only the last hours asked for are returned.
func TestSparklinesCountNewLinksPerHour(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page := pageWithNews(t, st, "spark")
	quiet := pageWithNews(t, st, "quiet")
	if _, err := pool.Exec(ctx, `DELETE FROM page_hours WHERE page_id = $1`, quiet.ID); err != nil {
		t.Fatal(err)
	}
	writeUpdates(t, pool, page.ID, "https://spark.example/more/", 4)
	// Two hours ago, and ten days ago (older than any sparkline).
	for _, back := range []string{"2 hours", "10 days"} {
		if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, discovered_at)
			VALUES ($1, $2, 't', 'c', hashtext($2), now() - $3::interval)`, page.ID, "https://spark.example/"+back, back); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := st.Sparklines(ctx, []int64{page.ID, quiet.ID}, 168)
	if err != nil {
		t.Fatal(err)
	}
	// Compared by sums, so that a test crossing the hour still passes.
	line := lines[page.ID]
	sum := func(ns []int) (total int) {
		for _, n := range ns {
			total += n
		}
		return total
	}
	if len(line) != 168 || sum(line[164:]) != 6 || sum(line) != 6 || line[167]+line[166] < 5 {
		t.Fatalf("sparkline %v (len %d): want 5 new links this hour, 1 two hours ago, none of ten days ago", line, len(line))
	}
	if _, ok := lines[quiet.ID]; ok {
		t.Errorf("a page without new links this week has a sparkline: %v", lines[quiet.ID])
	}
	if n, err := st.PruneSparklines(ctx, 8*24*time.Hour); err != nil || n != 1 {
		t.Errorf("PruneSparklines = %d, %v; want the count of ten days ago deleted", n, err)
	}
}

// A link taken down again is marked so on its update.
func TestUpdatesSayWhenTheirLinkWasTakenDown(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://takedown.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Hour)
	a, ab := links(page.BaseURL+"a"), links(page.BaseURL+"a", page.BaseURL+"b")
	for j, ls := range [][]watch.NewLink{a, ab, a, a} {
		if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(j) * time.Second),
			Status: 200, FullSet: true, Removals: watch.Removals{Checks: 2, Keys: keysOf(ls)}}, ls); err != nil {
			t.Fatal(err)
		}
	}
	if got := recordRemovals(t, st, page.ID); got != "[https://takedown.example/b]" {
		t.Fatalf("removals = %s, want b", got)
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page.ID})
	if err != nil || len(ups) != 1 || ups[0].RemovedAt == nil {
		t.Fatalf("QueryUpdates = %+v, %v; want b's update with its removal time", ups, err)
	}
}

package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func numbered(prefix string, from, to int) []watch.NewLink {
	var urls []string
	for i := from; i < to; i++ {
		urls = append(urls, fmt.Sprintf("%s%d", prefix, i))
	}
	return links(urls...)
}

// A page's new links are capped per check and per UTC day; what is cut is
// counted on the page and recorded by a later check if still there. The
// baseline is never cut.
func TestNewLinksAreCappedPerCheckAndPerDay(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://rotating.example/"})
	caps := watch.Caps{PerCheck: 10, PerDay: 25}
	at := time.Now()
	check := func(ls []watch.NewLink, truncated int) watch.Recorded {
		t.Helper()
		at = at.Add(time.Second)
		c := ok(page.ID, at)
		c.Caps, c.Truncated, c.LinksDigest = caps, truncated, fmt.Sprint("digest of ", len(ls))
		rec, err := st.RecordCheck(ctx, c, ls)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := check(numbered("https://rotating.example/base", 0, 50), 0); !rec.Baseline || rec.Inserted != 50 || rec.Cut != 0 {
		t.Fatalf("baseline = %+v, want all 50 links and nothing cut", rec)
	}
	// Old links among the candidates (as after a Redis flush) take no budget.
	ls := append(numbered("https://rotating.example/base", 0, 50), numbered("https://rotating.example/new", 0, 15)...)
	rec := check(ls, 7)
	if len(rec.Updates) != 10 || rec.Cut != 5 {
		t.Fatalf("check with 15 new links = %d updates, %d cut; want 10 and 5", len(rec.Updates), rec.Cut)
	}
	for i, u := range rec.Updates {
		if want := fmt.Sprintf("https://rotating.example/new%d", i); u.URL != want {
			t.Errorf("update %d = %s, want %s: the page's first links go first", i, u.URL, want)
		}
	}
	got, _ := st.Page(ctx, page.ID)
	if got.LastCut != 5 || got.LastTruncated != 7 {
		t.Fatalf("page shows cut %d, truncated %d; want 5 and 7", got.LastCut, got.LastTruncated)
	}
	// A digest promises every link of its set is recorded: after a cut the
	// page has none, so the crawler sends the same page in full again.
	var digest *string
	if err := pool.QueryRow(ctx, `SELECT links_digest FROM pages WHERE id = $1`, page.ID).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	if digest != nil {
		t.Fatalf("links digest after a cut check = %q, want none", *digest)
	}
	// The cut links are still new: the next check records them.
	if rec := check(ls, 0); len(rec.Updates) != 5 || rec.Cut != 0 {
		t.Fatalf("next check = %d updates, %d cut; want the 5 cut before", len(rec.Updates), rec.Cut)
	}
	// 15 recorded today: 10 more fit the day's 25, the rest are cut.
	if rec := check(numbered("https://rotating.example/more", 0, 20), 0); len(rec.Updates) != 10 || rec.Cut != 10 {
		t.Fatalf("check past the day's cap = %d updates, %d cut; want 10 and 10", len(rec.Updates), rec.Cut)
	}
	if rec := check(numbered("https://rotating.example/late", 0, 3), 0); len(rec.Updates) != 0 || rec.Cut != 3 {
		t.Fatalf("check after the day's cap = %d updates, %d cut; want 0 and 3", len(rec.Updates), rec.Cut)
	}
	got, _ = st.Page(ctx, page.ID)
	if got.LastCut != 3 || got.LastTruncated != 0 {
		t.Fatalf("page shows cut %d, truncated %d; want 3 and 0", got.LastCut, got.LastTruncated)
	}
}

// Link retention forgets only links absent from the page at its last refresh
// and unseen for the retention period; links still on the page stay, however
// old, and so never come back as updates.
func TestPruneLinksForgetsOnlyLinksGoneFromThePage(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://old.example/"})
	c := ok(page.ID, time.Now())
	c.RefreshEvery = 24 * time.Hour
	rec, err := st.RecordCheck(ctx, c, links("https://old.example/stays", "https://old.example/gone"))
	if err != nil {
		t.Fatal(err)
	}
	if !rec.RefreshDue {
		t.Fatal("first check of a never-refreshed page: RefreshDue = false")
	}
	// Age everything, then refresh with the page's current set.
	if _, err := pool.Exec(ctx, `UPDATE links SET last_seen_at = now() - interval '100 days'`); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneLinks(ctx, 90*24*time.Hour, 100); err != nil || n != 0 {
		t.Fatalf("PruneLinks before any refresh = %d, %v; want 0: absence is not known yet", n, err)
	}
	if err := st.RefreshLinks(ctx, page.ID, []uint64{shortlink.Key("https://old.example/stays")}, "d"); err != nil {
		t.Fatal(err)
	}
	c.FetchedAt = c.FetchedAt.Add(time.Second)
	if rec, _ := st.RecordCheck(ctx, c, nil); rec.RefreshDue {
		t.Fatal("RefreshDue right after a refresh")
	}
	n, err := st.PruneLinks(ctx, 90*24*time.Hour, 100)
	if err != nil || n != 1 {
		t.Fatalf("PruneLinks = %d, %v; want the one absent link", n, err)
	}
	var left []string
	rows, _ := pool.Query(ctx, `SELECT url FROM links ORDER BY url`)
	for rows.Next() {
		var u string
		rows.Scan(&u)
		left = append(left, u)
	}
	if fmt.Sprint(left) != "[https://old.example/stays]" {
		t.Fatalf("links after pruning = %v, want only the one still on the page", left)
	}
}

// A check that cannot refresh (304, unchanged) while a refresh is due clears
// the validators and digest, so the next job asks for the whole page.
func TestDueRefreshAsksForTheWholePage(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	page, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://static.example/"})
	c := ok(page.ID, time.Now())
	c.ETag, c.LinksDigest, c.FullSet = `"v1"`, "digest", true
	if _, err := st.RecordCheck(ctx, c, links("https://static.example/a")); err != nil {
		t.Fatal(err)
	}
	notModified := watch.Check{PageID: page.ID, FetchedAt: c.FetchedAt.Add(time.Second), Status: 304, RefreshEvery: time.Hour}
	if _, err := st.RecordCheck(ctx, notModified, nil); err != nil {
		t.Fatal(err)
	}
	var etag, digest *string
	if err := pool.QueryRow(ctx, `SELECT etag, links_digest FROM pages WHERE id = $1`, page.ID).Scan(&etag, &digest); err != nil {
		t.Fatal(err)
	}
	if etag != nil || digest != nil {
		t.Fatalf("after a 304 with a refresh due: etag %v, digest %v; want both cleared", etag, digest)
	}
}

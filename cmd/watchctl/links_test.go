package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestLinksPrintsTimeOnThePage: watchctl links prints the links on a page
// with their time so far, --removed those taken down with their time on
// the page, --json the API's objects; a page not watched, or not followed,
// says so.
func TestLinksPrintsTimeOnThePage(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	alt := watch.NewLink{Key: 1, URL: "https://zeitung.example/alt", Text: "Alt", Code: "c1"}
	neu := watch.NewLink{Key: 2, URL: "https://zeitung.example/neu", Text: "Neu", Code: "c2"}
	at := time.Now().Add(-time.Minute)
	// Followed from the first whole check; /alt is gone from the second,
	// which K = 1 makes due at once, and the processor records.
	for i, check := range []struct {
		keys  []uint64
		fresh []watch.NewLink
	}{{[]uint64{1}, []watch.NewLink{alt}}, {[]uint64{2}, []watch.NewLink{neu}}} {
		c := watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(i) * time.Second), Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 1, Keys: check.keys}}
		if _, err := st.RecordCheck(ctx, c, check.fresh); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RecordRemovals(ctx, []int64{page.ID}); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, e["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `UPDATE removals SET removed_at = (SELECT first_seen_at FROM links WHERE link_key = 1) + interval '1 day 4 hours 5 minutes'`); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runCLI(t, e, "links", "1")
	if code != 0 || !strings.Contains(out, "FIRST SEEN") || !strings.Contains(out, "https://zeitung.example/neu") ||
		!strings.Contains(out, "under a minute so far") && !strings.Contains(out, "1 min so far") || strings.Contains(out, "/alt") {
		t.Fatalf("links 1: exit %d\n%s%s; want /neu with its time so far, and not /alt", code, out, errOut)
	}
	code, out, errOut = runCLI(t, e, "links", "1", "--removed")
	if code != 0 || !strings.Contains(out, "1 day 4 h") || !strings.Contains(out, "https://zeitung.example/alt") || strings.Contains(out, "/neu") {
		t.Fatalf("links 1 --removed: exit %d\n%s%s; want /alt, on the page for 1 day 4 h", code, out, errOut)
	}
	code, out, _ = runCLI(t, e, "links", "1", "--removed", "--json")
	var l watch.PageLink
	if err := json.Unmarshal([]byte(out), &l); code != 0 || err != nil || l.DwellSeconds == nil || *l.DwellSeconds != 28*3600+5*60 || l.RemovedAt == nil {
		t.Fatalf("links 1 --removed --json: exit %d %s (%v); want dwell_seconds %d", code, out, err, 28*3600+5*60)
	}
	if code, _, errOut = runCLI(t, e, "links", "99"); code != exitUsage || !strings.Contains(errOut, "no watched page has id 99") {
		t.Fatalf("links 99: exit %d %q, want 2 saying no such page", code, errOut)
	}

	off, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://off.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: off.ID, FetchedAt: time.Now(), Status: 200, FullSet: true,
		Removals: watch.Removals{Keys: []uint64{3}}}, []watch.NewLink{{Key: 3, URL: "https://off.example/a", Text: "A", Code: "c3"}}); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = runCLI(t, e, "links", "2"); code != exitError || !strings.Contains(errOut, "PORTALWATCH_REMOVAL_CHECKS") ||
		!strings.Contains(errOut, "--removed") {
		t.Fatalf("links of a page not followed: exit %d %q, want 1 naming the setting and --removed", code, errOut)
	}
}

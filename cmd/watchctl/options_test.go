package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestAddAndSetRegionsAndKeywordRules(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	ctx := context.Background()

	code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--within", "main:has(a)")
	if code != exitUsage || !strings.Contains(errOut, ":has") {
		t.Fatalf("add with a refused selector: exit %d %q, want 2 naming :has", code, errOut)
	}
	code, out, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/", "--within", "#latest-news", "--exclude", "nav",
		"--exclude", "footer", "--include-text", "florenz", "--exclude-url", `\?ticker=`)
	if code != 0 {
		t.Fatalf("add: exit %d %s%s", code, out, errOut)
	}
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("pages %v %v", pages, err)
	}
	o := pages[0].Options
	if !slices.Equal(o.Within, []string{"#latest-news"}) || !slices.Equal(o.Exclude, []string{"nav", "footer"}) ||
		!slices.Equal(o.IncludeText, []string{"florenz"}) || !slices.Equal(o.ExcludeURL, []string{`\?ticker=`}) {
		t.Fatalf("stored options %+v", o)
	}

	// The page has a baseline: a change of what it admits re-baselines it,
	// and set says so; --within '' clears the regions.
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: pages[0].ID, FetchedAt: time.Now(), Status: 200}, nil); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, e, "set", "1", "--within", "", "--burst-detection=false")
	if code != 0 || !strings.Contains(out, "re-baselines silently") {
		t.Fatalf("set: exit %d %q %q, want the re-baseline line", code, out, errOut)
	}
	p, err := st.Page(ctx, pages[0].ID)
	if err != nil || len(p.Options.Within) != 0 || p.BurstDetection || !p.RebaselinePending {
		t.Fatalf("after set: %+v %v", p, err)
	}
	code, out, _ = runCLI(t, e, "set", "1", "--name", "Zeitung")
	if code != 0 || strings.Contains(out, "re-baselines") {
		t.Fatalf("set --name: exit %d %q, want no re-baseline line", code, out)
	}
}

func TestUpdatesShowsABurstAsOneLineAndListsRemovals(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://zeitung.example/"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200},
		[]watch.NewLink{{Key: 1, URL: "https://zeitung.example/alt", Text: "Alt", Code: "c1"}}); err != nil {
		t.Fatal(err)
	}
	var flood []watch.NewLink
	for i := range 25 {
		flood = append(flood, watch.NewLink{Key: uint64(100 + i), URL: fmt.Sprintf("https://zeitung.example/neu/%d", i),
			Text: fmt.Sprintf("Neu %d", i), Code: fmt.Sprint("n", i), Summary: "Teaser"})
	}
	c := watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Second), Status: 200, Links: 26, Burst: watch.Burst{Share: 0.5, Min: 20}}
	if rec, err := st.RecordCheck(ctx, c, flood); err != nil || !rec.Burst {
		t.Fatalf("flood check: %+v %v", rec, err)
	}

	code, out, errOut := runCLI(t, e, "updates")
	if code != 0 || !strings.Contains(out, "redesign: 25 new links on page 1") || strings.Contains(out, "/neu/3") {
		t.Fatalf("updates: exit %d\n%s%s; want the flood as one line", code, out, errOut)
	}
	if _, out, _ = runCLI(t, e, "updates", "--expand"); !strings.Contains(out, "/neu/3") {
		t.Fatalf("updates --expand does not list the flood's links:\n%s", out)
	}
	// --limit counts lines: a redesign is one, with every link it brought
	// (it once said "3 new links" of a flood of 25 with --limit 3).
	if _, out, _ = runCLI(t, e, "updates", "--limit", "1"); !strings.Contains(out, "redesign: 25 new links on page 1") {
		t.Fatalf("updates --limit 1:\n%s; want the whole flood on its line", out)
	}
	if _, out, _ = runCLI(t, e, "updates", "--page", "99"); !strings.Contains(out, "no updates of page 99") {
		t.Fatalf("updates of a page without any:\n%s", out)
	}
	if _, out, _ = runCLI(t, e, "updates", "--json", "--limit", "1"); !strings.Contains(out, `"summary":"Teaser"`) || !strings.Contains(out, `"burst":true`) {
		t.Fatalf("updates --json lacks summary or burst: %s", out)
	}

	// Followed from the first whole check on, the page then loses /alt,
	// which K = 1 makes due at once, and the processor records.
	// The check that finds it gone keeps a snapshot, which the removal names.
	gone := &watch.SnapshotRef{File: "t.warc.gz", Offset: 0, Length: 900, RecordID: "urn:uuid:gone", PayloadDigest: "sha1:GONE",
		CheckID: watch.NewCheckID(), TargetURI: page.BaseURL, Status: 200, WrittenAt: time.Now()}
	for i, keys := range [][]uint64{{1}, {}} {
		c := watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(2+i) * time.Second), Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 1, Keys: keys}}
		if len(keys) == 0 {
			c.Snapshot = gone
		}
		if _, err := st.RecordCheck(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.RecordRemovals(ctx, []int64{page.ID}); err != nil { // as the processor does after its checks
		t.Fatal(err)
	}
	snaps, err := st.Snapshots(ctx, page.ID, 1)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots of the page: %+v, %v; want the one of the check that found /alt gone", snaps, err)
	}
	snapshot := strconv.FormatInt(snaps[0].ID, 10)
	if code, out, _ = runCLI(t, e, "updates", "--removed"); code != 0 || !strings.Contains(out, "https://zeitung.example/alt") ||
		!strings.Contains(out, "ON THE PAGE FOR") || !strings.Contains(out, "under a minute") || column(out, "SNAPSHOT", "zeitung.example/alt") != snapshot {
		t.Fatalf("updates --removed: exit %d\n%s\nwant the removal with its time on the page and snapshot %s", code, out, snapshot)
	}
	if code, out, _ = runCLI(t, e, "updates", "--removed", "--json"); code != 0 || !strings.Contains(out, `"dwell_seconds":`) ||
		!strings.Contains(out, `"snapshot_id":`+snapshot) {
		t.Fatalf("updates --removed --json: exit %d\n%s\nwant dwell_seconds and snapshot_id %s", code, out, snapshot)
	}
}

// add takes --burst-detection as set does.
// column returns the word in the column headed name of the first line of
// table that holds row, or "" (the table is aligned by a tabwriter).
func column(table, name, row string) string {
	lines := strings.Split(table, "\n")
	at := strings.Index(lines[0], name)
	for _, l := range lines[1:] {
		if at >= 0 && strings.Contains(l, row) && len(l) > at {
			return strings.Fields(l[at:])[0]
		}
	}
	return ""
}

func TestAddWithBurstDetectionOff(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/quiet", "--burst-detection", "false"); code != 0 {
		t.Fatalf("add --burst-detection false: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/default"); code != 0 {
		t.Fatalf("add: exit %d %s", code, errOut)
	}
	pages, err := st.Pages(context.Background())
	if err != nil || len(pages) != 2 {
		t.Fatalf("pages = %d, %v", len(pages), err)
	}
	for _, p := range pages {
		if want := !strings.HasSuffix(p.BaseURL, "/quiet"); p.BurstDetection != want {
			t.Errorf("%s: burst detection %t, want %t", p.BaseURL, p.BurstDetection, want)
		}
	}
}

// add and set take --articles: a page registered now reads articles unless
// told not to, and set turns them on for a page of before the upgrade.
func TestAddAndSetArticles(t *testing.T) {
	t.Parallel()
	e, st := migrated(t)
	e["PORTALWATCH_ALLOW_PRIVATE"] = "true"
	ctx := context.Background()
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/plain", "--articles=false"); code != 0 {
		t.Fatalf("add --articles=false: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, e, "add", "http://127.0.0.1:9/news"); code != 0 {
		t.Fatalf("add: exit %d %s", code, errOut)
	}
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 2 {
		t.Fatalf("pages = %d, %v", len(pages), err)
	}
	for _, p := range pages {
		if want := !strings.HasSuffix(p.BaseURL, "/plain"); p.Articles != want {
			t.Errorf("%s: articles %t, want %t", p.BaseURL, p.Articles, want)
		}
	}
	code, out, errOut := runCLI(t, e, "set", fmt.Sprint(pages[0].ID), "--articles", "true")
	if code != 0 || !strings.Contains(out, "articles true") {
		t.Fatalf("set --articles true: exit %d %q %q", code, out, errOut)
	}
	if p, err := st.Page(ctx, pages[0].ID); err != nil || !p.Articles || p.RebaselinePending {
		t.Errorf("after set --articles true: articles %t, rebaseline %t, %v; want on, no re-baseline", p.Articles, p.RebaselinePending, err)
	}
	if code, out, _ = runCLI(t, e, "list", "--json"); code != 0 || !strings.Contains(out, `"articles":true`) {
		t.Errorf("list --json: exit %d, no articles field:\n%s", code, out)
	}
}

package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/testkit/warcread"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func newLinks(urls ...string) []watch.NewLink {
	out := make([]watch.NewLink, len(urls))
	for i, u := range urls {
		out[i] = watch.NewLink{Key: uint64(i + 1), URL: u, Text: "t " + u, Code: "c" + string(rune('a'+i))}
	}
	return out
}

// TestCrashBetweenWriteAndIndexRecovers writes the records of checks that
// never reach the index (a crawler killed before its task, a stale
// check, a writer that died with its file open) beside those of
// checks indexed with their check, then sweeps past the grace: what stays
// is exactly the indexed records, each read back whole, and no index row
// names a record the store lacks.
func TestCrashBetweenWriteAndIndexRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := systest.Store(t)
	dir := t.TempDir()
	fs, err := archive.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	w := archive.NewWriter(fs, archive.WriterConfig{})
	write := func(body string, orig *watch.SnapshotOriginal) watch.SnapshotRef {
		t.Helper()
		ref, err := w.Write(ctx, archive.Check{PageID: page.ID, CheckID: watch.NewCheckID(), Capture: capture([]byte(body), ""), Original: orig})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	t0 := time.Now()
	check := func(at time.Time, ref watch.SnapshotRef, urls ...string) watch.Recorded {
		t.Helper()
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: at, Status: 200, FullSet: true, Snapshot: &ref}, newLinks(urls...))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}

	// The crawler writes, then dies before publishing: the redelivered job
	// writes again, and that check is the one indexed.
	orphan := write("<a href=/a>a</a>", nil)
	baseline := write("<a href=/a>a</a>", nil)
	if rec := check(t0, baseline, "https://news.example/a"); rec.Snapshot == 0 || !rec.Baseline {
		t.Fatalf("baseline %+v: want it indexed", rec)
	}
	// A stale check (a late redelivery, fetched before the page's last
	// recorded one) leaves its records unindexed.
	stale := write("<a href=/a>a</a><!-- ad -->", nil)
	if rec := check(t0.Add(-time.Second), stale, "https://news.example/a"); rec.Snapshot != 0 || !rec.Stale {
		t.Fatalf("a stale check %+v indexed snapshot %d", rec, rec.Snapshot)
	}
	// A check that finds a new link is indexed; a redelivery of it is not
	// indexed twice.
	news := write("<a href=/a>a</a><a href=/b>b</a>", nil)
	rec := check(t0.Add(2*time.Second), news, "https://news.example/a", "https://news.example/b")
	if rec.Snapshot == 0 || len(rec.Updates) != 1 {
		t.Fatalf("check with news %+v: want it indexed", rec)
	}
	if again := check(t0.Add(2*time.Second), news, "https://news.example/a", "https://news.example/b"); again.Snapshot != 0 {
		t.Fatalf("redelivered check indexed again as %d", again.Snapshot)
	}
	// A check of a page removed meanwhile fails whole: no row.
	gone, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://gone.example/"})
	if err != nil {
		t.Fatal(err)
	}
	goneRef := write("<a href=/z>z</a>", nil)
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: gone.ID + 1000, FetchedAt: t0, Status: 200, FullSet: true, Snapshot: &goneRef},
		newLinks("https://gone.example/z")); err == nil {
		t.Fatal("a check of a page that does not exist was recorded")
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A writer that dies with its file open.
	dead := archive.NewWriter(fs, archive.WriterConfig{Prefix: "dead"})
	deadRef, err := dead.Write(ctx, archive.Check{PageID: page.ID, CheckID: watch.NewCheckID(), Capture: capture([]byte("x"), "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil { // the process ends without sealing
		t.Fatal(err)
	}

	// Within the grace nothing is touched.
	log := testsvc.Logger(t)
	cfg := archive.SweepConfig{Grace: time.Hour}
	res, err := archive.Sweep(ctx, fs, st, cfg, time.Now(), log)
	if err != nil || res.Removed+res.Compacted+res.Sealed != 0 {
		t.Fatalf("sweep within the grace: %+v %v", res, err)
	}
	// Past it: the open file is sealed, then swept with the others.
	later := time.Now().Add(2 * time.Hour)
	if res, err = archive.Sweep(ctx, fs, st, cfg, later, log); err != nil || res.Sealed != 1 || res.Compacted != 1 {
		t.Fatalf("first sweep past the grace: %+v %v; want the dead writer's file sealed, the other compacted", res, err)
	}
	// The sealed file's grace runs from its seal: age it.
	for _, f := range mustList(t, fs) {
		old := time.Now().Add(-2 * time.Hour)
		os.Chtimes(filepath.Join(dir, f.Name), old, old) //nolint:errcheck // checked by the sweep's count
	}
	if res, err = archive.Sweep(ctx, fs, st, cfg, later, log); err != nil || res.Removed != 1 {
		t.Fatalf("second sweep: %+v %v; want the dead writer's file removed", res, err)
	}

	// What is left: exactly the indexed records, each read back whole.
	snaps, err := st.Snapshots(ctx, page.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var indexed []string
	for _, s := range snaps {
		got, err := archive.ReadResponse(ctx, fs, s, 1<<20)
		if err != nil {
			t.Fatalf("indexed snapshot %d does not read back: %v", s.ID, err)
		}
		if s.Ref.RecordID == news.RecordID && !strings.Contains(string(got.Payload), "/b") {
			t.Fatalf("snapshot %d payload %q", s.ID, got.Payload)
		}
		indexed = append(indexed, s.Ref.RecordID)
	}
	var stored []string
	for _, f := range mustList(t, fs) {
		data, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range warcread.Read(t, data) {
			if typ := r.Header.Get("WARC-Type"); typ == "response" || typ == "revisit" {
				stored = append(stored, strings.Trim(r.Header.Get("WARC-Record-ID"), "<>"))
			}
		}
	}
	sort.Strings(indexed)
	sort.Strings(stored)
	want := []string{baseline.RecordID, news.RecordID}
	sort.Strings(want)
	if strings.Join(indexed, " ") != strings.Join(want, " ") || strings.Join(stored, " ") != strings.Join(want, " ") {
		t.Fatalf("indexed %v, stored %v: want both exactly %v (orphan %s, stale %s, gone %s, dead %s reclaimed)",
			indexed, stored, want, orphan.RecordID, stale.RecordID, goneRef.RecordID, deadRef.RecordID)
	}
}

func mustList(t *testing.T, s archive.Store) []archive.FileInfo {
	t.Helper()
	files, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return files
}

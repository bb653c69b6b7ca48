package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func snapshotRef(n int) *watch.SnapshotRef {
	return &watch.SnapshotRef{File: "t.warc.gz", Offset: int64(n) * 1000, Length: 900, RecordID: fmt.Sprintf("urn:uuid:rec-%d", n),
		PayloadDigest: fmt.Sprintf("sha1:D%d", n), CheckID: watch.NewCheckID(), TargetURI: "https://news.example/", Status: 200,
		WrittenAt: time.Now()}
}

// TestSnapshotIndexedWithChecksThatChangeTheLinks follows a page with
// removals after two absent checks: the baseline is indexed, and so is a
// check that only sees a link go (it records nothing yet). The check that
// makes the removal due is a 304 and has no snapshot of its own: the
// removal is recorded with the snapshot that showed the link gone. A stale
// check is not indexed.
func TestSnapshotIndexedWithChecksThatChangeTheLinks(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	record := func(n int, ref *watch.SnapshotRef, urls ...string) watch.Recorded {
		t.Helper()
		ls := links(urls...)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(time.Duration(n) * time.Second), Status: 200,
			FullSet: true, Removals: watch.Removals{Checks: 2, Keys: keysOf(ls)}, Snapshot: ref}, ls)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := record(1, snapshotRef(1), "https://news.example/a", "https://news.example/b"); rec.Snapshot == 0 {
		t.Fatalf("baseline %+v not indexed", rec)
	}
	gone := record(2, snapshotRef(2), "https://news.example/a")
	if gone.Snapshot == 0 || gone.Due != 0 {
		t.Fatalf("the check that first misses b %+v: want it indexed, nothing due yet", gone)
	}
	// A 304: no body, no links, the absence ageing by the check count.
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(3 * time.Second), Status: 304,
		Removals: watch.Removals{Checks: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := st.RecordRemovals(ctx, []int64{page.ID}); err != nil || n != 1 {
		t.Fatalf("record removals after the 304 check: %d, %v; want b's", n, err)
	}
	removals, err := st.Removals(ctx, watch.RemovalFilter{PageID: page.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(removals) != 1 || removals[0].SnapshotID == nil || *removals[0].SnapshotID != gone.Snapshot {
		t.Fatalf("removals %+v: want b's, shown with snapshot %d, the check that first missed it", removals, gone.Snapshot)
	}
	snaps, err := st.Snapshots(ctx, page.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Removals != 0 || !snaps[1].Baseline || snaps[0].Ref.RecordID != "urn:uuid:rec-2" {
		t.Fatalf("snapshots %+v", snaps)
	}
	if rec := record(0, snapshotRef(9), "https://news.example/a"); !rec.Stale || rec.Snapshot != 0 {
		t.Fatalf("a stale check %+v: indexed, want not", rec)
	}
	// A revisit whose original is not indexed is not indexed either.
	ref := snapshotRef(4)
	ref.RevisitOf = "urn:uuid:rec-9" // the stale check's, never indexed
	r, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(4 * time.Second), Status: 200, FullSet: true,
		Snapshot: ref}, links("https://news.example/a", "https://news.example/c"))
	if err != nil || len(r.Updates) != 1 || r.Snapshot != 0 {
		t.Fatalf("revisit of an unindexed record: %+v %v; want the update recorded, no snapshot", r, err)
	}
}

// TestSnapshotWithTheJobsFollowingState records checks with a snapshot
// and the following state their jobs carry (the two round trip path): the
// baseline is indexed and becomes the page's original; a job whose state
// moved since is taken again under the lock and still makes its removal
// due; a redelivery indexes nothing twice; a revisit is indexed without
// becoming the original.
func TestSnapshotWithTheJobsFollowingState(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	record := func(n int, state *watch.Followed, ref *watch.SnapshotRef, urls ...string) watch.Recorded {
		t.Helper()
		ls := links(urls...)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(time.Duration(n) * time.Second), Status: 200,
			FullSet: true, Removals: watch.Removals{Checks: 2, Keys: keysOf(ls), Followed: state}, Snapshot: ref}, ls)
		if err != nil {
			t.Fatalf("check %d: %v", n, err)
		}
		return rec
	}
	original := func() string {
		t.Helper()
		var id *string
		if err := pool.QueryRow(ctx, `SELECT snapshot_original->>'recordId' FROM pages WHERE id = $1`, page.ID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id == nil {
			return ""
		}
		return *id
	}
	first := scheduledState(t, st, pool, page.ID)
	if !first.Known() {
		t.Fatalf("the first job's state %+v is not known", first)
	}
	if rec := record(1, first, snapshotRef(1), "https://news.example/a", "https://news.example/b"); rec.Snapshot == 0 || !rec.Baseline {
		t.Fatalf("baseline %+v not indexed", rec)
	}
	if got := original(); got != "urn:uuid:rec-1" {
		t.Fatalf("the page's original is %q after its baseline, want urn:uuid:rec-1", got)
	}
	if rec := record(2, scheduledState(t, st, pool, page.ID), snapshotRef(2), "https://news.example/a"); rec.Snapshot == 0 || rec.Due != 0 {
		t.Fatalf("a check with a link pending removal %+v: want it indexed, nothing due", rec)
	}
	// The first job's state again: it moved (check 2 made b pending), so
	// the check is taken again with the state read under the lock.
	ref3 := snapshotRef(3)
	rec := record(3, first, ref3, "https://news.example/a")
	if rec.Snapshot == 0 || rec.Due != 1 || !rec.Recomputed {
		t.Fatalf("the check with a moved state that makes the removal due %+v: want it indexed with 1 due, recomputed", rec)
	}
	if got := original(); got != "urn:uuid:rec-3" {
		t.Fatalf("the page's original is %q, want urn:uuid:rec-3", got)
	}
	var rows int
	count := func() int {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM snapshots WHERE page_id = $1`, page.ID).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	redelivered, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(3 * time.Second), Status: 200, FullSet: true,
		Removals: watch.Removals{Checks: 2, Keys: keysOf(links("https://news.example/a")), Followed: scheduledState(t, st, pool, page.ID)},
		Snapshot: ref3}, links("https://news.example/a"))
	if err != nil || redelivered.Snapshot != 0 || count() != 3 {
		t.Fatalf("redelivered check: %+v %v, %d rows; want no new row of 3", redelivered, err, rows)
	}
	ref := snapshotRef(4)
	ref.RevisitOf = "urn:uuid:rec-3"
	rec = record(4, scheduledState(t, st, pool, page.ID), ref, "https://news.example/a", "https://news.example/c")
	if len(rec.Updates) != 1 || rec.Snapshot == 0 {
		t.Fatalf("a revisit with an update %+v: want it indexed", rec)
	}
	if got := original(); got != "urn:uuid:rec-3" || count() != 4 {
		t.Fatalf("after a revisit the page's original is %q with %d rows, want urn:uuid:rec-3 with 4", got, rows)
	}
}

// TestSnapshotRetentionKeepsWhatIsReferred expires and evicts snapshots:
// the oldest go first, but never an original a revisit refers to, nor the
// page's current original (a job in flight may carry it).
func TestSnapshotRetentionKeepsWhatIsReferred(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	// 1 baseline (original), 2 a new link (original), 3 a new link, a
	// revisit of 2, 4 a new link (original, the page's current one).
	for n := 1; n <= 4; n++ {
		ref := snapshotRef(n)
		if n == 3 {
			ref.RevisitOf = "urn:uuid:rec-2"
		}
		urls := []string{"https://news.example/a"}
		for i := 2; i <= n; i++ {
			urls = append(urls, fmt.Sprintf("https://news.example/%d", i))
		}
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: old.Add(time.Duration(n) * time.Hour), Status: 200,
			FullSet: true, Snapshot: ref}, links(urls...))
		if err != nil || rec.Snapshot == 0 {
			t.Fatalf("check %d: %+v %v", n, rec, err)
		}
	}
	ids := func() []string {
		snaps, err := st.Snapshots(ctx, page.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range snaps {
			out = append(out, s.Ref.RecordID[len("urn:uuid:"):])
		}
		return out
	}
	// Everything is past a retention of a day: 1 goes; 2 stays for its
	// revisit 3, which goes; 4 stays, the page's original.
	n, err := st.ExpireSnapshots(ctx, time.Now().Add(-24*time.Hour), 100)
	if got := fmt.Sprint(ids()); err != nil || n != 2 || got != "[rec-4 rec-2]" {
		t.Fatalf("expired %d (%v), left %s; want rec-1 and rec-3 gone", n, err, got)
	}
	// With its revisit gone, 2 can go too under a cap of one snapshot.
	n, err = st.EvictSnapshots(ctx, 900, 100)
	if got := fmt.Sprint(ids()); err != nil || n != 1 || got != "[rec-4]" {
		t.Fatalf("evicted %d (%v), left %s; want rec-4 alone", n, err, got)
	}
}

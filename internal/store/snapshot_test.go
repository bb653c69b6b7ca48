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

// TestSnapshotIndexedWithChecksThatFindSomething follows a page with
// removals after two absent checks: the baseline is indexed, a check that
// only sees a link go (pending) is not, and the check that makes its
// removal due is, counting it.
func TestSnapshotIndexedWithChecksThatFindSomething(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	record := func(n int, urls ...string) watch.Recorded {
		t.Helper()
		ls := links(urls...)
		rec, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(time.Duration(n) * time.Second), Status: 200,
			FullSet: true, Removals: watch.Removals{Checks: 2, Keys: keysOf(ls)}, Snapshot: snapshotRef(n)}, ls)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := record(1, "https://news.example/a", "https://news.example/b"); rec.Snapshot == 0 {
		t.Fatalf("baseline %+v not indexed", rec)
	}
	if rec := record(2, "https://news.example/a"); rec.Snapshot != 0 || rec.Due != 0 {
		t.Fatalf("a check with a link pending removal %+v: indexed, want not", rec)
	}
	rec := record(3, "https://news.example/a")
	if rec.Snapshot == 0 || rec.Due != 1 {
		t.Fatalf("the check that makes the removal due %+v: want it indexed with 1 due", rec)
	}
	snaps, err := st.Snapshots(ctx, page.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Removals != 1 || !snaps[1].Baseline || snaps[0].Ref.RecordID != "urn:uuid:rec-3" {
		t.Fatalf("snapshots %+v", snaps)
	}
	// A revisit whose original is not indexed is not indexed either.
	ref := snapshotRef(4)
	ref.RevisitOf = "urn:uuid:rec-2" // the pending check's, never indexed
	r, err := st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: t0.Add(4 * time.Second), Status: 200, FullSet: true,
		Snapshot: ref}, links("https://news.example/a", "https://news.example/c"))
	if err != nil || len(r.Updates) != 1 || r.Snapshot != 0 {
		t.Fatalf("revisit of an unindexed record: %+v %v; want the update recorded, no snapshot", r, err)
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

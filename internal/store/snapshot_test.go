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

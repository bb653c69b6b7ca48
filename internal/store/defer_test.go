package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A deferred check frees the page's lease and moves its next check, and
// counts neither as a check nor as a failure.
func TestDeferCheckFreesTheLeaseAndKeepsTheStatus(t *testing.T) {
	st, pool := openStore(t)
	ctx := context.Background()
	p, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://deferred.example/", Interval: time.Hour})
	checked := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	if _, err := st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: checked, Status: 503, Error: "HTTP 503"}, nil); err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	if c, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); err != nil || c.Jobs != 1 {
		t.Fatalf("ClaimDue = %+v, %v; want the page", c, err)
	}
	before, _ := st.Page(ctx, p.ID)

	until := time.Now().Add(30 * time.Second).Truncate(time.Microsecond)
	if err := st.DeferCheck(ctx, p.ID, time.Now(), until); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Page(ctx, p.ID)
	var leased bool
	pool.QueryRow(ctx, `SELECT lease_until IS NOT NULL FROM pages WHERE id = $1`, p.ID).Scan(&leased)
	if leased {
		t.Error("the lease is still set after the deferral")
	}
	if !got.NextCheckAt.Equal(until) {
		t.Errorf("next check at %v, want the deferral's %v", got.NextCheckAt, until)
	}
	if !got.LastCheckedAt.Equal(before.LastCheckedAt) || got.LastStatus != 503 || got.LastError != before.LastError ||
		got.ConsecutiveFailures != 1 {
		t.Errorf("status after deferral = %v %d %q failures %d; want it unchanged (%v 503 %q 1)",
			got.LastCheckedAt, got.LastStatus, got.LastError, got.ConsecutiveFailures, before.LastCheckedAt, before.LastError)
	}

	// A redelivered deferral decided before a later check changes nothing.
	if _, err := st.RecordCheck(ctx, ok(p.ID, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	after, _ := st.Page(ctx, p.ID)
	if err := st.DeferCheck(ctx, p.ID, checked, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Page(ctx, p.ID); !got.NextCheckAt.Equal(after.NextCheckAt) {
		t.Errorf("a stale deferral moved the next check from %v to %v", after.NextCheckAt, got.NextCheckAt)
	}

	if _, err := st.TrashPage(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := st.EmptyTrash(ctx, 0, 10); err != nil || n != 1 {
		t.Fatalf("EmptyTrash = %d, %v; want the page deleted", n, err)
	}
	if err := st.DeferCheck(ctx, p.ID, time.Now(), until); !errors.Is(err, watch.ErrPageNotFound) {
		t.Errorf("DeferCheck of a removed page = %v, want ErrPageNotFound", err)
	}
}

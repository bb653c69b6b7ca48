package processor_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// removals records the removals the delivered checks made due, as the
// claim of the page's next check does in the pipeline, and returns the
// URLs of all recorded.
func (f *fixture) removals(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := f.db.Exec(ctx, `UPDATE pages SET next_check_at = now(), lease_until = NULL WHERE id = $1`, f.page.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour},
		func(context.Context, []watch.Job) ([]watch.Postponed, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	rs, err := f.st.Removals(ctx, watch.RemovalFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, r := range rs {
		urls = append(urls, r.URL)
	}
	return urls
}

// A link absent for two successful checks in a row is recorded once as
// removed, whether the second check sent the whole set or only "unchanged";
// a link absent for one check, or one that comes back, is not; a link that
// comes back is not new.
func TestRemovalsAreRecordedOnceAfterKChecks(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{RemovalChecks: 2})
	f.deliver(t, f.task("/a", "/b", "/c"))
	f.deliver(t, f.task("/a", "/b"))       // /c absent once
	f.deliver(t, f.task("/a", "/b", "/c")) // back: not removed, not new
	f.deliver(t, f.task("/a", "/c"))       // /b absent once
	if got := f.removals(t); len(got) != 0 || len(f.updates(t)) != 0 {
		t.Fatalf("removals %v, updates %v after single absences; want none", got, f.updates(t))
	}
	unchanged := f.task()
	unchanged.Unchanged = true
	f.deliver(t, unchanged) // /b absent twice
	f.deliver(t, unchanged)
	f.deliver(t, f.task("/a", "/c"))
	if got := fmt.Sprint(f.removals(t)); got != "[https://portal.example/b]" {
		t.Fatalf("removals = %s, want /b once", got)
	}
	f.deliver(t, f.task("/a", "/b", "/c"))
	if len(f.updates(t)) != 0 {
		t.Fatalf("a removed link that came back was reported new: %v", f.updates(t))
	}
	var followed, pending int
	if err := f.db.QueryRow(context.Background(), `
		SELECT cardinality(ARRAY(SELECT follow_keys(follow_base) EXCEPT SELECT unnest(follow_gone) UNION SELECT unnest(follow_added))),
		       cardinality(pending_keys)
		FROM pages WHERE id = $1`, f.page.ID).Scan(&followed, &pending); err != nil || followed != 3 || pending != 0 {
		t.Fatalf("%d links followed and %d pending after all came back, want 3 and 0 (%v)", followed, pending, err)
	}
}

func TestRemovalsOffRecordNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a", "/b"))
	for range 3 {
		f.deliver(t, f.task("/a"))
	}
	if got := f.removals(t); len(got) != 0 {
		t.Fatalf("removals with PORTALWATCH_REMOVAL_CHECKS=0: %v", got)
	}
}

// Links a change of options leaves out were not taken down from the page:
// the re-baseline forgets the page's set instead of counting them absent.
func TestOptionsChangeRecordsNoRemovals(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, "", processor.Config{RemovalChecks: 2})
	f.deliver(t, f.task("/a", "/b", "/c"))
	f.deliver(t, f.task("/a", "/b", "/c", "/d"))
	within := []string{"#latest"}
	if _, err := f.st.EditPage(context.Background(), f.page.ID, watch.PageEdit{Within: &within}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.deliver(t, f.task("/a", "/e"))
	}
	if got := f.removals(t); len(got) != 0 {
		t.Fatalf("removals after an options change: %v, want none", got)
	}
	if got := fmt.Sprint(f.updates(t)); got != "[https://portal.example/d]" {
		t.Fatalf("updates = %s, want only /d: /e came with the re-baseline", got)
	}
	f.deliver(t, f.task("/e"))
	f.deliver(t, f.task("/e"))
	if got := fmt.Sprint(f.removals(t)); got != "[https://portal.example/a]" {
		t.Fatalf("removals = %s, want /a after two checks without it", got)
	}
}

// RunRemovalSweep records the due removals that no claim reaches, those of
// a paused page: at its start, and every RemovalSweep after.
func TestRemovalSweepRecordsWhatNoClaimReaches(t *testing.T) {
	t.Parallel()
	cfg := processor.Config{RemovalChecks: 1, RemovalSweep: 20 * time.Millisecond}
	f := newFixtureWith(t, "", cfg)
	waitRemovals := func(want string) {
		t.Helper()
		err := testsvc.Poll(context.Background(), 10*time.Second, testsvc.PollInterval, func() (bool, string, error) {
			rs, err := f.st.Removals(context.Background(), watch.RemovalFilter{Limit: 100})
			if err != nil {
				return false, "", err
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.URL)
			}
			slices.Sort(got)
			return fmt.Sprint(got) == want, fmt.Sprintf("removals %v", got), nil
		})
		if err != nil {
			t.Fatalf("waiting for removals %s: %v", want, err)
		}
	}
	if _, err := f.db.Exec(context.Background(), `UPDATE pages SET enabled = false WHERE id = $1`, f.page.ID); err != nil {
		t.Fatal(err)
	}
	f.deliver(t, f.task("/a", "/b"))
	f.deliver(t, f.task("/a")) // /b due; the paused page is never claimed
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.svc.RunRemovalSweep(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunRemovalSweep = %v at its stop, want nil", err)
		}
	}()
	waitRemovals("[https://portal.example/b]")
	f.deliver(t, f.task()) // /a due
	waitRemovals("[https://portal.example/a https://portal.example/b]")
}

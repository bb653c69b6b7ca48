package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func collect(jobs *[]watch.Job) func(context.Context, []watch.Job) ([]watch.Postponed, error) {
	var mu sync.Mutex
	return func(_ context.Context, js []watch.Job) ([]watch.Postponed, error) {
		mu.Lock()
		*jobs = append(*jobs, js...)
		mu.Unlock()
		return nil, nil
	}
}

func TestClaimDueLeasesAndReschedules(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://due.example/", Interval: time.Minute,
		Options: watch.LinkOptions{SameSiteOnly: true, Ignore: []string{`\?page=`}}})
	params := watch.ClaimParams{Limit: 10, Lease: time.Hour}

	var jobs []watch.Job
	c, err := st.ClaimDue(ctx, params, collect(&jobs))
	if err != nil || c.Jobs != 1 || len(jobs) != 1 {
		t.Fatalf("ClaimDue = %+v, %v, jobs %v; want the one due page", c, err, jobs)
	}
	j := jobs[0]
	if j.ID != p.ID || j.BaseURL != p.BaseURL || j.Options == nil || !j.Options.SameSiteOnly || len(j.Options.Ignore) != 1 {
		t.Fatalf("job = %+v, want page %d with its options", j, p.ID)
	}
	// In flight: even when due again, no second job until the task returns.
	pool.Exec(ctx, `UPDATE pages SET next_check_at = now() WHERE id = $1`, p.ID)
	if c, _ := st.ClaimDue(ctx, params, collect(&jobs)); c.Jobs != 0 {
		t.Fatalf("a page with a job in flight was claimed again")
	}
	// The task returns: the lease is cleared and the page is due again.
	if _, err := st.RecordCheck(ctx, ok(p.ID, time.Now()), nil); err != nil {
		t.Fatal(err)
	}
	if c, _ := st.ClaimDue(ctx, params, collect(&jobs)); c.Jobs != 1 {
		t.Fatalf("after its task returned the page was not claimed")
	}
	got, _ := st.Page(ctx, p.ID)
	if d := time.Until(got.NextCheckAt); d < 55*time.Second || d > 65*time.Second {
		t.Fatalf("next check in %v, want about the 1m interval", d)
	}
}

func TestClaimDueExpiredLeaseIsClaimedAgain(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://lost.example/"})
	var jobs []watch.Job
	st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs))
	pool.Exec(ctx, `UPDATE pages SET next_check_at = now(), lease_until = now() - interval '1 second' WHERE id = $1`, p.ID)
	if c, _ := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); c.Jobs != 1 {
		t.Fatal("a page whose lease expired (its job was lost) was not claimed again")
	}
}

func TestClaimDueRollsBackWhenPublishFails(t *testing.T) {
	t.Parallel()
	st, _ := openStore(t)
	ctx := context.Background()
	st.CreatePage(ctx, watch.PageSpec{URL: "https://retry.example/"})
	_, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, func(context.Context, []watch.Job) ([]watch.Postponed, error) {
		return nil, errors.New("broker down")
	})
	if err == nil {
		t.Fatal("ClaimDue hid the publish failure")
	}
	var jobs []watch.Job
	if c, _ := st.ClaimDue(ctx, watch.ClaimParams{Limit: 10, Lease: time.Hour}, collect(&jobs)); c.Jobs != 1 {
		t.Fatal("after a failed publish the page was not due any more: its check would be lost")
	}
}

func TestConcurrentClaimsNeverShareAPage(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url) SELECT 'https://p' || g || '.example/' FROM generate_series(1, 300) g`); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		counts = map[int64]int{}
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for {
				c, err := st.ClaimDue(ctx, watch.ClaimParams{Limit: 25, Lease: time.Hour}, func(_ context.Context, js []watch.Job) ([]watch.Postponed, error) {
					time.Sleep(5 * time.Millisecond) // hold the rows like a real publish
					mu.Lock()
					for _, j := range js {
						counts[j.ID]++
					}
					mu.Unlock()
					return nil, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				if c.Jobs == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(counts) != 300 {
		t.Fatalf("claimed %d distinct pages, want 300", len(counts))
	}
	for id, c := range counts {
		if c != 1 {
			t.Fatalf("page %d claimed %d times, want once", id, c)
		}
	}
}

package processor_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Redis under maxmemory with the eviction policy `make up` sets
// (volatile-lru) drops seen-set keys while pages are being processed: that
// may only cost cache misses. Every new link must be in updates exactly
// once, and nothing else.
func TestEvictedSeenSetsLoseAndDoubleNothing(t *testing.T) {
	private := testsvc.StartRedis(t)
	opts, _ := redis.ParseURL(private.URL())
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	used, err := infoField(ctx, rdb, "memory", "used_memory")
	if err != nil {
		t.Fatal(err)
	}
	// Some room above an empty server's needs: the pages' sets and the
	// filler below cannot all fit.
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used+1<<20, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, private.URL())
	const pages, rounds, perRound = 6, 10, 150
	ids := []int64{f.page.ID}
	for i := 1; i < pages; i++ {
		p, err := f.st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://portal%d.example/", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	// Each page keeps 100 links and gains perRound new ones every round;
	// every task is delivered twice, as a redelivery would.
	want := map[string]bool{}
	var wg sync.WaitGroup
	start := time.Now()
	// Load beside the processor: data without a TTL, which volatile-lru never
	// evicts, grows past the cap while the pages are processed, so the only
	// keys Redis can evict are the seen-sets. Once nothing is left to evict,
	// writes fail with OOM: for the processor, cache errors.
	filler := strings.Repeat("x", 4096)
	for _, id := range ids {
		for r := 1; r < rounds; r++ {
			for i := range perRound {
				want[fmt.Sprintf("%d https://p%d.example/r%d/%d", id, id, r, i)] = true
			}
		}
		wg.Go(func() {
			for r := range rounds {
				for i := range 8 * min(r, 1) { // from the second round on, when the sets exist
					rdb.Set(ctx, fmt.Sprintf("filler:%d:%d:%d", id, r, i), filler, 0) // an OOM refusal is fine
				}
				task := watch.Task{BaseURL: "https://x/", ID: id, Status: 200, FetchedAt: start.Add(time.Duration(r) * time.Second)}
				for i := range 100 {
					task.Context = append(task.Context, watch.Link{URL: fmt.Sprintf("https://p%d.example/kept/%d", id, i), Text: "kept"})
				}
				for rr := max(r-2, 0); rr <= r; rr++ { // a new link stays on the page for three rounds
					for i := range perRound {
						task.Context = append(task.Context, watch.Link{URL: fmt.Sprintf("https://p%d.example/r%d/%d", id, rr, i), Text: "new"})
					}
				}
				body, err := watch.EncodeTask(task)
				if err != nil {
					t.Error(err)
					return
				}
				for range 2 {
					if err := f.svc.Handle(ctx, watch.Delivery{Body: body}); err != nil {
						t.Errorf("Handle page %d round %d: %v", id, r, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()

	evicted, err := infoField(ctx, rdb, "stats", "evicted_keys")
	if err != nil {
		t.Fatal(err)
	}
	if evicted == 0 {
		t.Fatal("Redis evicted nothing: the test did not exercise eviction")
	}
	ups := allUpdates(t, f.st)
	got := map[string]int{}
	for _, u := range ups {
		got[fmt.Sprintf("%d %s", u.PageID, u.URL)]++
	}
	var missing, extra, doubled int
	for k := range want {
		if got[k] == 0 {
			missing++
		}
	}
	for k, n := range got {
		if !want[k] {
			extra++
		}
		if n > 1 {
			doubled++
		}
	}
	t.Logf("Redis evicted %d keys; expected %d updates, recorded %d", evicted, len(want), len(ups))
	if missing != 0 || extra != 0 || doubled != 0 {
		t.Fatalf("after eviction: missing %d, extra %d, doubled %d (of %d)", missing, extra, doubled, len(want))
	}
}

func infoField(ctx context.Context, rdb *redis.Client, section, field string) (int64, error) {
	info, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return 0, fmt.Errorf("INFO %s: %w", section, err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO %s has no %s", section, field)
}

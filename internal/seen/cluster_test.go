package seen_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// On a Redis Cluster every command of a page stays in the page's slot, and
// losing a master costs the pages it held their cache (an error, read as
// "not seen") and nothing else: the other pages keep their hits.
func TestOnRedisClusterALostMasterCostsOnlyItsPages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	cluster := testsvc.StartRedisCluster(t, 3)
	s, err := seen.Open(cluster.URL(), seen.Config{Prefix: "pwtest", Epoch: "e", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	codes := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	const pages = 30
	for page := int64(1); page <= pages; page++ {
		if err := s.Add(ctx, page, codes); err != nil {
			t.Fatalf("add page %d: %v", page, err)
		}
	}
	// Forget deletes a page's sets in one DEL: legal only within one slot.
	if err := s.Forget(ctx, pages); err != nil {
		t.Fatalf("forget page %d on a cluster: %v", pages, err)
	}
	if got, err := s.Seen(ctx, pages, codes); err != nil || got[0] {
		t.Fatalf("page %d after Forget: seen %v, %v; want nothing seen", pages, got, err)
	}

	victim := cluster.Nodes[0]
	onVictim := map[int64]bool{}
	direct := redis.NewClient(&redis.Options{Addr: victim.Addr()})
	for page := int64(1); page < pages; page++ {
		n, err := direct.Eval(ctx, `return #redis.call('KEYS', ARGV[1])`, nil, "pwtest:seen2:e:{"+itoa(page)+"}:*").Int()
		if err != nil {
			t.Fatal(err)
		}
		onVictim[page] = n > 0
	}
	direct.Close()
	held := 0
	for _, on := range onVictim {
		if on {
			held++
		}
	}
	if held == 0 || held == len(onVictim) {
		t.Fatalf("the first master holds %d of %d pages: the test proves nothing", held, len(onVictim))
	}
	victim.Kill()
	if err := cluster.WaitSlotsFailed(cluster.Nodes[1], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	hits, misses := 0, 0
	for page := int64(1); page < pages; page++ {
		got, err := s.Seen(ctx, page, codes)
		switch {
		case onVictim[page] && err == nil:
			t.Errorf("page %d lives on the lost master, yet Seen answered %v", page, got)
		case onVictim[page]:
			misses++
		case err != nil:
			t.Errorf("page %d lives on a live master: %v", page, err)
		default:
			hits++
			for i, hit := range got {
				if !hit {
					t.Errorf("page %d lost code %d with another master", page, codes[i])
				}
			}
		}
	}
	if hits == 0 || misses == 0 {
		t.Errorf("%d pages answered and %d missed: want some of each", hits, misses)
	}
	t.Logf("with one of 3 masters lost: %d pages kept their cache, %d missed", hits, misses)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Through Sentinel the set follows the primary: after a failover it reads
// and writes the promoted replica, and meanwhile it only misses.
func TestThroughSentinelTheSetFollowsAFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private Redis servers and a Sentinel")
	}
	rs := testsvc.StartRedisSentinel(t)
	s, err := seen.Open(rs.URL(), seen.Config{Prefix: "pwtest", Epoch: "e", Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	old, fresh := []uint64{1, 2, 3}, []uint64{4, 5, 6}
	if err := s.Add(ctx, 1, old); err != nil {
		t.Fatalf("add through the Sentinel: %v", err)
	}
	if got, err := s.Seen(ctx, 1, old); err != nil || !got[0] || !got[1] || !got[2] {
		t.Fatalf("seen through the Sentinel: %v, %v", got, err)
	}

	rs.Primary.Kill()
	if err := rs.WaitPrimary(rs.Replica, 30*time.Second); err != nil {
		t.Fatalf("no failover: %v", err)
	}
	// The client finds the new primary on its own; until then a call fails
	// (a miss) and never claims a code it was not given.
	err = testsvc.Poll(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, string, error) {
		if got, err := s.Seen(ctx, 1, fresh); err == nil && (got[0] || got[1] || got[2]) {
			return false, "", fmt.Errorf("codes never added read as seen: %v", got)
		}
		err := s.Add(ctx, 2, fresh)
		return err == nil, fmt.Sprint(err), nil
	})
	if err != nil {
		t.Fatalf("after the failover: %v", err)
	}
	if got, err := s.Seen(ctx, 2, fresh); err != nil || !got[0] || !got[1] || !got[2] {
		t.Errorf("seen on the promoted replica: %v, %v", got, err)
	}
}

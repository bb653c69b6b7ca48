//go:build chaos

package chaos

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// Redis Cluster run: redisClusterPages pages through redisClusterRounds
// rounds; one master is killed once every page has reached round
// redisKillRound, and started again, empty, once every page has gone
// redisLostRounds rounds further after the other masters marked it failed.
const (
	redisClusterPages  = 30
	redisClusterRounds = 12
	redisKillRound     = 3
	redisLostRounds    = 2
	redisClusterBudget = 3 * time.Minute
)

// TestRedisClusterLosesAMaster runs the real pipeline with REDIS_URL naming
// a private 3-master Redis Cluster, kills one master with SIGKILL mid-run
// (its slots stay uncovered: every seen-set and host-gate command to them
// fails) and later starts it again without its data. A lost master may cost
// cache misses and the crawlers' per-process politeness, never a check: the
// updates must match the farm's truth exactly.
func TestRedisClusterLosesAMaster(t *testing.T) {
	w := newWorld(t, servers{redisMasters: 3}, "PORTALWATCH_CRAWLER_CONCURRENCY=8", "PORTALWATCH_PROCESSOR_CONCURRENCY=4")
	cluster := w.redises

	farm := systest.NewFarm(t, redisClusterPages)
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{
		"scheduler-1": "scheduler",
		"crawler-1":   "crawler", "crawler-2": "crawler",
		"processor-1": "processor", "processor-2": "processor",
	}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), redisClusterBudget)
	defer cancel()
	victim := cluster.Nodes[0]
	var faults sync.WaitGroup
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	faults.Go(func() {
		if err := waitAllPagesAt(faultCtx, farm, redisKillRound); err != nil {
			t.Errorf("before the kill: %v", err)
			return
		}
		victim.Kill()
		w.log.add("redis master kill", "%s killed with SIGKILL", victim.Addr())
		if err := cluster.WaitSlotsFailed(cluster.Nodes[1], 30*time.Second); err != nil {
			t.Errorf("after the kill: %v", err)
			return
		}
		w.log.add("redis slots fail", "the other masters mark %s failed", victim.Addr())
		if err := waitAllPagesAt(faultCtx, farm, lowestRound(farm)+redisLostRounds); err != nil {
			t.Errorf("with a master lost: %v", err)
			return
		}
		victim.Start()
		w.log.add("redis master back", "%s started again without its data", victim.Addr())
		if err := cluster.WaitState("ok", cluster.Nodes, 30*time.Second); err != nil {
			t.Errorf("after the restart: %v", err)
		}
	})

	err = farm.Drive(ctx, w.sys, ids, redisClusterRounds, time.Second, 60*time.Second, t.Logf)
	stopFaults()
	faults.Wait()
	if err != nil {
		t.Fatalf("driving the farm: %v", err)
	}
	w.fleet.shutdown()
	v, err := farm.Check(ctx, w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.report(v, farm)
	if len(w.log.events) != 3 {
		t.Fatalf("%d faults happened, want the kill, the failed slots and the restart", len(w.log.events))
	}
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 || v.Expected != redisClusterPages*redisClusterRounds*3 {
		t.Fatalf("updates differ from the truth: %s", v)
	}
	if n := farm.TimedOutRounds(); n != 0 {
		t.Errorf("%d rounds were never checked within the deadline", n)
	}
	// The pipeline did use the cluster: the live masters hold seen-sets.
	for _, node := range cluster.Nodes[1:] {
		rdb := redis.NewClient(&redis.Options{Addr: node.Addr()})
		n, err := rdb.Eval(ctx, `return #redis.call('KEYS', ARGV[1])`, nil, w.sys.Prefix+":seen2:*").Int()
		rdb.Close()
		if err != nil {
			t.Fatalf("count seen-sets on %s: %v", node.Addr(), err)
		}
		t.Logf("master %s holds %d seen-sets", node.Addr(), n)
		if n == 0 {
			t.Errorf("master %s holds no seen-set: the processors did not cache on the cluster", node.Addr())
		}
	}
}

// lowestRound is the round of the page furthest behind.
func lowestRound(farm *systest.Farm) int {
	lowest, _ := farm.Round(0)
	for i := range farm.Len() {
		r, _ := farm.Round(i)
		lowest = min(lowest, r)
	}
	return lowest
}

// waitAllPagesAt waits until every page of farm has reached round, or ctx
// ends.
func waitAllPagesAt(ctx context.Context, farm *systest.Farm, round int) error {
	return testsvc.Poll(ctx, redisClusterBudget, 100*time.Millisecond, func() (bool, string, error) {
		behind := 0
		for i := range farm.Len() {
			if r, _ := farm.Round(i); r < round {
				behind++
			}
		}
		return behind == 0, strconv.Itoa(behind) + " pages before round " + strconv.Itoa(round), nil
	})
}

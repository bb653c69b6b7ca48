package hostgate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// On a Redis Cluster the gates share their bookings as on one server (each
// origin's keys in one slot, so each script runs on one node); with a master
// lost, every call still answers within its timeout, from the per-process
// rules.
func TestOnRedisClusterGatesShareAndSurviveALostMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	cluster := testsvc.StartRedisCluster(t, 3)
	cfg := hostgate.Config{Prefix: "pwtest", MaxInFlight: 1, Timeout: 250 * time.Millisecond}
	var gs [2]*hostgate.Gate
	for i := range gs {
		g, err := hostgate.Open(cluster.URL(), cfg, testsvc.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		gs[i] = g
	}
	ctx := context.Background()
	const spacing = time.Minute
	origins := make([]string, 12) // spread over the three masters' slots
	for i := range origins {
		origins[i] = fmt.Sprintf("https://portal%d.example", i)
		if wait, booked := gs[0].Reserve(ctx, origins[i], spacing, -1, time.Hour); !booked || wait != 0 {
			t.Fatalf("%s, first booking: wait %s, booked %v", origins[i], wait, booked)
		}
		// The other gate sees the first one's booking through the cluster.
		if wait, _ := gs[1].Reserve(ctx, origins[i], spacing, -1, time.Hour); wait < spacing-time.Second {
			t.Errorf("%s, second gate: wait %s, want about %s: the booking was not shared", origins[i], wait, spacing)
		}
		leave, ok := gs[0].Enter(ctx, origins[i], time.Minute)
		if !ok {
			t.Fatalf("%s: first Enter refused", origins[i])
		}
		if _, ok := gs[1].Enter(ctx, origins[i], time.Minute); ok {
			t.Errorf("%s: a second check admitted past MaxInFlight 1 across gates", origins[i])
		}
		leave()
	}

	cluster.Nodes[0].Kill()
	if err := cluster.WaitSlotsFailed(cluster.Nodes[1], 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, o := range origins {
		start := time.Now()
		gs[0].Reserve(ctx, o, spacing, -1, time.Hour)
		leave, ok := gs[0].Enter(ctx, "https://fresh."+o[len("https://"):], time.Minute)
		if !ok {
			t.Errorf("%s: a fresh origin refused with a master lost", o)
		}
		leave()
		if d := time.Since(start); d > 2*cfg.Timeout+200*time.Millisecond {
			t.Errorf("%s: Reserve and Enter took %s with a master lost, want at most about two timeouts (%s)", o, d, 2*cfg.Timeout)
		}
	}
}

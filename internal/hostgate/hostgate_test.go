package hostgate_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

const origin = "https://portal.example"

// gates returns n gates sharing one Redis and one prefix, as n crawler
// processes would, and that prefix.
func gates(t *testing.T, n int, cfg hostgate.Config) ([]*hostgate.Gate, string) {
	t.Helper()
	url, prefix := testsvc.Redis(t)
	cfg.Prefix = prefix
	var gs []*hostgate.Gate
	for range n {
		g, err := hostgate.Open(url, cfg, testsvc.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		gs = append(gs, g)
	}
	return gs, prefix
}

// Two crawlers booking slots of one origin in turn get one slot per spacing
// between them, not one each: per process, both would start at once.
func TestSpacingHoldsAcrossGates(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{})
	const spacing = time.Second
	ctx := context.Background()
	for i := range 6 {
		wait, booked := gs[i%2].Reserve(ctx, origin, spacing, -1, time.Hour)
		want := time.Duration(i) * spacing
		if !booked || wait > want || wait < want-200*time.Millisecond {
			t.Errorf("booking %d (gate %d): wait %s, booked %v; want about %s", i, i%2, wait, booked, want)
		}
	}
	// Another origin has its own slots.
	if wait, booked := gs[1].Reserve(ctx, "https://other.example", spacing, -1, time.Hour); !booked || wait != 0 {
		t.Errorf("other origin: wait %s, booked %v; want 0, true", wait, booked)
	}
}

// A slot too far away is not booked: the caller defers, and the slot stays
// free for whoever comes back first.
func TestReserveTooFarBooksNothing(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{})
	ctx := context.Background()
	if _, booked := gs[0].Reserve(ctx, origin, 10*time.Second, -1, time.Second); !booked {
		t.Fatal("the first slot was not booked")
	}
	for i := range 3 {
		wait, booked := gs[i%2].Reserve(ctx, origin, 10*time.Second, -1, time.Second)
		if booked || wait < 9*time.Second || wait > 10*time.Second {
			t.Errorf("try %d: wait %s, booked %v; want about 10s, not booked", i, wait, booked)
		}
	}
}

// At most MaxInFlight checks of an origin are admitted across all gates;
// leaving frees a place for any of them.
func TestInFlightCapHoldsAcrossGates(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{MaxInFlight: 2})
	ctx := context.Background()
	leave0, ok0 := gs[0].Enter(ctx, origin, time.Minute)
	_, ok1 := gs[1].Enter(ctx, origin, time.Minute)
	if !ok0 || !ok1 {
		t.Fatalf("first two admissions = %v, %v; want both", ok0, ok1)
	}
	for i, g := range gs {
		if _, ok := g.Enter(ctx, origin, time.Minute); ok {
			t.Errorf("gate %d admitted a third check of the origin", i)
		}
	}
	if _, ok := gs[0].Enter(ctx, "https://other.example", time.Minute); !ok {
		t.Error("another origin was refused")
	}
	leave0()
	if _, ok := gs[1].Enter(ctx, origin, time.Minute); !ok {
		t.Error("after one check left, the other gate was refused")
	}
}

// Every key the gate writes is under its prefix and expires: the slot key
// when its slot has passed, the in-flight key one lease after its last entry.
func TestKeysExpire(t *testing.T) {
	gs, prefix := gates(t, 1, hostgate.Config{MaxInFlight: 3})
	ctx := context.Background()
	gs[0].Reserve(ctx, origin, 2*time.Second, -1, time.Hour)
	gs[0].Enter(ctx, origin, 30*time.Second)

	opts, _ := redis.ParseURL(testsvc.RedisURL())
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	keys, err := rdb.Keys(ctx, prefix+":*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys under %s = %v, %v; want the slot and the in-flight key", prefix, keys, err)
	}
	for _, k := range keys {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > 30*time.Second {
			t.Errorf("%s: PTTL %s, %v; want a TTL of at most 30s", k, ttl, err)
		}
	}
}

// With Redis unreachable the gate answers at once from the per-process
// rules: spacing and the cap still hold within the process.
func TestFallbackWithoutRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "redis://" + l.Addr().String() + "/0"
	l.Close()
	g, err := hostgate.Open(closed, hostgate.Config{Prefix: "pwtest:closed", MaxInFlight: 1}, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()

	start := time.Now()
	for i := range 3 {
		wait, booked := g.Reserve(ctx, origin, time.Second, -1, time.Hour)
		if want := time.Duration(i) * time.Second; !booked || wait > want || wait < want-200*time.Millisecond {
			t.Errorf("booking %d: wait %s, booked %v; want about %s", i, wait, booked, want)
		}
	}
	leave, ok := g.Enter(ctx, origin, time.Minute)
	if !ok {
		t.Fatal("the first check was refused")
	}
	if _, ok := g.Enter(ctx, origin, time.Minute); ok {
		t.Error("a second check was admitted past the cap of 1")
	}
	leave()
	if _, ok := g.Enter(ctx, origin, time.Minute); !ok {
		t.Error("after leaving, a check was refused")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("answering without Redis took %s; want well under a second", d)
	}
}

func TestOpenRefusesAnInvalidConfig(t *testing.T) {
	_, err := hostgate.Open("redis://127.0.0.1:6379/0", hostgate.Config{Prefix: "", MaxInFlight: -2}, slog.Default())
	if err == nil {
		t.Fatal("Open accepted an empty prefix and a negative in-flight cap")
	}
	for _, field := range []string{"Prefix", "MaxInFlight"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	// 0 in-flight means no cap, and stays 0.
	if c := (hostgate.Config{}).WithDefaults(); c.MaxInFlight != 0 || c.Timeout != hostgate.DefaultTimeout ||
		c.Cooldown != hostgate.DefaultCooldown || c.LocalSize != hostgate.DefaultLocalSize {
		t.Errorf("WithDefaults = %+v", c)
	}
}

// The scheduler books an origin's slots a spacing apart as far as the
// horizon, and a crawler without a slot gets the first one after them.
func TestBookFillsTheHorizon(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{})
	ctx := context.Background()
	start := time.Now()
	b := gs[0].Book(ctx, hostgate.Homepage, time.Second, 2*time.Second,
		[]hostgate.Request{{Origin: origin, N: 5}, {Origin: "https://other.example", N: 1}})
	if len(b) != 2 {
		t.Fatalf("Book = %+v; want one booking per request", b)
	}
	if len(b[0].Slots) != 3 || b[0].Spacing != time.Second || b[0].Next.Sub(b[0].Slots[0]) != 3*time.Second {
		t.Fatalf("busy origin: %+v; want 3 slots and the next 3s after the first", b[0])
	}
	for i, s := range b[0].Slots {
		// Redis's clock books: allow it some skew from this process's.
		if d := s.Sub(start) - time.Duration(i)*time.Second; d < -200*time.Millisecond || d > 200*time.Millisecond {
			t.Errorf("slot %d is %s from now, want about %ds", i, s.Sub(start), i)
		}
		if i > 0 && s.Sub(b[0].Slots[i-1]) != time.Second {
			t.Errorf("slots %d and %d are %s apart, want exactly 1s", i-1, i, s.Sub(b[0].Slots[i-1]))
		}
	}
	if len(b[1].Slots) != 1 || b[1].Slots[0].Sub(start) > 200*time.Millisecond {
		t.Errorf("other origin: %+v; want one slot now", b[1])
	}
	if wait, booked := gs[1].Reserve(ctx, origin, time.Second, -1, time.Minute); !booked || wait < 2800*time.Millisecond {
		t.Errorf("a crawler's own booking after the scheduler's: wait %s, booked %v; want the slot 3s away", wait, booked)
	}
}

// A Crawl-delay a crawler read spaces the scheduler's bookings until a
// robots.txt without one clears it.
func TestCrawlDelayJoinsTheBudget(t *testing.T) {
	gs, _ := gates(t, 1, hostgate.Config{})
	ctx := context.Background()
	gs[0].Reserve(ctx, origin, 5*time.Second, 5*time.Second, time.Minute)
	b := gs[0].Book(ctx, hostgate.Homepage, time.Second, time.Minute, []hostgate.Request{{Origin: origin, N: 2}})
	if b[0].Spacing != 5*time.Second || len(b[0].Slots) != 2 || b[0].Slots[1].Sub(b[0].Slots[0]) != 5*time.Second {
		t.Fatalf("after a 5s Crawl-delay: %+v; want slots 5s apart", b[0])
	}
	gs[0].Reserve(ctx, origin, time.Second, 0, time.Minute) // robots.txt lost its Crawl-delay
	b = gs[0].Book(ctx, hostgate.Homepage, time.Second, time.Minute, []hostgate.Request{{Origin: origin, N: 2}})
	if b[0].Spacing != time.Second || len(b[0].Slots) != 2 || b[0].Slots[1].Sub(b[0].Slots[0]) != time.Second {
		t.Errorf("after the Crawl-delay went: %+v; want slots 1s apart", b[0])
	}
}

// A fetch that takes its slot late pushes the next fetch back: fetches
// start a spacing apart, whatever the plan said.
func TestTakeKeepsTheSpacingBetweenStarts(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{})
	ctx := context.Background()
	if wait := gs[0].Take(ctx, origin, time.Second); wait != 0 {
		t.Fatalf("first fetch waits %s, want 0", wait)
	}
	time.Sleep(300 * time.Millisecond)
	if wait := gs[1].Take(ctx, origin, time.Second); wait < 600*time.Millisecond || wait > 700*time.Millisecond {
		t.Errorf("a fetch 300ms after the last waits %s, want about 700ms", wait)
	}
	if wait := gs[0].Take(ctx, "https://other.example", time.Second); wait != 0 {
		t.Errorf("another origin waits %s, want 0", wait)
	}
}

// A class below Homepage books only a slot free now and leaves one
// in-flight place to the pages' checks.
func TestLowerClassYields(t *testing.T) {
	gs, _ := gates(t, 1, hostgate.Config{MaxInFlight: 2})
	g, ctx := gs[0], context.Background()
	const article hostgate.Class = 1
	if b := g.Book(ctx, article, time.Second, time.Minute, []hostgate.Request{{Origin: origin, N: 2}}); len(b[0].Slots) != 1 {
		t.Fatalf("a free origin: %+v; want only the slot free now", b[0])
	}
	if b := g.Book(ctx, article, time.Second, time.Minute, []hostgate.Request{{Origin: origin, N: 1}}); len(b[0].Slots) != 0 {
		t.Errorf("a lower class booked %+v ahead; want nothing until a slot is free now", b[0])
	}
	leave, ok := g.EnterAs(ctx, article, origin, time.Minute)
	if !ok {
		t.Fatal("the first lower-class fetch was not admitted")
	}
	defer leave()
	if _, ok := g.EnterAs(ctx, article, origin, time.Minute); ok {
		t.Error("a second lower-class fetch took the place kept for the pages' checks")
	}
	leaveCheck, ok := g.Enter(ctx, origin, time.Minute)
	if !ok {
		t.Fatal("a page's check found no place beside one lower-class fetch")
	}
	leaveCheck()
}

// The daily cap of a class holds across gates, a count taken back frees a
// place, and another class of the same origin counts on its own.
func TestCountDailyCapsAcrossGates(t *testing.T) {
	gs, _ := gates(t, 2, hostgate.Config{})
	ctx := context.Background()
	const article = hostgate.Homepage + 1
	var undo func()
	for i := range 2 {
		u, ok := gs[i].CountDaily(ctx, article, origin, 2)
		if !ok {
			t.Fatalf("fetch %d refused within the cap", i+1)
		}
		undo = u
	}
	if _, ok := gs[0].CountDaily(ctx, article, origin, 2); ok {
		t.Fatal("a third fetch was allowed past a cap of 2")
	}
	if _, ok := gs[0].CountDaily(ctx, hostgate.Homepage, origin, 2); !ok {
		t.Fatal("another class was refused by the article cap")
	}
	undo()
	if _, ok := gs[1].CountDaily(ctx, article, origin, 2); !ok {
		t.Fatal("a count taken back did not free its place")
	}
	if _, ok := gs[1].CountDaily(ctx, article, origin, 0); !ok {
		t.Fatal("a cap of 0 (none) refused a fetch")
	}
}

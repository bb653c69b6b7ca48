package fetch

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A slot further away than MaxPoliteWait is not slept for: the fetch is
// deferred to it, sends nothing and books nothing, so the origin's next
// fetch that fits still gets the slot.
func TestPaceDefersLongWaits(t *testing.T) {
	site, base := newRobotsSite(t, 200, "User-agent: *\nCrawl-delay: 20\n")
	c, clock := newRobotsClient(t, Config{MaxPoliteWait: 5 * time.Second})
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	_, err := c.Fetch(context.Background(), Request{URL: base + "/"})
	wantKind(t, err, KindDeferred)
	var fe *Error
	errors.As(err, &fe)
	if want := start.Add(20 * time.Second); !fe.RetryAt.Equal(want) {
		t.Errorf("RetryAt = %v, want the next slot %v", fe.RetryAt, want)
	}
	if got := site.pageHits.Load(); got != 1 {
		t.Errorf("page fetched %d times, want 1: a deferred fetch sends nothing", got)
	}
	if got := clock.Slept(); fmt.Sprint(got) != "[0s]" {
		t.Errorf("slept %v, want only the first fetch's zero wait", got)
	}
	// 16s later the slot is 4s away: waited for, not deferred.
	clock.Advance(16 * time.Second)
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
		t.Fatal(err)
	}
	if got := clock.Slept(); fmt.Sprint(got) != "[0s 4s]" {
		t.Errorf("slept %v, want [0s 4s]", got)
	}
}

// MinHostSpacing spaces fetches of an origin without a Crawl-delay, and
// even when robots.txt is ignored.
func TestPaceMinHostSpacing(t *testing.T) {
	_, base := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	c, clock := newRobotsClient(t, Config{MinHostSpacing: time.Second, IgnoreRobots: true})
	for range 3 {
		if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
			t.Fatal(err)
		}
	}
	if got := clock.Slept(); fmt.Sprint(got) != "[0s 1s 1s]" {
		t.Errorf("slept %v, want [0s 1s 1s]", got)
	}
}

// A slot the scheduler booked for the request is waited for instead of
// one booked here, so the origin's bookings are not doubled; a stale slot,
// or one spaced less than the Crawl-delay asks, is booked again.
func TestPaceTakesABookedSlot(t *testing.T) {
	_, base := newRobotsSite(t, 200, "User-agent: *\nCrawl-delay: 2\n")
	c, clock := newRobotsClient(t, Config{MinHostSpacing: time.Second})
	booked := func(in, spacing time.Duration) *watch.Slot {
		return &watch.Slot{At: clock.Now().Add(in), Spacing: spacing}
	}
	// Two fetches on slots spaced by the Crawl-delay: each sleeps until its
	// slot, and the pacer books nothing.
	for _, in := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
		if _, err := c.Fetch(context.Background(), Request{URL: base + "/", Slot: booked(in, 2*time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := clock.Slept(); fmt.Sprint(got) != "[300ms 2s]" {
		t.Fatalf("slept %v, want [300ms 2s]: the booked slots, nothing else", got)
	}
	// A slot spaced 1 s on an origin asking 2 s is booked again: the
	// pacer has no booking yet, so it books now.
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/", Slot: booked(0, time.Second)}); err != nil {
		t.Fatal(err)
	}
	// The same for a slot that passed more than its spacing ago: the pacer
	// books the next after its own last booking, 2 s later.
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/", Slot: booked(-5*time.Second, 2*time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := clock.Slept(); fmt.Sprint(got) != "[300ms 2s 0s 2s]" {
		t.Errorf("slept %v, want [300ms 2s 0s 2s]", got)
	}
}

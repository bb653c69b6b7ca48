package fetch

import (
	"context"
	"fmt"
	"time"

	"github.com/portalwatch/portalwatch/internal/pacing"
)

// Pacer books fetch slots per origin so that fetches of one origin are
// spaced, by every process that shares it. Fetch asks it before every
// request; New uses a per-process pacer when Config.Pacer is nil.
type Pacer interface {
	// Reserve books origin's next fetch slot, spacing after the slot booked
	// before it, and returns how long from now that slot is. When the slot
	// is more than maxWait away it books nothing and returns the wait with
	// booked false, so the caller can come back then instead of holding a
	// worker. crawlDelay is the origin's Crawl-delay as just read from its
	// robots.txt (0: none; negative: robots.txt not read), which spacing
	// includes; a pacer shared with the scheduler remembers it for the
	// slots it books. It must not fail: a pacer whose shared state is
	// unreachable falls back to a rule of its own.
	Reserve(ctx context.Context, origin string, spacing, crawlDelay, maxWait time.Duration) (wait time.Duration, booked bool)
	// Take marks a fetch of origin as starting, at its slot, and returns
	// how long it must still wait to start spacing after the one that
	// started last: a slot is booked ahead, and the fetch before it may
	// have started late. It must not fail either.
	Take(ctx context.Context, origin string, spacing time.Duration) time.Duration
}

// localPacer is the per-process Pacer (package pacing), bounded by
// Config.RobotsCacheSize origins.
type localPacer struct{ slots *pacing.Slots }

func (p localPacer) Reserve(_ context.Context, origin string, spacing, _, maxWait time.Duration) (time.Duration, bool) {
	return p.slots.Reserve(origin, spacing, maxWait)
}

// Take is nothing per process: Reserve books each slot right before its
// fetch, which sleeps until it in the same call.
func (localPacer) Take(context.Context, string, time.Duration) time.Duration { return 0 }

// pace waits for origin's next fetch slot, the larger of crawlDelay
// (negative: robots.txt not read) and Config.MinHostSpacing after the
// previous one. A slot booked for the request already (req.Slot) is waited
// for instead, unless it is stale or the Crawl-delay asks for more than it
// kept. A slot further away than Config.MaxPoliteWait is not waited for:
// pace returns a KindDeferred *Error whose RetryAt is that slot. The wait
// ends with ctx.
func (c *Client) pace(ctx context.Context, req Request, origin string, crawlDelay time.Duration) error {
	spacing := max(crawlDelay, c.cfg.MinHostSpacing)
	if spacing <= 0 {
		return nil
	}
	var wait time.Duration
	if s := req.Slot; s != nil && !s.Stale(c.now()) && crawlDelay <= s.Spacing {
		wait = max(s.At.Sub(c.now()), 0)
		if wait > c.cfg.MaxPoliteWait {
			return c.deferred(req.URL, origin, spacing, wait)
		}
	} else {
		var booked bool
		if wait, booked = c.pacer.Reserve(ctx, origin, spacing, crawlDelay, c.cfg.MaxPoliteWait); !booked {
			return c.deferred(req.URL, origin, spacing, wait)
		}
	}
	if err := c.sleep(ctx, wait); err != nil {
		return c.waitError(ctx, req.URL, fmt.Errorf("waiting %s between fetches of %s: %w", spacing, origin, err))
	}
	if late := c.pacer.Take(ctx, origin, spacing); late > 0 {
		if err := c.sleep(ctx, late); err != nil {
			return c.waitError(ctx, req.URL, fmt.Errorf("waiting %s after the last fetch of %s: %w", spacing, origin, err))
		}
	}
	return nil
}

func (c *Client) deferred(raw, origin string, spacing, wait time.Duration) error {
	return &Error{Kind: KindDeferred, URL: raw, RetryAt: c.now().Add(wait),
		Err: fmt.Errorf("deferred: %s asks for %s between fetches and its next slot is %s away, more than the %s a worker waits",
			origin, spacing, wait.Round(time.Millisecond), c.cfg.MaxPoliteWait)}
}

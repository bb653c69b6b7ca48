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
	// worker. It must not fail: a pacer whose shared state is unreachable
	// falls back to a rule of its own.
	Reserve(ctx context.Context, origin string, spacing, maxWait time.Duration) (wait time.Duration, booked bool)
}

// localPacer is the per-process Pacer (package pacing), bounded by
// Config.RobotsCacheSize origins.
type localPacer struct{ slots *pacing.Slots }

func (p localPacer) Reserve(_ context.Context, origin string, spacing, maxWait time.Duration) (time.Duration, bool) {
	return p.slots.Reserve(origin, spacing, maxWait)
}

// pace waits for origin's next fetch slot, spacing after the previous one.
// A slot further away than Config.MaxPoliteWait is not waited for: pace
// returns a KindDeferred *Error whose RetryAt is that slot. The wait ends
// with ctx.
func (c *Client) pace(ctx context.Context, raw, origin string, spacing time.Duration) error {
	if spacing <= 0 {
		return nil
	}
	wait, booked := c.pacer.Reserve(ctx, origin, spacing, c.cfg.MaxPoliteWait)
	if !booked {
		return &Error{Kind: KindDeferred, URL: raw, RetryAt: c.now().Add(wait),
			Err: fmt.Errorf("deferred: %s asks for %s between fetches and its next slot is %s away, more than the %s a worker waits",
				origin, spacing, wait.Round(time.Millisecond), c.cfg.MaxPoliteWait)}
	}
	if err := c.sleep(ctx, wait); err != nil {
		return c.waitError(ctx, raw, fmt.Errorf("waiting %s between fetches of %s: %w", spacing, origin, err))
	}
	return nil
}

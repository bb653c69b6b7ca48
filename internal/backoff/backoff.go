// Package backoff spaces out retries of an operation that depends on a peer
// that is down: exponential growth, a cap, and full jitter so that processes
// restarted together do not hammer the peer in step.
package backoff

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Policy says how long to wait before each retry. The zero Policy waits
// between 100ms and 10s.
type Policy struct {
	Min time.Duration // the first delay's upper bound; default 100ms
	Max time.Duration // no delay exceeds it; default 10s
}

// Delay returns the wait before retry number attempt (0 for the first retry):
// a random duration in [d/2, d] where d = Min·2^attempt capped at Max. Half
// the delay is kept so that a retry never comes right away.
func (p Policy) Delay(attempt int) time.Duration {
	lo, hi := p.Min, p.Max
	if lo <= 0 {
		lo = 100 * time.Millisecond
	}
	if hi <= 0 {
		hi = 10 * time.Second
	}
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}

// Sleep waits for retry number attempt's delay or until ctx ends, whichever
// comes first; it returns ctx's error in the second case.
func (p Policy) Sleep(ctx context.Context, attempt int) error {
	t := time.NewTimer(p.Delay(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Default is how the programs wait for a dependency that is down: from
// 200ms doubling up to 10s.
var Default = Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second}

// Retry calls f until it succeeds or ctx ends, logging each failure and
// waiting by p in between, so a process rides out a dependency that drops
// away between two steps of its start-up. It returns ctx's error when ctx
// ends first.
func Retry[T any](ctx context.Context, p Policy, log *slog.Logger, what string, f func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil {
			return v, nil
		}
		log.Warn("retrying: could not "+what, "attempt", attempt+1, "err", err)
		if err := p.Sleep(ctx, attempt); err != nil {
			var zero T
			return zero, err
		}
	}
}

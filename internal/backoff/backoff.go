// Package backoff spaces out retries of an operation that depends on a peer
// that is down: exponential growth, a cap, and full jitter so that processes
// restarted together do not hammer the peer in step.
package backoff

import (
	"context"
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

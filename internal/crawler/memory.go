package crawler

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"

	"github.com/portalwatch/portalwatch/internal/domwalk"
)

// DefaultParseMemory is the default of Config.ParseMemory: with the default
// tree budget (domwalk.DefaultMaxTreeBytes, 32 MiB) and body cap (10 MiB) it
// holds one page of the worst kind and a few real ones, and keeps the
// crawler under 200 MB at its default concurrency.
const DefaultParseMemory = 64 << 20

// parseGate bounds the memory of the pages a crawler holds after fetching
// them: bodies waiting for a parse slot and pages being parsed are counted
// in bytes (the body plus the estimated tree), and the parses running at once
// in pages, since more parses than cores gain nothing.
type parseGate struct {
	memory *semaphore.Weighted
	budget int64
	slots  chan struct{}
}

func newParseGate(budget int64, concurrency int) *parseGate {
	return &parseGate{memory: semaphore.NewWeighted(budget), budget: budget, slots: make(chan struct{}, concurrency)}
}

// enter waits until src can be held and parsed within the budget, then for a
// parse slot, and returns the function that gives both back. A page whose
// cost alone exceeds the budget waits until it holds the whole budget, so it
// is parsed alone. The error is ctx's, wrapped.
func (g *parseGate) enter(ctx context.Context, src []byte, lim domwalk.Limits) (func(), error) {
	return g.enterCost(ctx, int64(len(src))+domwalk.ParseCost(src, lim))
}

// enterCost is enter for a parse whose cost, in bytes, the caller knows
// (a feed's or sitemap's, see sourceparse.Cost).
func (g *parseGate) enterCost(ctx context.Context, cost int64) (func(), error) {
	cost = min(cost, g.budget)
	// The body is counted before it waits for a slot: the bodies waiting,
	// not only those being parsed, are what a burst of large pages piles up.
	if err := g.memory.Acquire(ctx, cost); err != nil {
		return nil, fmt.Errorf("waiting for %d bytes of parse memory: %w", cost, err)
	}
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		g.memory.Release(cost)
		return nil, fmt.Errorf("waiting for a parse slot: %w", ctx.Err())
	}
	return func() {
		<-g.slots
		g.memory.Release(cost)
	}, nil
}

// hold waits until cost bytes can be held within the budget, without a
// parse slot, and returns the function that gives them back: for a read
// that parses as its body arrives (a streamed sitemap), which would hold
// a slot for as long as the network takes. The error is ctx's, wrapped.
func (g *parseGate) hold(ctx context.Context, cost int64) (func(), error) {
	cost = min(cost, g.budget)
	if err := g.memory.Acquire(ctx, cost); err != nil {
		return nil, fmt.Errorf("waiting for %d bytes of parse memory: %w", cost, err)
	}
	return func() { g.memory.Release(cost) }, nil
}

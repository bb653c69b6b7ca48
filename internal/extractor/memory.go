package extractor

import (
	"context"
	"fmt"

	"golang.org/x/sync/semaphore"
)

// DefaultMemory is Config.Memory's default: with the program's Go soft
// limit of 150 MiB it keeps an extractor under 200 MB on any input.
const DefaultMemory = 96 << 20

// memoryGate bounds the heap the extractions in flight may take together:
// one page's extraction can take up to ~50 MiB (docs/article.md,
// TestHostilePages), so a worker count alone does not bound memory.
type memoryGate struct {
	sem    *semaphore.Weighted
	budget int64
}

func newMemoryGate(budget int64) *memoryGate {
	return &memoryGate{sem: semaphore.NewWeighted(budget), budget: budget}
}

// extractionCost estimates the peak heap of extracting a page of n bytes:
// its tree at about ten bytes a byte of page, and a floor for the
// metadata and the body step. Measured peaks are under it for every
// hostile page of TestHostilePages.
func extractionCost(n int) int64 {
	return max(4<<20, 12*int64(n))
}

// enter waits until a page of n bytes can be extracted within the budget
// and returns the function that gives its share back. A page whose cost
// alone exceeds the budget waits for the whole budget, so it is extracted
// alone.
func (g *memoryGate) enter(ctx context.Context, n int) (func(), error) {
	cost := min(extractionCost(n), g.budget)
	if err := g.sem.Acquire(ctx, cost); err != nil {
		return nil, fmt.Errorf("waiting for %d bytes of extraction memory: %w", cost, err)
	}
	return func() { g.sem.Release(cost) }, nil
}

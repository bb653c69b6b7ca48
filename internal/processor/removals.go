package processor

import (
	"context"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// removals says how the store follows the links that leave the task's page
// (watch.Removals). Only a check with the page's whole link set, not
// truncated (a link left out over the crawler's limits has not left the
// page), can find links missing; any successful check ages the absences
// already pending, and the one at which an absence reaches
// Config.RemovalChecks makes it due, which the claim of the page's next
// check records.
func (s *Service) removals(task watch.Task, check watch.Check, keys []uint64) watch.Removals {
	if s.cfg.RemovalChecks <= 0 || task.Failed() {
		return watch.Removals{}
	}
	r := watch.Removals{Checks: s.cfg.RemovalChecks}
	if check.FullSet && task.Truncated == 0 {
		r.Keys, r.Followed = keys, task.Followed
	}
	return r
}

// Run handles tasks through consume (a queue consumer's Run, which calls
// Handle) and runs the removal sweep beside it until consume returns,
// because ctx ended or on its own failure (a broker it cannot reach); it
// returns consume's error. Due removals wait in their pages' rows for the
// claims of the pages' next checks, so the stop leaves none behind.
func (s *Service) Run(ctx context.Context, consume func(context.Context) error) error {
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		s.RunRemovalSweep(sweepCtx) //nolint:errcheck // it returns nil when stopped
	}()
	err := consume(ctx)
	stopSweep()
	<-swept
	return err
}

// RunRemovalSweep records, at its start and every Config.RemovalSweep
// until ctx ends, the due removals of pages that no claim reaches soon.
// The claim of a page's next check records what its last check made due
// (store.ClaimDueQuery); a paused page, or one whose next check is far off,
// would keep them until then. It returns nil when ctx ends.
func (s *Service) RunRemovalSweep(ctx context.Context) error {
	sweep := time.NewTicker(s.cfg.RemovalSweep)
	defer sweep.Stop()
	for {
		s.sweepRemovals(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
		}
	}
}

// sweepRemovals records the due removals of every page that has some, in
// passes of sweepBatch pages.
func (s *Service) sweepRemovals(ctx context.Context) {
	for ctx.Err() == nil {
		ids, err := s.store.PagesWithDueRemovals(ctx, sweepBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sweep for due removals failed; the next sweep tries again", "err", err)
			}
			return
		}
		n, err := s.store.RecordRemovals(ctx, ids)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("due removals not recorded; the pages' next claims or the next sweep record them", "err", err, "pages", len(ids))
			}
			return
		}
		s.metrics.removals.Add(float64(n))
		if n > 0 {
			s.log.Info("due removals recorded by the sweep", "pages", len(ids), "removals", n)
		}
		if len(ids) < sweepBatch {
			return
		}
	}
}

// sweepBatch is the most pages one pass of the sweep finds: each pass
// reads the pages table until it has found them.
const sweepBatch = 5000

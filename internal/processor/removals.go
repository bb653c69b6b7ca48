package processor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// removals says how the store follows the links that leave the task's page
// (watch.Removals). Only a check with the page's whole link set, not
// truncated (a link left out over the crawler's limits has not left the
// page), can find links missing; any successful check ages the absences
// already pending, and the one at which an absence reaches
// Config.RemovalChecks makes it due, which RecordRemovals records.
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

// duePages are the pages whose checks this processor recorded with
// removals due (watch.Recorded.RemovalsDue), waiting for RecordRemovals.
// Losing them loses nothing: the absences stay due in the pages' rows, and
// the page's next check or a processor's sweep finds them again.
type duePages struct {
	mu  sync.Mutex
	ids map[int64]struct{}
}

func (d *duePages) add(ids ...int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ids == nil {
		d.ids = map[int64]struct{}{}
	}
	for _, id := range ids {
		d.ids[id] = struct{}{}
	}
}

// take removes and returns up to n of the pages, in id order.
func (d *duePages) take(n int) []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]int64, 0, min(n, len(d.ids)))
	for id := range d.ids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = ids[:min(n, len(ids))]
	for _, id := range ids {
		delete(d.ids, id)
	}
	return ids
}

// removalBatch is the most pages RecordRemovals records in one statement.
const removalBatch = 500

// RecordRemovals records the due removals of every page waiting for it, in
// statements of up to removalBatch pages. Pages whose statement failed wait
// for the next call, and the error says so.
func (s *Service) RecordRemovals(ctx context.Context) error {
	for {
		ids := s.due.take(removalBatch)
		if len(ids) == 0 {
			return nil
		}
		removed, err := s.store.RecordRemovals(ctx, ids)
		if err != nil {
			s.due.add(ids...)
			return fmt.Errorf("record the due removals of %d pages: %w", len(ids), err)
		}
		s.metrics.removals.Add(float64(len(removed)))
		perPage := map[int64]int{}
		for _, r := range removed {
			perPage[r.PageID]++
		}
		for _, id := range slices.Sorted(maps.Keys(perPage)) {
			s.log.Info("links removed from the page", "page_id", id, "count", perPage[id])
		}
	}
}

// RunRemovals records due removals every Config.RemovalsEvery until ctx
// ends, and sweeps for pages whose removals no processor recorded (one
// stopped between a check and its recording) at its start and every
// Config.RemovalSweep. It returns nil when ctx ends; call RecordRemovals
// once more after the last task was handled.
func (s *Service) RunRemovals(ctx context.Context) error {
	tick := time.NewTicker(s.cfg.RemovalsEvery)
	defer tick.Stop()
	sweep := time.NewTicker(s.cfg.RemovalSweep)
	defer sweep.Stop()
	s.sweepRemovals(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sweep.C:
			s.sweepRemovals(ctx)
		case <-tick.C:
		}
		if err := s.RecordRemovals(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("due removals not recorded; tried again shortly", "err", err)
		}
	}
}

// sweepRemovals queues every page with due removals, and records them.
func (s *Service) sweepRemovals(ctx context.Context) {
	for ctx.Err() == nil {
		ids, err := s.store.PagesWithDueRemovals(ctx, sweepBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("sweep for due removals failed; the next sweep tries again", "err", err)
			}
			return
		}
		s.due.add(ids...)
		if err := s.RecordRemovals(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("due removals not recorded; tried again shortly", "err", err)
			}
			return
		}
		if len(ids) < sweepBatch {
			return
		}
	}
}

// sweepBatch is the most pages one pass of the sweep finds: each pass
// reads the pages table until it has found them.
const sweepBatch = 5000

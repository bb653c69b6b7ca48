package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// deferCheck handles a task whose check the crawler put off (a politeness
// wait would have held its worker): the page is freed to be checked at
// task.DeferredUntil and nothing about its links or status is recorded.
// Like record, it retries while the database is unavailable.
func (s *Service) deferCheck(ctx context.Context, task watch.Task) (outcome string, err error) {
	decidedAt := task.FetchedAt
	if decidedAt.IsZero() {
		decidedAt = time.Now()
	}
	for attempt := 0; ; attempt++ {
		err := s.store.DeferCheck(ctx, task.ID, decidedAt, task.DeferredUntil)
		switch {
		case err == nil:
			s.log.Debug("check deferred", "page_id", task.ID, "until", task.DeferredUntil)
			return "deferred", nil
		case errors.Is(err, watch.ErrPageNotFound):
			s.log.Info("task for a removed page dropped", "page_id", task.ID, "url", task.BaseURL)
			return "page_removed", nil
		case watch.IsPermanent(err):
			return "rejected", watch.Permanent(err)
		}
		s.log.Warn("recording deferral failed; retrying", "page_id", task.ID, "attempt", attempt+1, "err", err)
		if sleepErr := s.cfg.Backoff.Sleep(ctx, attempt); sleepErr != nil {
			return "interrupted", fmt.Errorf("defer check of page %d: %w (gave up: %v)", task.ID, err, sleepErr)
		}
	}
}

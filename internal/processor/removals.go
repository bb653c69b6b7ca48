package processor

import (
	"context"
	"log/slog"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// trackRemovals follows the links that leave the page after a recorded
// successful check. A check with the page's whole link set (not truncated:
// a link left out over the limits has not left the page) is compared with
// the previous one by the store, which writes only the links that left or
// came back; any successful check at which a pending absence reaches
// Config.RemovalChecks records the removals. An error leaves the task
// unacked: its redelivery records nothing twice and tries again.
func (s *Service) trackRemovals(ctx context.Context, log *slog.Logger, task watch.Task, check store.Check, rec store.Recorded, keys []uint64) error {
	if s.cfg.RemovalChecks <= 0 || task.Failed() {
		return nil
	}
	due := rec.RemovalsDue
	if check.FullSet && task.Truncated == 0 {
		d, err := s.store.TrackLinks(ctx, store.LinkSet{PageID: task.ID, FetchedAt: check.FetchedAt,
			Digest: check.LinksDigest, Keys: keys, Reset: rec.Rebaseline}, s.cfg.RemovalChecks)
		if err != nil {
			return err
		}
		due = due || d
	}
	if !due {
		return nil
	}
	removed, err := s.store.RecordRemovals(ctx, task.ID, s.cfg.RemovalChecks)
	if err != nil {
		return err
	}
	if len(removed) > 0 {
		s.metrics.removals.Add(float64(len(removed)))
		log.Info("links removed from the page", "count", len(removed))
	}
	return nil
}

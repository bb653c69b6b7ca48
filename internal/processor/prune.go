package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Pruning is what the Pruner needs of the store.
type Pruning interface {
	MaintainUpdatePartitions(ctx context.Context, retention time.Duration, ahead int) (watch.PartitionChanges, error)
	PruneLinks(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneRemovals(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// RetentionConfig says what the Pruner deletes and how fast.
type RetentionConfig struct {
	// Updates drops the weekly partitions of updates whose whole week is
	// older than this, so an update is kept between Updates and Updates plus
	// a week, and deletes removals older than this; zero keeps them forever.
	Updates time.Duration
	// Links forgets links absent from their page for this long; zero keeps
	// them forever. The processor must refresh links at LinkRefreshFor(Links).
	Links time.Duration
	// Interval is the pause between rounds. Default DefaultPruneInterval,
	// 10m.
	Interval time.Duration
	// Batch is how many rows one statement deletes, so no statement holds
	// many locks or runs long. Default DefaultPruneBatch, 1000.
	Batch int
	// MaxBatches bounds the link statements of one round, so a backlog is
	// worked off over several rounds instead of in one long burst.
	// Default DefaultPruneMaxBatches, 100.
	MaxBatches int
	// PartitionsAhead is how many weeks past the current one have their
	// partition of updates made in advance, so that a processor stopped for
	// that long still finds its week's partition. Default 3.
	PartitionsAhead int
}

// Defaults of RetentionConfig, applied by WithDefaults.
const (
	DefaultPruneInterval   = 10 * time.Minute
	DefaultPruneBatch      = 1000
	DefaultPruneMaxBatches = 100
	DefaultPartitionsAhead = 3
)

// WithDefaults returns a copy of c with every unset (zero) field given its
// default. Updates and Links, where zero means keep forever, are left as
// they are.
func (c RetentionConfig) WithDefaults() RetentionConfig {
	if c.Interval == 0 {
		c.Interval = DefaultPruneInterval
	}
	if c.Batch == 0 {
		c.Batch = DefaultPruneBatch
	}
	if c.MaxBatches == 0 {
		c.MaxBatches = DefaultPruneMaxBatches
	}
	if c.PartitionsAhead == 0 {
		c.PartitionsAhead = DefaultPartitionsAhead
	}
	return c
}

// validate refuses what no default can mend, naming every bad field.
func (c RetentionConfig) validate() error {
	var errs []error
	if c.Updates < 0 || c.Links < 0 || c.Interval < 0 {
		errs = append(errs, fmt.Errorf("pruner: Updates %s, Links %s, Interval %s: none may be negative", c.Updates, c.Links, c.Interval))
	}
	if c.Batch < 0 || c.MaxBatches < 0 || c.PartitionsAhead < 0 {
		errs = append(errs, fmt.Errorf("pruner: Batch %d, MaxBatches %d, PartitionsAhead %d: want at least 1", c.Batch, c.MaxBatches, c.PartitionsAhead))
	}
	return errors.Join(errs...)
}

// Pruner keeps the weekly partitions of updates, made ahead and dropped past
// retention, and deletes links gone from their pages in bounded batches.
// Several processors may each run one: partition maintenance runs under an
// advisory lock, and the link statements skip rows another is deleting.
type Pruner struct {
	cfg RetentionConfig
	st  Pruning
	log *slog.Logger
}

// NewPruner returns a Pruner with cfg's defaults applied
// (RetentionConfig.WithDefaults), or an error naming every field of cfg out
// of range.
func NewPruner(cfg RetentionConfig, st Pruning, log *slog.Logger) (*Pruner, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Pruner{cfg: cfg, st: st, log: log}, nil
}

// Run runs a round once per Interval until ctx ends; it returns nil then.
// The first round waits an Interval, so it never races the migrations a
// starting processor applies; migration 00006 itself makes the partitions
// of the next 3 weeks. It runs even with both retentions off: updates'
// future partitions must still be made. A failed round is logged and tried
// again at the next.
func (p *Pruner) Run(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, _, err := p.Round(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("retention round failed; the next round tries again", "err", err)
		}
	}
}

// Round runs one retention round: it makes and drops updates' partitions
// (see store.MaintainUpdatePartitions) and deletes links gone from their
// pages. It returns what the partition maintenance did and how many links it
// deleted.
func (p *Pruner) Round(ctx context.Context) (parts watch.PartitionChanges, links int64, err error) {
	if parts, err = p.st.MaintainUpdatePartitions(ctx, p.cfg.Updates, p.cfg.PartitionsAhead); err != nil {
		return parts, 0, fmt.Errorf("updates: %w", err)
	}
	if p.cfg.Links > 0 {
		if links, err = p.drain(ctx, p.st.PruneLinks, p.cfg.Links); err != nil {
			return parts, links, fmt.Errorf("links: %w", err)
		}
	}
	// Removals are news as updates are, and kept as long.
	var removals int64
	if p.cfg.Updates > 0 {
		if removals, err = p.drain(ctx, p.st.PruneRemovals, p.cfg.Updates); err != nil {
			return parts, links, fmt.Errorf("removals: %w", err)
		}
	}
	if len(parts.Created) > 0 || len(parts.Dropped) > 0 || links > 0 || removals > 0 {
		p.log.Info("retention round", "partitions_created", parts.Created, "partitions_dropped", parts.Dropped,
			"updates_moved_from_default", parts.Moved, "links_deleted", links, "removals_deleted", removals)
	}
	return parts, links, nil
}

func (p *Pruner) drain(ctx context.Context, prune func(context.Context, time.Duration, int) (int64, error), olderThan time.Duration) (int64, error) {
	var total int64
	for range p.cfg.MaxBatches {
		n, err := prune(ctx, olderThan, p.cfg.Batch)
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(p.cfg.Batch) {
			break
		}
	}
	return total, nil
}

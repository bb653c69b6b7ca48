package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Pruning is what the Pruner needs of the store.
type Pruning interface {
	PruneUpdates(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneLinks(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// RetentionConfig says what the Pruner deletes and how fast.
type RetentionConfig struct {
	// Updates deletes updates discovered longer ago than this; zero keeps
	// them forever.
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
	// MaxBatches bounds the statements of one round per table, so a backlog
	// is worked off over several rounds instead of in one long burst.
	// Default DefaultPruneMaxBatches, 100.
	MaxBatches int
}

// Defaults of RetentionConfig, applied by WithDefaults.
const (
	DefaultPruneInterval   = 10 * time.Minute
	DefaultPruneBatch      = 1000
	DefaultPruneMaxBatches = 100
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
	return c
}

// validate refuses what no default can mend, naming every bad field.
func (c RetentionConfig) validate() error {
	var errs []error
	if c.Updates < 0 || c.Links < 0 || c.Interval < 0 {
		errs = append(errs, fmt.Errorf("pruner: Updates %s, Links %s, Interval %s: none may be negative", c.Updates, c.Links, c.Interval))
	}
	if c.Batch < 0 || c.MaxBatches < 0 {
		errs = append(errs, fmt.Errorf("pruner: Batch %d, MaxBatches %d: want at least 1", c.Batch, c.MaxBatches))
	}
	return errors.Join(errs...)
}

// Pruner deletes old updates and links gone from their pages, in bounded
// batches. Several processors may each run one: the statements skip rows
// another is deleting.
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

// Run prunes once per Interval until ctx ends; it returns nil then. A failed
// round is logged and tried again at the next.
func (p *Pruner) Run(ctx context.Context) error {
	if p.cfg.Updates <= 0 && p.cfg.Links <= 0 {
		return nil
	}
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

// Round runs one retention round and returns how many updates and links it
// deleted.
func (p *Pruner) Round(ctx context.Context) (updates, links int64, err error) {
	if p.cfg.Updates > 0 {
		if updates, err = p.drain(ctx, p.st.PruneUpdates, p.cfg.Updates); err != nil {
			return updates, 0, fmt.Errorf("prune updates: %w", err)
		}
	}
	if p.cfg.Links > 0 {
		if links, err = p.drain(ctx, p.st.PruneLinks, p.cfg.Links); err != nil {
			return updates, links, fmt.Errorf("prune links: %w", err)
		}
	}
	if updates > 0 || links > 0 {
		p.log.Info("retention round", "updates_deleted", updates, "links_deleted", links)
	}
	return updates, links, nil
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

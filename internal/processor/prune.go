package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Pruning is what the Pruner needs of the store.
type Pruning interface {
	MaintainUpdatePartitions(ctx context.Context, retention time.Duration, ahead int) (watch.PartitionChanges, error)
	PruneLinks(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneRemovals(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneEvents(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	EmptyTrash(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneSparklines(ctx context.Context, olderThan time.Duration) (int64, error)
	PruneArticles(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// articleGrace is how long an article is kept before the pruner may find
// it unlinked: the extractor stores it and points its update at it in one
// transaction, so an hour is only a margin for clocks.
const articleGrace = time.Hour

// SparklineHours is how far back the pages list's sparklines reach; the
// hourly counts behind them are kept a day longer, then deleted.
const SparklineHours = 7 * 24

// RetentionConfig says what the Pruner deletes and how fast.
type RetentionConfig struct {
	// Updates drops the weekly partitions of updates whose whole week is
	// older than this, so an update is kept between Updates and Updates plus
	// a week, and deletes removals and events (headline revisions, a
	// page's health changing) older than this; zero keeps them forever,
	// anything else is at least an hour, so that a typo such as 90s cannot
	// empty a table.
	Updates time.Duration `env:"PORTALWATCH_UPDATES_RETENTION"`
	// Links forgets links absent from their page for this long; zero keeps
	// them forever, anything else is at least an hour. The processor must
	// refresh links at LinkRefreshFor(Links). The programs use
	// DefaultLinksRetention.
	Links time.Duration `env:"PORTALWATCH_LINKS_RETENTION"`
	// Interval is the pause between rounds, at least 1s. Default
	// DefaultPruneInterval, 10m.
	Interval time.Duration `env:"PORTALWATCH_PRUNE_INTERVAL"`
	// Batch is how many rows one statement deletes, so no statement holds
	// many locks or runs long, at most 100,000. Default DefaultPruneBatch,
	// 1000.
	Batch int `env:"PORTALWATCH_PRUNE_BATCH"`
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
	// DefaultLinksRetention is the programs' Links: 90 days.
	DefaultLinksRetention = 90 * 24 * time.Hour
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

// Validate refuses what no default can mend, naming every bad field.
func (c RetentionConfig) Validate() error {
	return errors.Join(
		retention("Updates", c.Updates),
		retention("Links", c.Links),
		config.AtLeast("Interval", c.Interval, time.Second),
		config.Between("Batch", c.Batch, 1, 100_000),
		config.AtLeast("MaxBatches", c.MaxBatches, 1),
		config.AtLeast("PartitionsAhead", c.PartitionsAhead, 1),
	)
}

func retention(field string, d time.Duration) error {
	if d == 0 || d >= time.Hour {
		return nil
	}
	return config.Invalid(field, d, "want 0 (keep forever) or a duration of at least 1h, such as 720h")
}

// Pruner keeps the weekly partitions of updates, made ahead and dropped past
// retention, deletes links gone from their pages in bounded batches, and
// deletes for good the pages that have been in the trash for
// watch.TrashRetention and the hourly counts older than the sparklines.
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
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pruner: %w", err)
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
	// Removals and events are news as updates are, and kept as long.
	var removals, events int64
	if p.cfg.Updates > 0 {
		if removals, err = p.drain(ctx, p.st.PruneRemovals, p.cfg.Updates); err != nil {
			return parts, links, fmt.Errorf("removals: %w", err)
		}
		if events, err = p.drain(ctx, p.st.PruneEvents, p.cfg.Updates); err != nil {
			return parts, links, fmt.Errorf("events: %w", err)
		}
	}
	// A page with many updates takes a while to delete with its rows:
	// one batch a round is enough for a trash people fill by hand.
	purged, err := p.st.EmptyTrash(ctx, watch.TrashRetention, p.cfg.Batch)
	if err != nil {
		return parts, links, fmt.Errorf("trash: %w", err)
	}
	hours, err := p.st.PruneSparklines(ctx, (SparklineHours+24)*time.Hour)
	if err != nil {
		return parts, links, fmt.Errorf("sparklines: %w", err)
	}
	// An article goes with the last update that links it, whether
	// retention or the trash took that update.
	articles, err := p.drain(ctx, p.st.PruneArticles, articleGrace)
	if err != nil {
		return parts, links, fmt.Errorf("articles: %w", err)
	}
	if len(parts.Created) > 0 || len(parts.Dropped) > 0 || links > 0 || removals > 0 || events > 0 || purged > 0 || articles > 0 {
		p.log.Info("retention round", "partitions_created", parts.Created, "partitions_dropped", parts.Dropped,
			"updates_moved_from_default", parts.Moved, "links_deleted", links, "removals_deleted", removals, "events_deleted", events,
			"trashed_pages_deleted", purged, "hourly_counts_deleted", hours, "articles_deleted", articles)
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

// Package scheduler turns due pages into jobs: it claims due pages from the
// store in batches and publishes one job per page to the job queue, waiting
// for the broker's confirms before the claim commits.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Claimer claims due pages and reschedules them once publish succeeds.
type Claimer interface {
	ClaimDue(ctx context.Context, p watch.ClaimParams, publish func(context.Context, []watch.Job) error) (watch.Claimed, error)
}

// Publisher publishes messages and returns once the broker confirmed them.
type Publisher interface {
	Publish(ctx context.Context, queue string, msgs ...watch.Message) error
}

// Config configures the scheduler.
type Config struct {
	// Queue is the job queue.
	Queue string
	// PollInterval is the pause after a round that found fewer than
	// BatchSize due pages. At least 10ms; default DefaultPollInterval, 1s.
	PollInterval time.Duration `env:"PORTALWATCH_SCHEDULER_POLL"`
	// BatchSize is how many pages one round claims, at most 10,000. Default
	// DefaultBatchSize, 500.
	BatchSize int `env:"PORTALWATCH_SCHEDULER_BATCH"`
	// Lease keeps a page with a job in flight from being scheduled again
	// unless its task comes back first. At least 1s; default DefaultLease,
	// 10m.
	Lease time.Duration `env:"PORTALWATCH_LEASE"`
	// Jitter is the largest share of a page's interval added at random to
	// its next check, from 0 (none, the zero value) to 1. The programs use
	// DefaultJitter, 0.1.
	Jitter float64 `env:"PORTALWATCH_JITTER"`
	// PublishTimeout bounds one round's publishing; the claim rolls back
	// after it. Default DefaultPublishTimeout, 30s.
	PublishTimeout time.Duration
	// Backoff spaces rounds after a failure.
	Backoff backoff.Policy
	// Workers is how many rounds run at once. While one round waits for the
	// broker's confirms, another claims the next batch (SKIP LOCKED keeps
	// them apart). At most 64; default DefaultWorkers, 2.
	Workers int `env:"PORTALWATCH_SCHEDULER_WORKERS"`
}

// Defaults of Config, applied by WithDefaults.
const (
	DefaultPollInterval   = time.Second
	DefaultBatchSize      = 500
	DefaultLease          = 10 * time.Minute
	DefaultJitter         = 0.1
	DefaultPublishTimeout = 30 * time.Second
	DefaultWorkers        = 2
)

// WithDefaults returns a copy of c with every unset (zero) field given its
// default. Jitter, where zero means none, is left as it is.
func (c Config) WithDefaults() Config {
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field.
func (c Config) Validate() error {
	return errors.Join(
		config.AtLeast("PollInterval", c.PollInterval, 10*time.Millisecond),
		config.Between("BatchSize", c.BatchSize, 1, 10_000),
		config.AtLeast("Lease", c.Lease, time.Second),
		config.Between("Jitter", c.Jitter, 0, 1),
		config.AtLeast("PublishTimeout", c.PublishTimeout, 0),
		config.Between("Workers", c.Workers, 1, 64),
	)
}

// Service is the scheduler.
type Service struct {
	cfg     Config
	store   Claimer
	pub     Publisher
	log     *slog.Logger
	metrics metrics
}

type metrics struct {
	published prometheus.Counter
	failures  prometheus.Counter
	removals  prometheus.Counter
}

// New returns a scheduler with cfg's defaults applied (Config.WithDefaults).
// Its metrics are registered with reg. It returns an error naming every
// field of cfg out of range.
func New(cfg Config, st Claimer, pub Publisher, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	m := metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_scheduler_jobs_published_total", Help: "Jobs published and confirmed by the broker.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_scheduler_round_failures_total", Help: "Scheduling rounds that failed and were retried.",
		}),
		removals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_scheduler_removals_total",
			Help: "Links recorded as removed from their page by the claims of the pages' next checks.",
		}),
	}
	reg.MustRegister(m.published, m.failures, m.removals)
	return &Service{cfg: cfg, store: st, pub: pub, log: log, metrics: m}, nil
}

// Run schedules until ctx ends, with Workers rounds in flight. A full batch
// is followed at once by another round; otherwise a worker waits
// PollInterval. Failures (database or broker down) are logged and retried
// with backoff; Run returns nil when ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for range s.cfg.Workers {
		wg.Go(func() { s.loop(ctx) })
	}
	wg.Wait()
	return nil
}

func (s *Service) loop(ctx context.Context) {
	failures := 0
	for {
		n, err := s.Round(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := s.cfg.PollInterval
		switch {
		case err != nil:
			s.metrics.failures.Inc()
			s.log.Warn("scheduling round failed; retrying", "err", err, "attempt", failures+1)
			wait = s.cfg.Backoff.Delay(failures)
			failures++
		case n == s.cfg.BatchSize:
			failures = 0
			continue
		default:
			failures = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Round claims and publishes one batch of due pages and returns how many.
// The claim also records the removals the pages' last checks made due.
func (s *Service) Round(ctx context.Context) (int, error) {
	c, err := s.store.ClaimDue(ctx, watch.ClaimParams{Limit: s.cfg.BatchSize, Lease: s.cfg.Lease, Jitter: s.cfg.Jitter},
		s.publish)
	if err != nil {
		return 0, err
	}
	if c.Jobs > 0 {
		s.metrics.published.Add(float64(c.Jobs))
		s.metrics.removals.Add(float64(c.Removals))
		s.log.Debug("jobs published", "count", c.Jobs, "removals", c.Removals)
	}
	return c.Jobs, nil
}

func (s *Service) publish(ctx context.Context, jobs []watch.Job) error {
	msgs := make([]watch.Message, len(jobs))
	for i, j := range jobs {
		body, err := watch.EncodeJob(j)
		if err != nil {
			return fmt.Errorf("encode job for page %d: %w", j.ID, err)
		}
		msgs[i] = watch.Message{Body: body}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	return s.pub.Publish(ctx, s.cfg.Queue, msgs...)
}

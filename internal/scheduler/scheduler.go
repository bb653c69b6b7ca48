// Package scheduler turns due pages into jobs: it claims due pages from the
// store in batches and publishes one job per page to the job queue, waiting
// for the broker's confirms before the claim commits.
//
// It is the fleet's crawl frontier too: before it publishes a batch it books
// a fetch slot for each job in the per-origin budget (package hostgate), so
// that a crawler gets a job when its origin has room for it and fetches at
// the booked time, instead of finding the origin busy and deferring the
// check by seconds. A page whose origin has no slot within Config.Horizon is
// not dispatched: it is due again when its slot nears.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Claimer claims due pages and reschedules them once dispatch succeeds,
// postponing those it did not dispatch.
type Claimer interface {
	ClaimDue(ctx context.Context, p watch.ClaimParams,
		dispatch func(context.Context, []watch.Job) ([]watch.Postponed, error)) (watch.Claimed, error)
}

// SourceClaimer claims the due checks of pages' feeds and news sitemaps,
// and the pages due for a discovery of them (store.ClaimDueSources). A
// Claimer that is one too schedules sources.
type SourceClaimer interface {
	ClaimDueSources(ctx context.Context, p watch.ClaimParams, discover int,
		dispatch func(context.Context, []watch.Job) ([]watch.Postponed, error)) (watch.Claimed, error)
}

// Budget books fetch slots in the fleet's per-origin budget
// (hostgate.Gate).
type Budget interface {
	Book(ctx context.Context, class watch.FetchClass, spacing, horizon time.Duration, reqs []watch.SlotRequest) []watch.Booking
}

// Publisher publishes messages and returns once the broker confirmed them.
type Publisher interface {
	Publish(ctx context.Context, queue string, msgs ...watch.Message) error
}

// Config configures the scheduler.
type Config struct {
	// Queue is the job queue.
	Queue string
	// RenderQueue is where the jobs of rendered pages (Job.Render) go, the
	// renderers' queue; empty sends them to Queue with the others.
	RenderQueue string
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
	// HostSpacing is the least time between two fetches of one origin,
	// the crawlers' PORTALWATCH_HOST_SPACING, which the slots the
	// scheduler books keep (or the origin's Crawl-delay, when longer).
	// 0 books no slots. At most 1h; the programs use DefaultHostSpacing,
	// 1s.
	HostSpacing time.Duration `env:"PORTALWATCH_HOST_SPACING"`
	// Horizon is how far ahead a job's slot may lie when it is published;
	// a page whose origin's next free slot lies further is postponed until
	// that slot nears. A crawler holds a job until its slot without
	// taking a worker, so the horizon trades jobs held in crawlers (about
	// Horizon/HostSpacing for each busy origin) against the poll delay;
	// keep it above PollInterval, so that a busy origin always has its
	// next slot booked, and at most the crawlers'
	// PORTALWATCH_MAX_POLITE_WAIT. From 0 to 1m; default DefaultHorizon,
	// 2s.
	Horizon time.Duration `env:"PORTALWATCH_SCHEDULER_HORIZON"`
	// DiscoveryPoll is how often a round also claims the pages whose feeds
	// and sitemaps are due to be discovered again: that claim reads every
	// page with sources beyond its homepage, so it is not run every round.
	// From 10ms to 1h; default DefaultDiscoveryPoll, 1m.
	DiscoveryPoll time.Duration `env:"PORTALWATCH_SCHEDULER_DISCOVERY_POLL"`
}

// Defaults of Config, applied by WithDefaults.
const (
	DefaultPollInterval   = time.Second
	DefaultBatchSize      = 500
	DefaultLease          = 10 * time.Minute
	DefaultJitter         = 0.1
	DefaultPublishTimeout = 30 * time.Second
	DefaultWorkers        = 2
	DefaultHostSpacing    = time.Second
	DefaultHorizon        = 2 * time.Second
	DefaultDiscoveryPoll  = time.Minute
)

// WithDefaults returns a copy of c with every unset (zero) field given its
// default. Jitter and HostSpacing, where zero means none, are left as they
// are.
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
	if c.Horizon == 0 {
		c.Horizon = DefaultHorizon
	}
	if c.DiscoveryPoll == 0 {
		c.DiscoveryPoll = DefaultDiscoveryPoll
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
		config.Between("HostSpacing", c.HostSpacing, 0, time.Hour),
		config.Between("Horizon", c.Horizon, 0, time.Minute),
		config.Between("DiscoveryPoll", c.DiscoveryPoll, 10*time.Millisecond, time.Hour),
	)
}

// Service is the scheduler.
type Service struct {
	cfg     Config
	store   Claimer
	budget  Budget
	pub     Publisher
	log     *slog.Logger
	metrics metrics
	// lastDiscovery is when a round last claimed discoveries.
	discoveryMu   sync.Mutex
	lastDiscovery time.Time
}

type metrics struct {
	published prometheus.Counter
	failures  prometheus.Counter
	removals  prometheus.Counter
	postponed prometheus.Counter
}

// New returns a scheduler with cfg's defaults applied (Config.WithDefaults).
// It books slots in budget; nil books none (the crawlers book their own).
// Its metrics are registered with reg. It returns an error naming every
// field of cfg out of range.
func New(cfg Config, st Claimer, budget Budget, pub Publisher, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
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
		postponed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_scheduler_jobs_postponed_total",
			Help: "Due pages not dispatched because their origin had no fetch slot within the horizon.",
		}),
	}
	reg.MustRegister(m.published, m.failures, m.removals, m.postponed)
	return &Service{cfg: cfg, store: st, budget: budget, pub: pub, log: log, metrics: m}, nil
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

// Round claims and dispatches one batch of due pages and returns how many
// it claimed, postponed ones included. The claim also records the removals
// the pages' last checks made due.
func (s *Service) Round(ctx context.Context) (int, error) {
	c, err := s.store.ClaimDue(ctx, watch.ClaimParams{Limit: s.cfg.BatchSize, Lease: s.cfg.Lease, Jitter: s.cfg.Jitter},
		s.dispatch)
	if err != nil {
		return 0, err
	}
	if c.Jobs+c.Postponed > 0 {
		s.metrics.published.Add(float64(c.Jobs))
		s.metrics.postponed.Add(float64(c.Postponed))
		s.metrics.removals.Add(float64(c.Removals))
		s.log.Debug("jobs published", "count", c.Jobs, "postponed", c.Postponed, "removals", c.Removals)
	}
	// A failure of the sources' claim must not hold the homepages back:
	// it is counted and logged, and the next round tries again.
	n, err := s.roundSources(ctx)
	if err != nil && ctx.Err() == nil {
		s.metrics.failures.Inc()
		s.log.Warn("scheduling sources failed; the next round tries again", "err", err)
	}
	return max(c.Jobs+c.Postponed, n), nil
}

// roundSources claims and dispatches one batch of due feeds and news
// sitemaps, and, once every DiscoveryPoll, of due discoveries, when the
// store schedules sources. It returns how many it claimed.
func (s *Service) roundSources(ctx context.Context) (int, error) {
	sc, ok := s.store.(SourceClaimer)
	if !ok {
		return 0, nil
	}
	discover := 0
	s.discoveryMu.Lock()
	if now := time.Now(); now.Sub(s.lastDiscovery) >= s.cfg.DiscoveryPoll {
		s.lastDiscovery, discover = now, max(s.cfg.BatchSize/10, 1)
	}
	s.discoveryMu.Unlock()
	c, err := sc.ClaimDueSources(ctx, watch.ClaimParams{Limit: s.cfg.BatchSize, Lease: s.cfg.Lease, Jitter: s.cfg.Jitter}, discover,
		s.dispatchSources)
	if err != nil {
		return 0, err
	}
	if c.Jobs+c.Postponed > 0 {
		s.metrics.published.Add(float64(c.Jobs))
		s.metrics.postponed.Add(float64(c.Postponed))
		s.log.Debug("source jobs published", "count", c.Jobs, "postponed", c.Postponed)
	}
	return c.Jobs + c.Postponed, nil
}

// dispatchSources books slots of the class below the homepages' for the
// source checks (a discovery paces its own fetches in the crawler),
// publishes the jobs that got one, and returns the rest as postponed.
func (s *Service) dispatchSources(ctx context.Context, jobs []watch.Job) ([]watch.Postponed, error) {
	var checks, discoveries []watch.Job
	for _, j := range jobs {
		if j.Discover {
			discoveries = append(discoveries, j)
		} else {
			checks = append(checks, j)
		}
	}
	send, later := s.bookAs(ctx, watch.SourceFetch, 0, checks)
	return later, s.publishJobs(ctx, append(discoveries, send...))
}

// dispatch books the jobs' slots, publishes the jobs that got one, in the
// order of their slots, and returns the rest as postponed.
func (s *Service) dispatch(ctx context.Context, jobs []watch.Job) ([]watch.Postponed, error) {
	send, later := s.bookAs(ctx, watch.HomepageFetch, s.cfg.Horizon, jobs)
	if err := s.publishJobs(ctx, send); err != nil {
		return nil, err
	}
	return later, nil
}

// queueOf is the queue of j: the render queue for a homepage check of a
// page rendered in Chromium, when the scheduler has one, else the job
// queue (feeds, sitemaps and discoveries are never rendered).
func (s *Service) queueOf(j watch.Job) string {
	if j.Render && j.Source == nil && !j.Discover && s.cfg.RenderQueue != "" {
		return s.cfg.RenderQueue
	}
	return s.cfg.Queue
}

// publishJobs publishes jobs, each to its queue (queueOf), and waits for
// the broker's confirms.
func (s *Service) publishJobs(ctx context.Context, jobs []watch.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	byQueue := map[string][]watch.Message{}
	for _, j := range jobs {
		body, err := watch.EncodeJob(j)
		if err != nil {
			return fmt.Errorf("encode job for page %d: %w", j.ID, err)
		}
		q := s.queueOf(j)
		byQueue[q] = append(byQueue[q], watch.Message{Body: body})
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	for _, q := range []string{s.cfg.Queue, s.cfg.RenderQueue} {
		if msgs := byQueue[q]; len(msgs) > 0 {
			if err := s.pub.Publish(ctx, q, msgs...); err != nil {
				return err
			}
		}
	}
	return nil
}

// bookAs asks the budget for slots of class for each job, all of one origin's jobs in
// one request, and returns the jobs that got one, each carrying its slot,
// sorted by slot, and the pages of the rest, each postponed to about when
// its origin's slot will be within the horizon: the first one to when the
// origin's next free slot is, later ones a spacing apart each. Slots are
// times by Redis's clock, so hosts must keep their clocks (NTP).
// A postponed check of a source names it (Postponed.Source).
func (s *Service) bookAs(ctx context.Context, class watch.FetchClass, horizon time.Duration, jobs []watch.Job) ([]watch.Job, []watch.Postponed) {
	if s.budget == nil || s.cfg.HostSpacing <= 0 {
		return jobs, nil
	}
	var (
		reqs    []watch.SlotRequest
		members [][]int // the jobs of each request, in claim order
		send    []watch.Job
		later   []watch.Postponed
	)
	byOrigin := map[string]int{}
	for i, j := range jobs {
		origin, ok := watch.Origin(j.BaseURL)
		if !ok {
			send = append(send, j) // the crawler fails it with its own message
			continue
		}
		r, seen := byOrigin[origin]
		if !seen {
			r = len(reqs)
			byOrigin[origin] = r
			reqs = append(reqs, watch.SlotRequest{Origin: origin})
			members = append(members, nil)
		}
		reqs[r].N++
		members[r] = append(members[r], i)
	}
	for r, b := range s.budget.Book(ctx, class, s.cfg.HostSpacing, horizon, reqs) {
		for k, i := range members[r] {
			j := jobs[i]
			if k < len(b.Slots) {
				j.Slot = &watch.Slot{At: b.Slots[k], Spacing: b.Spacing}
				send = append(send, j)
				continue
			}
			n := time.Duration(k - len(b.Slots))
			p := watch.Postponed{ID: j.ID, Until: b.Next.Add(-horizon + n*b.Spacing)}
			if j.Source != nil {
				p.Source = j.Source.ID
			}
			later = append(later, p)
		}
	}
	slices.SortStableFunc(send, func(a, b watch.Job) int {
		return slotTime(a).Compare(slotTime(b))
	})
	return send, later
}

func slotTime(j watch.Job) time.Time {
	if j.Slot == nil {
		return time.Time{}
	}
	return j.Slot.At
}

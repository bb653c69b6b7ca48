// Package notifier delivers updates to the people and programs that
// subscribed to them: signed webhooks (Standard Webhooks) and e-mail, each
// check's updates at once or as an hourly or daily digest. A subscription
// may ask for events too (link.rewritten, page.degraded, page.recovered):
// they share updates' id sequence and transaction ids, so one cursor
// orders both, and each event goes out as a message of its own type (or
// in its digest) with the same guarantees.
//
// What to send is derived from the updates table itself, never from a
// message published after a check's commit: each subscription keeps a
// durable cursor, and the store hands out only updates whose writing
// transaction is below the snapshot horizon (see migrations/00005_notifier.sql),
// so an update committed late, behind a larger id, is never skipped. A
// notifier claims a subscription with a lease (FOR UPDATE SKIP LOCKED),
// sends its next batch, and moves the cursor only after the target accepted
// it, so a notifier killed at any instruction loses nothing: the lease runs
// out and the same batch, under the same webhook-id, goes out again. That
// is delivery at least once; receivers drop repeats by webhook-id.
//
// A failed delivery is retried with exponential backoff and full jitter up
// to Config.RetryMax (24 hours by default); a subscription that has failed
// for Config.PauseAfter is paused with its last error as the reason.
// Subscriptions are served longest-waiting first, one batch per claim, so
// a busy or failing one never starves the others.
//
// Each update carries its article (status pending while the extractor has
// not read it). A subscription with a wait for articles
// (Subscription.WaitArticle) holds its next batch back while one of its
// updates has its article pending and was found less than the wait ago
// (watch.Batch.ArticleHold), and looks again every PollInterval until the
// articles are read or the wait is over; then the batch goes out as it is.
// The batch held is the one at the cursor, so it holds back every later
// batch of that subscription: the cursor is one position in the order of
// updates, and passing a held update would need a second record of what
// was passed over, with messages out of order and a batch no longer
// recomputed the same from its cursor. The cost is bounded: each hold ends
// at most the wait after its update was found, and later updates were
// found later, so no update goes out more than the wait behind the time it
// would have gone without one. A hold is no attempt: it counts no failure,
// writes no log entry, and moves the next attempt of the subscription, so
// that the others are served meanwhile.
package notifier

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

// Defaults applied by Config.WithDefaults.
const (
	DefaultConcurrency  = 8
	DefaultPollInterval = time.Second
	DefaultLease        = 2 * time.Minute
	DefaultRetryMin     = 10 * time.Second
	DefaultRetryMax     = 24 * time.Hour
	DefaultPauseAfter   = 72 * time.Hour
	DefaultMaxBatch     = 500
	DefaultDrainTimeout = 20 * time.Second
)

// Config configures a Service. Zero fields take their defaults.
type Config struct {
	// Concurrency is how many deliveries one notifier runs at once, at
	// most 1000. Default 8.
	Concurrency int `env:"PORTALWATCH_NOTIFIER_CONCURRENCY"`
	// PollInterval is how long the notifier waits for new updates after a
	// look found nothing to deliver, and how often it looks again at a
	// message held for its articles, at least 10ms. Default 1s.
	PollInterval time.Duration `env:"PORTALWATCH_NOTIFIER_POLL"`
	// Lease is how long a claimed subscription is kept from other
	// notifiers; it must cover a whole delivery, the send (up to the
	// webhook or SMTP timeout) and then the record of its outcome, or the
	// message goes out twice (the programs want twice the longer timeout).
	// A notifier that dies holds its subscriptions this long. At least 1s;
	// default 2m.
	Lease time.Duration `env:"PORTALWATCH_NOTIFIER_LEASE"`
	// RetryMin and RetryMax bound the wait before retry n, a random
	// duration in [d/2, d] with d = RetryMin·2^n capped at RetryMax, from
	// 10ms to 24h, RetryMin at most RetryMax. Defaults 10s and 24h.
	RetryMin time.Duration `env:"PORTALWATCH_NOTIFY_RETRY_MIN"`
	RetryMax time.Duration `env:"PORTALWATCH_NOTIFY_RETRY_MAX"`
	// PauseAfter is how long a subscription may keep failing before it is
	// paused with its last error, at least 1s. Default 72h.
	PauseAfter time.Duration `env:"PORTALWATCH_NOTIFY_PAUSE_AFTER"`
	// MaxBatch caps the updates in one message; a check with more is sent
	// in several. Default 500.
	MaxBatch int
	// DrainTimeout bounds the wait for deliveries in flight when Run's
	// context ends; those still running then are cut and their
	// subscriptions released. Default 20s; keep it below supervisord's
	// stopwaitsecs.
	DrainTimeout time.Duration
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	def(&c.PollInterval, DefaultPollInterval)
	def(&c.Lease, DefaultLease)
	def(&c.RetryMin, DefaultRetryMin)
	def(&c.RetryMax, DefaultRetryMax)
	def(&c.PauseAfter, DefaultPauseAfter)
	def(&c.DrainTimeout, DefaultDrainTimeout)
	return c
}

// Validate names every field out of range.
func (c Config) Validate() error {
	errs := []error{
		config.Between("Concurrency", c.Concurrency, 1, 1000),
		config.AtLeast("PollInterval", c.PollInterval, 10*time.Millisecond),
		config.AtLeast("Lease", c.Lease, time.Second),
		config.Between("RetryMin", c.RetryMin, 10*time.Millisecond, 24*time.Hour),
		config.Between("RetryMax", c.RetryMax, 10*time.Millisecond, 24*time.Hour),
		config.AtLeast("PauseAfter", c.PauseAfter, time.Second),
	}
	if c.RetryMin > c.RetryMax {
		errs = append(errs, config.Invalid("RetryMin", c.RetryMin, "want at most {RetryMax}"))
	}
	return errors.Join(errs...)
}

// Sender sends one message of a type (watch.TypeUpdatesCreated, an event
// kind such as "page.degraded" for a batch of one event, watch.TypeTest)
// with batch b to a subscription's target. It must honour ctx.
type Sender interface {
	Send(ctx context.Context, sub watch.Subscription, typ string, b watch.Batch) watch.SendResult
}

// Outbox is what the service needs of the store: leases on subscriptions
// with updates pending, their next batch, and the record of each attempt.
// Every method but ClaimSubscriptions works on a lease it returned; a lease
// taken over by another notifier yields watch.ErrLeaseLost.
type Outbox interface {
	ClaimSubscriptions(ctx context.Context, n int, lease time.Duration) ([]watch.Lease, error)
	PendingBatch(ctx context.Context, l watch.Lease, max int) (watch.Batch, error)
	CompleteDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) error
	FailDelivery(ctx context.Context, l watch.Lease, b watch.Batch, a watch.Attempt) (paused bool, err error)
	ReleaseLease(ctx context.Context, l watch.Lease) error
	// HoldDelivery gives the lease back without an attempt, its batch held
	// for articles, and makes the subscription due again at until.
	HoldDelivery(ctx context.Context, l watch.Lease, until time.Time) error
	// AdvanceIdleCursors moves the cursors of subscriptions with nothing
	// pending up to the horizon, so that claims need not scan past them.
	AdvanceIdleCursors(ctx context.Context) (int64, error)
}

// advanceEvery is how often a notifier moves idle cursors forward: often
// enough that a claim scans at most this long's updates for a quiet scope.
const advanceEvery = time.Minute

// Service delivers pending updates. Create it with New and run it with Run.
type Service struct {
	cfg     Config
	box     Outbox
	senders map[watch.Channel]Sender
	log     *slog.Logger
	now     func() time.Time

	deliveries *prometheus.CounterVec
	updates    prometheus.Counter
	events     prometheus.Counter
	latency    prometheus.Histogram
}

// New returns a service that sends through senders, one per channel; a
// subscription of a channel without a sender fails (and is retried, then
// paused) with a message naming the missing setting. Metrics are
// registered with reg.
func New(cfg Config, box Outbox, senders map[watch.Channel]Sender, log *slog.Logger, reg prometheus.Registerer) *Service {
	s := &Service{
		cfg: cfg.WithDefaults(), box: box, senders: senders, log: log, now: time.Now,
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_notifier_messages_total",
			Help: "Messages attempted, by channel and result (delivered, failed, paused, released; held: held back for articles, at each look).",
		}, []string{"channel", "result"}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_notifier_updates_delivered_total",
			Help: "Updates in delivered messages (repeats after a lost lease included).",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_notifier_events_delivered_total",
			Help: "Events (link.rewritten, page.degraded, page.recovered) in delivered messages (repeats after a lost lease included).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "portalwatch_notifier_delivery_latency_seconds",
			Help:    "From an update's discovered_at to the delivery of its message, per update.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 16),
		}),
	}
	reg.MustRegister(s.deliveries, s.updates, s.events, s.latency)
	return s
}

// Run claims and delivers until ctx ends, then stops claiming and waits up
// to DrainTimeout for the deliveries in flight; those it cuts release their
// subscriptions, whose batches go out again from another notifier. A
// database that is down is retried with backoff; Run returns nil once
// stopped.
func (s *Service) Run(ctx context.Context) error {
	// Deliveries outlive ctx by up to DrainTimeout.
	work, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	var wg sync.WaitGroup
	slots := make(chan struct{}, s.cfg.Concurrency)
	policy := backoff.Default
	failures := 0
	var advanced time.Time // at start, then every advanceEvery
	for ctx.Err() == nil {
		if time.Since(advanced) >= advanceEvery {
			advanced = time.Now()
			if _, err := s.box.AdvanceIdleCursors(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("moving idle cursors failed; claims scan further until the next try", "err", err)
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		n := 1
	more:
		for n < cap(slots) {
			select {
			case slots <- struct{}{}:
				n++
			default:
				break more
			}
		}
		leases, err := s.box.ClaimSubscriptions(ctx, n, s.cfg.Lease)
		for range n - len(leases) {
			<-slots
		}
		for _, l := range leases {
			wg.Go(func() {
				defer func() { <-slots }()
				s.deliver(work, l)
			})
		}
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() == nil:
			wait = policy.Delay(failures)
			failures++
			s.log.Warn("claiming subscriptions failed; retrying", "err", err, "retry_in_ms", wait.Milliseconds())
		case err != nil:
		case len(leases) < n:
			failures = 0
			wait = s.cfg.PollInterval
		default:
			failures = 0
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(s.cfg.DrainTimeout):
		s.log.Warn("deliveries still running at the drain deadline; cutting them", "drain_timeout_ms", s.cfg.DrainTimeout.Milliseconds())
		cut()
		<-drained
	}
	return nil
}

// recordTimeout bounds writing an attempt's outcome or giving a lease
// back, which must happen even when the delivery was cut. Each write gets
// its own deadline, started when the write starts: the outcome's only once
// the send has ended. A send may take its sender's whole timeout (a webhook
// 10s, an SMTP session 30s by default) and a deadline started before it
// would run out with it, leaving a hang unrecorded (attempts 0, never
// paused) and a slow delivery unrecorded, sent again at every lease.
//
// The lease must cover the whole delivery: PendingBatch, the send (at most
// the sender's timeout T) and this record (milliseconds on a healthy
// database, at most recordTimeout). cmd/notifier wants Lease >= 2T, so a
// send that took all of T still leaves T for the record. A record that
// outlives the lease anyway (a sick database, T < recordTimeout) still
// lands unless another notifier has claimed the subscription meanwhile;
// then the store refuses it with watch.ErrLeaseLost, and that notifier's
// send is a repeat under the same webhook-id, which at least once allows.
const recordTimeout = 10 * time.Second

// deliver sends lease l's next batch and records the outcome.
func (s *Service) deliver(ctx context.Context, l watch.Lease) {
	sub := l.Subscription
	log := s.log.With("subscription_id", sub.ID, "channel", string(sub.Channel))
	// recording returns a context for one write to the store, outliving
	// a cut ctx by recordTimeout.
	recording := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	}
	release := func(why string, err error) {
		s.deliveries.WithLabelValues(string(sub.Channel), "released").Inc()
		rctx, cancel := recording()
		defer cancel()
		if rerr := s.box.ReleaseLease(rctx, l); rerr != nil {
			log.Warn("releasing subscription failed; its lease will run out", "err", rerr)
		}
		if err != nil {
			log.Warn(why, "err", err)
		}
	}
	b, err := s.box.PendingBatch(ctx, l, s.cfg.MaxBatch)
	if err != nil {
		release("reading pending updates failed", err)
		return
	}
	if b.Empty() {
		release("", nil)
		return
	}
	log = log.With("message_id", b.ID, "updates", len(b.Updates), "events", len(b.Events))
	if until, held := b.ArticleHold(sub.WaitArticle, s.now()); held {
		// Looked at again within PollInterval, as an article may come any
		// moment; never later than the wait's end.
		next := s.now().Add(s.cfg.PollInterval)
		if until.Before(next) {
			next = until
		}
		s.deliveries.WithLabelValues(string(sub.Channel), "held").Inc()
		rctx, cancel := recording()
		defer cancel()
		if err := s.box.HoldDelivery(rctx, l, next); err != nil {
			log.Warn("holding the message for its articles failed; its lease will run out", "err", err)
			return
		}
		log.Debug("held for articles", "until", until)
		return
	}
	res := s.send(ctx, sub, b)
	if res.Err != nil && ctx.Err() != nil {
		// Cut by the drain deadline: not the target's fault.
		release("delivery cut at shutdown; the message will be sent again", res.Err)
		return
	}
	// The send has ended, however long it took: only now does the
	// record's deadline start.
	record, cancel := recording()
	defer cancel()
	if res.Err == nil {
		err := s.box.CompleteDelivery(record, l, b, watch.Attempt{ResponseCode: res.Code})
		if err != nil {
			// Delivered but not recorded: the batch goes out again under the
			// same id, which receivers drop.
			log.Warn("delivered, but recording it failed; the message will be sent again", "err", err)
			return
		}
		s.deliveries.WithLabelValues(string(sub.Channel), "delivered").Inc()
		s.updates.Add(float64(len(b.Updates)))
		s.events.Add(float64(len(b.Events)))
		now := s.now()
		for _, u := range b.Updates {
			s.latency.Observe(now.Sub(u.DiscoveredAt).Seconds())
		}
		log.Debug("delivered", "code", res.Code)
		return
	}
	delay := backoff.Policy{Min: s.cfg.RetryMin, Max: s.cfg.RetryMax}.Delay(l.Attempts)
	paused, err := s.box.FailDelivery(record, l, b, watch.Attempt{
		ResponseCode: res.Code, Error: watch.ErrorLine(res.Err.Error()), RetryAt: s.now().Add(delay),
		PauseNow: res.Gone, PauseAfter: s.cfg.PauseAfter,
	})
	switch {
	case err != nil:
		log.Warn("delivery failed, and recording it failed too", "delivery_err", res.Err, "err", err)
	case paused:
		s.deliveries.WithLabelValues(string(sub.Channel), "paused").Inc()
		log.Warn("delivery failed; subscription paused (watchctl notify resume restarts it)", "code", res.Code, "err", res.Err)
	default:
		s.deliveries.WithLabelValues(string(sub.Channel), "failed").Inc()
		log.Info("delivery failed; will retry", "code", res.Code, "err", res.Err, "attempts", l.Attempts+1, "retry_in_ms", delay.Milliseconds())
	}
}

func (s *Service) send(ctx context.Context, sub watch.Subscription, b watch.Batch) watch.SendResult {
	sender, ok := s.senders[sub.Channel]
	if !ok {
		return watch.SendResult{Err: fmt.Errorf("no %s sender is configured (for e-mail, set PORTALWATCH_SMTP_URL)", sub.Channel)}
	}
	return sender.Send(ctx, sub, b.Type(), b)
}

// SendTest sends a test message to sub through the sender of its channel,
// outside any lease, leaving its cursor and log alone.
func SendTest(ctx context.Context, senders map[watch.Channel]Sender, sub watch.Subscription, sample watch.Batch) watch.SendResult {
	sender, ok := senders[sub.Channel]
	if !ok {
		return watch.SendResult{Err: errors.New("no " + string(sub.Channel) + " sender is configured (for e-mail, set PORTALWATCH_SMTP_URL)")}
	}
	return sender.Send(ctx, sub, watch.TypeTest, sample)
}

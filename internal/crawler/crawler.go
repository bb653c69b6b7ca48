// Package crawler checks pages: for each job it fetches the page, walks its
// DOM breadth-first for links, publishes the result as a task and waits for
// the broker's confirm; only then is the job acked. A check that fails still
// becomes a task carrying the failure, so the page's error is recorded.
package crawler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Fetcher fetches one page.
type Fetcher interface {
	Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error)
}

// Publisher publishes messages and returns once the broker confirmed them.
type Publisher interface {
	Publish(ctx context.Context, queue string, msgs ...watch.Message) error
}

// Config configures the crawler.
type Config struct {
	// TaskQueue is where tasks go.
	TaskQueue string
	// Limits bounds the DOM walk.
	Limits domwalk.Limits
	// PublishTimeout bounds the wait for the broker to take a task; after it
	// the job returns to its queue. Default DefaultPublishTimeout, 60s.
	PublishTimeout time.Duration
	// ParseConcurrency bounds the pages parsed at once; fetches go on
	// meanwhile. Default DefaultParseConcurrency(), the number of CPUs: a
	// DOM takes ten times its page's size, so parsing more pages than there
	// are cores costs memory and gains nothing. At most 1000.
	ParseConcurrency int `env:"PORTALWATCH_PARSE_CONCURRENCY"`
	// CheckTimeout bounds everything a check does before its page is in
	// hand: reading robots.txt, any politeness wait and the fetch itself, so
	// a host that trickles both its robots.txt and its page holds a worker
	// for this long, not for twice the fetch timeout. At least 100ms;
	// default DefaultCheckTimeout, 45s.
	CheckTimeout time.Duration `env:"PORTALWATCH_CHECK_TIMEOUT"`
	// Gate, when set, caps the checks of one origin in flight across all
	// crawlers. Handle holds a job of a full origin without a worker and
	// asks again within milliseconds, for up to BusyDelay; then, and in
	// Check at once, the check is deferred by BusyDelay to twice that.
	// Default nil: no cap.
	Gate HostGate
	// Budget, when set with a positive HostSpacing, books the slot of a
	// job that came without one, or whose slot went stale in the queue, so
	// that Handle holds the job until it rather than the fetcher sleeping
	// for it in a worker; a slot further than MaxSlotWait defers the
	// check. The programs wire the gate, the fetcher's
	// PORTALWATCH_HOST_SPACING and PORTALWATCH_MAX_POLITE_WAIT.
	Budget      Budget
	HostSpacing time.Duration
	MaxSlotWait time.Duration // default DefaultMaxSlotWait, 5s
	// BusyDelay is how long Handle keeps asking Gate for a job's place,
	// and how long a check turned away is then deferred, at least.
	// Default DefaultBusyDelay, 5s.
	BusyDelay time.Duration
	// ParseMemory bounds, in bytes, the pages one crawler holds between
	// fetch and publish: each counts its body plus its parse's bound
	// (domwalk.ParseCost), from when its body is read until its parse ends,
	// waiting for a parse slot included. A page costing more than the whole
	// budget is parsed alone. From 1 MiB to 16 GiB; default
	// DefaultParseMemory, 64 MiB.
	ParseMemory int64 `env:"PORTALWATCH_PARSE_MEMORY"`
	// MaxTaskBytes bounds the encoded size of one task: the links past it
	// are left out and counted in Task.Truncated. From 64 KiB to 64 MiB,
	// under RabbitMQ's 128 MiB message limit; default DefaultMaxTaskBytes,
	// 4 MiB.
	MaxTaskBytes int `env:"PORTALWATCH_MAX_TASK_BYTES"`
	// SitemapMaxBytes caps a news sitemap's body after decompression (a
	// gzip file unpacked), in place of the fetcher's body cap: the
	// protocol allows 50 MB. A sitemap is streamed through its reader,
	// never held whole, so the cap bounds time, not memory; a longer one
	// fails its check as too large. From 1 KiB to 1 GiB; default
	// DefaultSitemapMaxBytes, 50 MiB.
	SitemapMaxBytes int64 `env:"PORTALWATCH_SITEMAP_MAX_BYTES"`
	// Secrets opens the sealed values of the secret headers jobs carry
	// (Cookie, Authorization…), just before the fetch; the program wires
	// PORTALWATCH_SECRETS_KEY. Nil: the check of a page with a secret
	// header fails, with an error that says to set the key.
	Secrets watch.Sealer
	// Discoverer runs the discoveries of pages' feeds and news sitemaps
	// (jobs with Discover), with the crawler's fetch client; nil fails
	// them with a message. DiscoveryTimeout bounds one; default
	// DefaultDiscoveryTimeout, 2m.
	Discoverer       Discoverer
	DiscoveryTimeout time.Duration
	// Archive, when set, keeps the page as fetched for every check that
	// read a new body and sends links (docs/archive.md); the task carries
	// where (Task.Snapshot). Nil: nothing is archived.
	Archive Archiver
}

// Archiver writes the WARC records of one check and says where they are.
type Archiver interface {
	Archive(ctx context.Context, pageID int64, checkID string, cp watch.Capture, original *watch.SnapshotOriginal) (watch.SnapshotRef, error)
}

// DefaultCheckTimeout is Config.CheckTimeout's default: the fetch's own 30s
// default plus room for robots.txt and a short politeness wait.
const DefaultCheckTimeout = 45 * time.Second

// DefaultMaxSlotWait is Config.MaxSlotWait's default, the fetcher's own
// longest polite wait.
const DefaultMaxSlotWait = 5 * time.Second

// DefaultSitemapMaxBytes is Config.SitemapMaxBytes' default, the sitemap
// protocol's 50 MB (read as MiB, the larger).
const DefaultSitemapMaxBytes = 50 << 20

// DefaultPublishTimeout is Config.PublishTimeout's default.
const DefaultPublishTimeout = 60 * time.Second

// DefaultParseConcurrency returns Config.ParseConcurrency's default: the
// number of CPUs this process may use (runtime.GOMAXPROCS).
func DefaultParseConcurrency() int { return runtime.GOMAXPROCS(0) }

// WithDefaults returns a copy of c with every unset (zero) field given its
// default; Gate stays nil (no cap) when unset.
func (c Config) WithDefaults() Config {
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.ParseConcurrency == 0 {
		c.ParseConcurrency = DefaultParseConcurrency()
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.BusyDelay == 0 {
		c.BusyDelay = DefaultBusyDelay
	}
	if c.MaxSlotWait == 0 {
		c.MaxSlotWait = DefaultMaxSlotWait
	}
	if c.ParseMemory == 0 {
		c.ParseMemory = DefaultParseMemory
	}
	if c.MaxTaskBytes == 0 {
		c.MaxTaskBytes = DefaultMaxTaskBytes
	}
	if c.SitemapMaxBytes == 0 {
		c.SitemapMaxBytes = DefaultSitemapMaxBytes
	}
	if c.DiscoveryTimeout == 0 {
		c.DiscoveryTimeout = DefaultDiscoveryTimeout
	}
	c.Limits = c.Limits.WithDefaults()
	return c
}

// Validate refuses what no default can mend, naming every bad field; Limits
// has its own Validate.
func (c Config) Validate() error {
	return errors.Join(
		config.AtLeast("PublishTimeout", c.PublishTimeout, 0),
		config.Between("ParseConcurrency", c.ParseConcurrency, 1, 1000),
		config.AtLeast("CheckTimeout", c.CheckTimeout, 100*time.Millisecond),
		config.AtLeast("BusyDelay", c.BusyDelay, 0),
		config.AtLeast("HostSpacing", c.HostSpacing, 0),
		config.AtLeast("MaxSlotWait", c.MaxSlotWait, 0),
		config.Between("ParseMemory", c.ParseMemory, 1<<20, 16<<30),
		config.Between("MaxTaskBytes", c.MaxTaskBytes, 64<<10, 64<<20),
		config.Between("SitemapMaxBytes", c.SitemapMaxBytes, 1<<10, 1<<30),
	)
}

// Service is the crawler.
type Service struct {
	cfg     Config
	parsing *parseGate
	fetcher Fetcher
	pub     Publisher
	log     *slog.Logger
	metrics metrics
	// patterns keeps the pages' ignore patterns compiled.
	patterns *patternCache
	// digestSalt goes into every body digest (watch.FetchRequest): what
	// decides the links read from a body besides the body and the job.
	digestSalt string
}

type metrics struct {
	checks   *prometheus.CounterVec
	duration prometheus.Histogram
	links    prometheus.Histogram
	held     *prometheus.CounterVec
	archived *prometheus.CounterVec
}

// New returns a crawler with cfg's defaults applied (Config.WithDefaults).
// Its metrics are registered with reg. It returns an error naming every
// field of cfg out of range.
func New(cfg Config, f Fetcher, pub Publisher, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := errors.Join(cfg.Validate(), cfg.Limits.Validate()); err != nil {
		return nil, fmt.Errorf("crawler: %w", err)
	}
	m := metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_crawler_checks_total", Help: "Page checks, by outcome.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "portalwatch_crawler_check_seconds", Help: "Time to fetch and walk one page.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		links: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "portalwatch_crawler_links_per_page", Help: "Links found per page.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		held: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_crawler_jobs_held_total",
			Help: "Jobs handed back to wait without a worker, by reason: their booked slot was ahead, or their origin was busy.",
		}, []string{"reason"}),
	}
	m.archived = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "portalwatch_crawler_archived_total",
		Help: "Checks whose page was archived as WARC records, by outcome: stored, revisit (an identical payload referred to), failed.",
	}, []string{"outcome"})
	reg.MustRegister(m.checks, m.duration, m.links, m.held, m.archived)
	return &Service{cfg: cfg, parsing: newParseGate(cfg.ParseMemory, cfg.ParseConcurrency), fetcher: f, pub: pub, log: log, metrics: m,
		patterns: newPatternCache(reg), digestSalt: digestSalt(cfg)}, nil
}

// digestSalt names what, besides the body and the job's options, decides
// the links a crawler reads from a body: its limits and task budget, and
// its build, whose parser may read a body otherwise. After a change of
// either, every page is parsed once again before a body is skipped.
func digestSalt(cfg Config) string {
	build := "unknown build"
	if info, ok := debug.ReadBuildInfo(); ok {
		build = info.Main.Version
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				build += " " + s.Value
			}
		}
	}
	return fmt.Sprintf("%s|%+v|%d", build, cfg.Limits, cfg.MaxTaskBytes)
}

// Handle handles one job delivery: a job that cannot be decoded is marked
// permanent (dead-lettered); a task that cannot be published in time returns
// the job to its queue; everything else, failed fetches included, acks it.
//
// A job is handed back to the consumer (*watch.Later), holding no worker,
// while its booked slot is ahead and, for up to BusyDelay, while its origin
// has the most checks in flight; past that the check is deferred.
func (s *Service) Handle(ctx context.Context, d watch.Delivery) error {
	job, err := watch.DecodeJob(d.Body)
	if err != nil {
		s.metrics.checks.WithLabelValues("malformed").Inc()
		return watch.Permanent(err)
	}
	if job.Discover {
		// A discovery paces each of its fetches in the fetcher; it books
		// no slot of its own.
		return s.publish(ctx, job, s.discoverSources(ctx, job))
	}
	now := time.Now()
	// A slot booked before the job was held (by the scheduler, or by this
	// crawler for a job whose slot went stale in the queue) is kept.
	if slot, ok := d.State.(*watch.Slot); ok {
		job.Slot = slot
	}
	var task watch.Task
	if job.Slot == nil || job.Slot.Stale(now) {
		slot, deferTo := s.bookSlot(ctx, job)
		if !deferTo.IsZero() {
			task = s.deferred(job, deferTo, "its origin's next slot is too far away")
			return s.publish(ctx, job, task)
		}
		job.Slot = slot
	}
	if slot := job.Slot; slot != nil && slot.At.Sub(now) > slotSlack {
		s.metrics.held.WithLabelValues("slot").Inc()
		return &watch.Later{At: slot.At, Reason: "fetch slot booked", State: slot}
	}
	leave, admitted := s.admit(ctx, job.BaseURL)
	switch {
	case admitted && job.Source != nil:
		task = s.checkSource(ctx, job, leave)
	case admitted:
		task = s.check(ctx, job, leave)
	case d.HeldSince.IsZero() || now.Sub(d.HeldSince) < s.cfg.BusyDelay:
		s.metrics.held.WithLabelValues("busy").Inc()
		return &watch.Later{At: now.Add(busyRetry(d.Holds)), Reason: "origin busy", State: job.Slot}
	default:
		task = s.deferBusy(job)
	}
	return s.publish(ctx, job, task)
}

// publish sends the task of job and waits for the broker's confirm.
func (s *Service) publish(ctx context.Context, job watch.Job, task watch.Task) error {
	body, err := watch.EncodeTask(task)
	if err != nil {
		return watch.Permanent(fmt.Errorf("encode task of page %d: %w", job.ID, err))
	}
	pubCtx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	if err := s.pub.Publish(pubCtx, s.cfg.TaskQueue, watch.Message{Body: body}); err != nil {
		return fmt.Errorf("publish task of page %d: %w", job.ID, err)
	}
	return nil
}

// Check fetches the job's page (or its feed or sitemap, or runs its
// discovery) and returns its task: its links, the failure, or, when its
// origin has the most checks in flight (Config.Gate) or its next polite
// slot is too far away to wait for, the time the check is deferred to
// (Task.DeferredUntil).
func (s *Service) Check(ctx context.Context, job watch.Job) watch.Task {
	if job.Discover {
		return s.discoverSources(ctx, job)
	}
	leave, admitted := s.admit(ctx, job.BaseURL)
	if !admitted {
		return s.deferBusy(job)
	}
	if job.Source != nil {
		return s.checkSource(ctx, job, leave)
	}
	return s.check(ctx, job, leave)
}

// check is Check of a job admitted by the gate; leave ends the admission.
func (s *Service) check(ctx context.Context, job watch.Job, leave func()) watch.Task {
	start := time.Now()
	log := s.log.With("page_id", job.ID, "url", job.BaseURL)
	if job.Proxy != "" {
		log = log.With("proxy", job.Proxy)
	}
	task := watch.Task{BaseURL: job.BaseURL, ID: job.ID, Context: []watch.Link{}}
	headers, err := s.openHeaders(job)
	if err != nil {
		leave()
		task.FetchedAt = time.Now().UTC()
		task.Error = err.Error()
		s.metrics.checks.WithLabelValues("headers_refused").Inc()
		log.Warn("page headers not opened", "err", task.Error)
		return task
	}
	fetchCtx, cancel := context.WithTimeout(ctx, s.cfg.CheckTimeout)
	req := watch.FetchRequest{URL: job.BaseURL, ETag: job.ETag, LastModified: job.LastModified, DigestSalt: s.digestSalt, Slot: job.Slot,
		Header: headers, Proxy: job.Proxy, WaitFor: job.WaitFor, RenderAllow: job.RenderAllow, Capture: s.cfg.Archive != nil}
	if job.LinksDigest != "" {
		// A body digest vouches for the links only while their digest
		// does: the store clears both when the set must be read again.
		req.BodyDigest = job.BodyDigest
	}
	res, err := s.fetcher.Fetch(fetchCtx, req)
	cancel()
	leave()
	task.Status, task.FetchedAt, task.Rendered = res.Status, res.FetchedAt, res.Rendered
	if task.FetchedAt.IsZero() {
		task.FetchedAt = time.Now().UTC()
	}
	// Response strings came from the network: cleaned before they travel.
	if res.FinalURL != nil {
		task.FinalURL = watch.CleanText(res.FinalURL.String())
	}
	task.ETag, task.LastModified = watch.CleanText(res.ETag), watch.CleanText(res.LastModified)
	defer func() { s.metrics.duration.Observe(time.Since(start).Seconds()) }()
	if until, ok := deferredUntil(err); ok {
		// Not a failure: the page is checked at until, and nothing is
		// recorded about it meanwhile.
		task.DeferredUntil = until
		s.metrics.checks.WithLabelValues("deferred").Inc()
		log.Debug("check deferred", "until", until, "reason", err)
		return task
	}
	if err != nil {
		task.Error = watch.CleanText(err.Error())
		s.metrics.checks.WithLabelValues("fetch_failed").Inc()
		log.Info("fetch failed", "status", res.Status, "err", task.Error, "kind", watch.FetchKindOf(err).String())
		return task
	}
	if res.NotModified {
		s.metrics.checks.WithLabelValues("not_modified").Inc()
		return task
	}
	task.BodyDigest = res.BodyDigest
	if res.SameBody {
		// The body the last recorded check read, byte for byte: its links
		// are recorded, and nothing needs decoding or parsing.
		task.Unchanged = true
		s.metrics.checks.WithLabelValues("same_body").Inc()
		return task
	}
	pageURL := res.FinalURL
	if pageURL == nil {
		pageURL, _ = url.Parse(job.BaseURL)
	}
	opts := s.patterns.compile(log, job)
	if opts != nil && opts.regionsErr != nil {
		task.Error = opts.regionsErr.Error()
		s.metrics.checks.WithLabelValues("options_refused").Inc()
		return task
	}
	// Read before the links, so that a page whose links are unchanged (or
	// whose regions fail) still shows its current title.
	task.Title = watch.CleanText(domwalk.Title(res.HTML, s.cfg.Limits.MaxTextRunes))
	parsed, err := s.parsing.enter(ctx, res.HTML, s.cfg.Limits)
	if err != nil {
		task.Error = fmt.Sprintf("stopped before parsing %s: %v", job.BaseURL, err)
		return task
	}
	links, stats, err := domwalk.ParseBytesIn(res.HTML, pageURL, s.cfg.Limits, opts.regionsOf())
	parsed()
	if err != nil {
		// Only ErrRegionsNeedTree: the page is too big or deep for its
		// regions to be applied.
		task.Error = fmt.Sprintf("check %s: %v", job.BaseURL, err)
		s.metrics.checks.WithLabelValues("options_refused").Inc()
		log.Info("regions not applicable", "err", err, "over_tree_budget", stats.OverTreeBudget)
		return task
	}
	if vendor := challengeOf(res.HTML, task.Title, stats.Links); vendor != "" {
		// Not the page: recording its few links would report them as new
		// and the real ones as gone.
		task.Challenge = vendor
		task.Error = fmt.Sprintf("the site answered %s with a %s challenge page (a bot check) instead of the page: "+
			"its checks see nothing until the site lets the crawler through; lower the page's check rate or ask the site to allow it", job.BaseURL, vendor)
		s.metrics.checks.WithLabelValues("challenge").Inc()
		log.Info("challenge page", "vendor", vendor, "links", stats.Links)
		return task
	}
	task.Truncated = stats.LinksOverCap
	// A walk cut short by a cap may have stopped before the region: no
	// match then proves nothing.
	if regions := opts.regionsOf(); regions.HasWithin() && stats.WithinMatched == 0 && !stats.NodesCapped && !stats.DepthCapped {
		task.MissedRegions = job.Options.Within
	}
	walked := len(links)
	task.Scripted = !res.Rendered && walked <= watch.ScriptedMaxLinks && hasScripts(res.HTML)
	links = filter(links, job, opts.patternsOf())
	rankKept(links, walked)
	kept := len(links) + stats.LinksOverCap
	task.Kept = &kept
	// Cut to the task's budget before the digest, so that the digest is of
	// the links sent, which are the ones the processor records.
	task.Followed = job.Followed // counted in the task's bytes
	links, cut := fitTask(task, links, s.cfg.MaxTaskBytes)
	task.Truncated += cut
	if task.Truncated > 0 || stats.Truncated() || stats.OverTreeBudget {
		log.Info("page cut by a limit", "truncated", task.Truncated, "kept", len(links),
			"over_link_cap", stats.LinksOverCap, "over_tree_budget", stats.OverTreeBudget,
			"nodes_capped", stats.NodesCapped, "depth_capped", stats.DepthCapped)
	}
	urls, texts := make([]string, len(links)), make([]string, len(links))
	for i, l := range links {
		urls[i], texts[i] = l.URL, l.Text
	}
	if job.LinksDigest != "" && shortlink.SetDigest(urls, texts) == job.LinksDigest {
		// Every one of these links is recorded already, with this text:
		// say so instead of sending them all again.
		task.Unchanged, task.Followed = true, nil // nothing to compare
		s.metrics.checks.WithLabelValues("unchanged").Inc()
		return task
	}
	task.Context = links
	task.Snapshot = s.archive(ctx, log, job, res.Capture)
	s.metrics.checks.WithLabelValues("ok").Inc()
	s.metrics.links.Observe(float64(len(links)))
	log.Debug("page checked", "links", len(links), "nodes", stats.Nodes, "charset", res.Charset,
		"elapsed_ms", time.Since(start).Milliseconds())
	return task
}

// archive writes the check's exchange into the archive and returns its
// ref, nil when archiving is off or failed: a check is worth more than its
// snapshot, so a full or broken archive costs the evidence, logged, never
// the check.
func (s *Service) archive(ctx context.Context, log *slog.Logger, job watch.Job, cp *watch.Capture) *watch.SnapshotRef {
	if s.cfg.Archive == nil || cp == nil {
		return nil
	}
	ref, err := s.cfg.Archive.Archive(ctx, job.ID, watch.NewCheckID(), *cp, job.Snapshot)
	if err != nil {
		s.metrics.archived.WithLabelValues("failed").Inc()
		log.Warn("page not archived", "err", err)
		return nil
	}
	outcome := "stored"
	if ref.RevisitOf != "" {
		outcome = "revisit"
	}
	s.metrics.archived.WithLabelValues(outcome).Inc()
	return &ref
}

// openHeaders returns the headers of job in clear, the secrets opened
// with Config.Secrets. Its error, for the page, names the header and what
// to do; it never holds a value.
func (s *Service) openHeaders(job watch.Job) ([]watch.Header, error) {
	if len(job.Headers) == 0 {
		return nil, nil
	}
	out := make([]watch.Header, 0, len(job.Headers))
	for _, h := range job.Headers {
		if h.Sealed == "" {
			out = append(out, watch.Header{Name: h.Name, Value: h.Value})
			continue
		}
		if s.cfg.Secrets == nil {
			return nil, fmt.Errorf("the page sends a %s header, sealed, and this crawler has no PORTALWATCH_SECRETS_KEY to open it: "+
				"give the crawlers the key web and watchctl seal with", h.Name)
		}
		value, err := s.cfg.Secrets.Open(job.ID, h.Name, h.Sealed)
		if err != nil {
			return nil, fmt.Errorf("the page's %s header: %w", h.Name, err)
		}
		out = append(out, watch.Header{Name: h.Name, Value: value})
	}
	return out, nil
}

// rankKept numbers the places of links, the ones kept of the walked links
// that the walk placed 1 to walked, from 1 in the same order, so that a
// position counts only the links the page's options admit: a story under
// ten ignored navigation links is still the first. It costs nothing when
// every link was kept.
func rankKept(links []watch.Link, walked int) {
	if len(links) == walked {
		return
	}
	at := make([]int32, walked+1) // at[p] is 1 + the index of the kept link placed p
	for i, l := range links {
		if p := l.Position; p > 0 && p <= walked {
			at[p] = int32(i + 1)
		}
	}
	rank := 0
	for _, i := range at {
		if i > 0 {
			rank++
			links[i-1].Position = rank
		}
	}
}

// filter applies the page's own link options: same-site only, and ignore
// patterns and keyword rules, compiled.
func filter(links []watch.Link, job watch.Job, patterns watch.Patterns) []watch.Link {
	if job.Options == nil || (!job.Options.SameSiteOnly && patterns.Empty()) {
		return links
	}
	var host string
	if u, err := url.Parse(job.BaseURL); err == nil {
		host = u.Hostname()
	}
	kept := links[:0]
	for _, l := range links {
		if job.Options.SameSiteOnly && !urlnorm.SameSite(host, l.URL) || !patterns.Admits(l.URL, l.Text, l.Summary) {
			continue
		}
		kept = append(kept, l)
	}
	return kept
}

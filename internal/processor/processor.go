// Package processor records what crawlers found: for each task it asks the
// Redis seen-set which links are certainly old, lets PostgreSQL decide about
// the rest in one transaction (new links into links and updates, the page's
// status), fills the seen-set after the commit, and only then acks.
package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Recorder records a check of a page, PostgreSQL deciding what is new, or
// that a check was deferred.
type Recorder interface {
	// RecordCheckRetitling records a check, and calls retitling with the
	// headlines it replaced before its commit (watch.Retitling).
	RecordCheckRetitling(ctx context.Context, c watch.Check, links []watch.NewLink, retitling watch.Retitling) (watch.Recorded, error)
	DeferCheck(ctx context.Context, pageID int64, decidedAt, until time.Time) error
	RefreshLinks(ctx context.Context, pageID int64, keys []uint64, digest string) error
	// RecordRemovals records the due removals of the pages ids and returns
	// how many; a page without any is left alone.
	RecordRemovals(ctx context.Context, ids []int64) (int64, error)
	// PagesWithDueRemovals lists up to limit pages with due removals not
	// yet recorded; it reads every page's row.
	PagesWithDueRemovals(ctx context.Context, limit int) ([]int64, error)
}

// SeenSet is the cache of each page's known links, each under its SeenCode.
type SeenSet interface {
	Seen(ctx context.Context, pageID int64, codes []uint64) ([]bool, error)
	Add(ctx context.Context, pageID int64, codes []uint64) error
	Remove(ctx context.Context, pageID int64, codes []uint64) error
}

// Config configures the processor.
type Config struct {
	// CodeLength is the length of the short codes, from MinCodeLength to
	// MaxCodeLength. Default shortlink.DefaultLength.
	CodeLength int `env:"PORTALWATCH_CODE_LENGTH"`
	// Backoff spaces retries while the database is unavailable.
	Backoff backoff.Policy
	// Caps bound the new links one check of a page records, PerCheck at
	// most 1,000,000 and PerDay 100,000,000; zero fields mean no cap (the
	// zero value). The programs use DefaultCaps. What is cut shows on the
	// page (watch.Page.LastCut).
	Caps watch.Caps
	// LinkRefresh is how often a page's links' last-seen times are refreshed
	// from a whole link set, which link retention needs; zero never. One
	// refresh costs one statement over the page's links (RefreshLinks), so
	// it runs once per period per page, not on every check.
	LinkRefresh time.Duration
	// Burst says when a check's new links are a redesign flood; the zero
	// Burst flags none. With a Share, Min is 1 to 1,000,000.
	Burst watch.Burst
	// RemovalChecks is how many successful checks in a row a link must be
	// absent to be recorded as removed, at most 100; 0 records no removals.
	RemovalChecks int `env:"PORTALWATCH_REMOVAL_CHECKS"`
	// RemovalSweep is how often RunRemovalSweep records the due removals
	// that no claim has recorded yet, which reads every page's row.
	// Default 1h.
	RemovalSweep time.Duration
	// Revisions caps the headline revisions the checks of a page record;
	// the zero value records none. The programs use
	// watch.DefaultRevisionCaps.
	Revisions watch.RevisionCaps
	// Articles has each new link of a page that asks for it (Page.Articles)
	// read as an article by the extractor: the update is recorded with its
	// work. The programs default to true; false reads no page's articles.
	Articles bool `env:"PORTALWATCH_ARTICLES"`
	// ArchiveGrace is the archive sweep's grace (archive.SweepConfig.Grace):
	// a snapshot written more than half of it ago is not indexed, since the
	// sweep may have reclaimed its file by the time the check commits.
	// Default DefaultArchiveGrace, 24h.
	ArchiveGrace time.Duration
}

// DefaultArchiveGrace is Config.ArchiveGrace's default, the sweep's.
const DefaultArchiveGrace = 24 * time.Hour

// Limits and defaults of Config.
const (
	MinCodeLength = 6
	MaxCodeLength = shortlink.MaxLength
)

// DefaultCaps are the caps the programs use: a page that suddenly shows a
// thousand new links is more likely rebuilt than newsworthy.
var DefaultCaps = watch.Caps{PerCheck: 1000, PerDay: 20000}

// DefaultBurst is the burst rule the programs use: a check is a redesign
// when more than half of its links, and at least 20, are new.
var DefaultBurst = watch.Burst{Share: DefaultBurstShare, Min: DefaultBurstMin}

// The removal count and burst rule the programs use; a zero Config has
// neither (zero means off).
const (
	// DefaultRemovalChecks records a link as removed after two successful
	// checks without it: one absence is often a rotating teaser.
	DefaultRemovalChecks = 2
	// DefaultBurstShare and DefaultBurstMin call a check a redesign when
	// more than half of its links, and at least 20, are new.
	DefaultBurstShare = 0.5
	DefaultBurstMin   = 20
	// DefaultRemovalSweep is rare: the claim of a page's next check
	// records its due removals, and the sweep reads the whole pages table.
	DefaultRemovalSweep = time.Hour
)

// WithDefaults returns a copy of c with every unset (zero) field given its
// default. Caps and LinkRefresh, where zero means none, are left as they are.
func (c Config) WithDefaults() Config {
	if c.CodeLength == 0 {
		c.CodeLength = shortlink.DefaultLength
	}
	if c.RemovalSweep == 0 {
		c.RemovalSweep = DefaultRemovalSweep
	}
	if c.ArchiveGrace == 0 {
		c.ArchiveGrace = DefaultArchiveGrace
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field.
func (c Config) Validate() error {
	errs := []error{
		config.Between("CodeLength", c.CodeLength, MinCodeLength, MaxCodeLength),
		config.Between("Caps.PerCheck", c.Caps.PerCheck, 0, 1_000_000),
		config.Between("Caps.PerDay", c.Caps.PerDay, 0, 100_000_000),
		config.AtLeast("LinkRefresh", c.LinkRefresh, 0),
		config.Between("Burst.Share", c.Burst.Share, 0, 1),
		config.Between("RemovalChecks", c.RemovalChecks, 0, 100),
		config.AtLeast("RemovalSweep", c.RemovalSweep, 0),
		config.Between("Revisions.PerCheck", c.Revisions.PerCheck, 0, 100_000),
		config.Between("Revisions.PerLink", c.Revisions.PerLink, 0, 1000),
	}
	if c.Burst.Share > 0 {
		errs = append(errs, config.Between("Burst.Min", c.Burst.Min, 1, 1_000_000))
	}
	return errors.Join(errs...)
}

// LinkRefreshFor returns the refresh period that link retention needs: often
// enough that a link still on its page is never older than the retention
// period, at most daily. Zero retention needs none.
func LinkRefreshFor(retention time.Duration) time.Duration {
	if retention <= 0 {
		return 0
	}
	return min(24*time.Hour, retention/8)
}

// Service is the processor.
type Service struct {
	cfg     Config
	store   Recorder
	seen    SeenSet
	log     *slog.Logger
	metrics metrics
	// stale holds old headlines' codes that Redis failed to drop.
	stale staleCodes
}

type metrics struct {
	tasks      *prometheus.CounterVec
	updates    prometheus.Counter
	cacheHits  prometheus.Counter
	cacheMiss  prometheus.Counter
	cacheFails prometheus.Counter
	cut        prometheus.Counter
	removals   prometheus.Counter
	revisions  prometheus.Counter
	retitled   prometheus.Counter
	recomputed prometheus.Counter
	health     *prometheus.CounterVec
	duration   prometheus.Histogram
	snapshots  *prometheus.CounterVec
}

// New returns a processor with cfg's defaults applied (Config.WithDefaults).
// Its metrics are registered with reg. It returns an error naming every
// field of cfg out of range.
func New(cfg Config, st Recorder, seen SeenSet, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("processor: %w", err)
	}
	m := metrics{
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_processor_tasks_total", Help: "Tasks handled, by outcome.",
		}, []string{"outcome"}),
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_updates_total", Help: "New links recorded in updates.",
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_seen_cache_hits_total", Help: "Links the Redis seen-set knew.",
		}),
		cacheMiss: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_seen_cache_misses_total", Help: "Links sent to PostgreSQL to decide.",
		}),
		cacheFails: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_seen_cache_errors_total", Help: "Redis calls that failed (treated as misses).",
		}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_links_cut_total", Help: "New links not recorded because their page reached a cap.",
		}),
		removals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_removals_total", Help: "Links recorded as removed by the sweep for pages no claim reached (the scheduler's claims record the rest).",
		}),
		revisions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_revisions_total", Help: "Headline rewrites of known links recorded as revisions (link.rewritten events).",
		}),
		retitled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_retitled_total",
			Help: "Known links whose stored headline was brought up to date, revisions and silent updates (baselines, redesigns, caps) together.",
		}),
		recomputed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_processor_checks_recomputed_total",
			Help: "Checks whose removal tracking was computed from the page's row because their job's state was missing or stale.",
		}),
		health: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_processor_health_changes_total",
			Help: "Pages that a check turned degraded (reason: why) or healthy again (reason: recovered).",
		}, []string{"reason"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "portalwatch_processor_task_seconds", Help: "Time to handle one task.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	m.snapshots = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "portalwatch_processor_snapshots_total",
		Help: "Archived snapshots of checks, by outcome: indexed with its check, unindexed (a stale check, or a redelivered one indexed before), late or malformed (not indexed).",
	}, []string{"outcome"})
	reg.MustRegister(m.tasks, m.updates, m.cacheHits, m.cacheMiss, m.cacheFails, m.cut, m.removals, m.revisions, m.retitled, m.recomputed, m.health, m.duration,
		m.snapshots)
	return &Service{cfg: cfg, store: st, seen: seen, log: log, metrics: m}, nil
}

// Handle handles one task delivery. A task that cannot be decoded, or whose
// data PostgreSQL refuses, is marked permanent (dead-lettered). While the
// database is unavailable it retries in place with backoff, so an outage
// delays tasks instead of burning their delivery count; it gives up only when
// ctx ends, and the task returns to the queue.
func (s *Service) Handle(ctx context.Context, d watch.Delivery) error {
	start := time.Now()
	task, err := watch.DecodeTask(d.Body)
	if err != nil {
		s.metrics.tasks.WithLabelValues("malformed").Inc()
		return watch.Permanent(err)
	}
	s.stale.flush(ctx, func(ctx context.Context, pageID int64, codes []uint64) error {
		return s.seen.Remove(ctx, pageID, codes)
	})
	outcome, err := s.process(ctx, task)
	s.metrics.tasks.WithLabelValues(outcome).Inc()
	s.metrics.duration.Observe(time.Since(start).Seconds())
	return err
}

func (s *Service) process(ctx context.Context, task watch.Task) (outcome string, err error) {
	// Whatever a crawler sent came from the network: nothing of it is stored
	// or logged uncleaned. An error that cleans to nothing is still an error.
	failed := task.Failed()
	task.Error = watch.CleanText(task.Error)
	if failed && task.Error == "" {
		task.Error = "the crawler's error text was nothing but control characters"
	}
	task.BaseURL, task.FinalURL = watch.CleanText(task.BaseURL), watch.CleanText(task.FinalURL)
	if task.Status < 0 || task.Status > 999 {
		// Not an HTTP status; the database could not even be asked to store it,
		// and a client-side error would be retried forever.
		s.log.Warn("task carries an impossible HTTP status; recorded as 0", "page_id", task.ID, "status", task.Status)
		task.Status = 0
	}
	if task.Source != nil || task.Discover {
		return s.processSource(ctx, task)
	}
	if !task.DeferredUntil.IsZero() {
		return s.deferCheck(ctx, task)
	}
	check := watch.Check{
		PageID:       task.ID,
		FetchedAt:    task.FetchedAt,
		Status:       task.Status,
		Error:        task.Error,
		ETag:         watch.CleanText(task.ETag),
		LastModified: watch.CleanText(task.LastModified),
		Title:        watch.CleanText(task.Title),
		BodyDigest:   watch.CleanText(task.BodyDigest),
		Truncated:    task.Truncated,
		Caps:         s.cfg.Caps,
		FullSet:      !task.Failed() && !task.NotModified(),
		RefreshEvery: s.cfg.LinkRefresh,
		Burst:        s.cfg.Burst,
		Articles:     s.cfg.Articles,
		Revisions:    s.cfg.Revisions,
		Reading:      task.Reading(),
		Challenge:    watch.CleanText(task.Challenge),
		RenderHint:   task.RenderHint(),
	}
	if check.FetchedAt.IsZero() {
		check.FetchedAt = time.Now()
	}
	log := s.log.With("page_id", task.ID, "url", task.BaseURL)
	if check.FullSet {
		check.Snapshot = s.snapshotOf(log, task)
	}

	var (
		links []watch.NewLink
		codes []uint64 // codes of links, the candidates PostgreSQL decides
		keys  []uint64 // keys of the task's whole link set
	)
	if check.FullSet {
		links, codes, keys, check.LinksDigest = s.candidates(ctx, task)
		check.Links = len(keys)
	}
	check.Removals = s.removals(task, check, keys)

	rec, err := s.record(ctx, check, links)
	switch {
	case errors.Is(err, watch.ErrPageNotFound):
		log.Info("task for a removed page dropped")
		return "page_removed", nil
	case err != nil && watch.IsPermanent(err):
		return "rejected", s.recordRejection(ctx, check, err)
	case err != nil:
		return "interrupted", err
	}

	if rec.Cut > 0 {
		s.metrics.cut.Add(float64(rec.Cut))
		log.Info("new links cut by the page's caps; a later check records them if they stay", "cut", rec.Cut)
		codes = recordedCodes(links, codes, rec.Updates)
	}
	if rec.RefreshDue && check.FullSet {
		digest := check.LinksDigest
		if rec.Cut > 0 {
			digest = "" // the set is not all recorded: no digest may say it is
		}
		if err := s.store.RefreshLinks(ctx, task.ID, keys, digest); err != nil {
			log.Warn("links' last-seen times not refreshed; the next whole check tries again", "err", err)
		}
	}

	if rec.Recomputed {
		s.metrics.recomputed.Inc()
	}
	if check.Snapshot != nil {
		outcome := "unindexed"
		if rec.Snapshot > 0 {
			outcome = "indexed"
		}
		s.metrics.snapshots.WithLabelValues(outcome).Inc()
	}
	s.healthChanged(log, rec)

	// Only now, with the links committed, may the cache say "seen"; and
	// only for a check whose texts are the page's.
	if rec.Stale && len(codes) > 0 {
		log.Debug("stale check: its links stay out of the seen-set", "links", len(codes))
		codes = nil
	}
	if len(codes) > 0 {
		if err := s.seen.Add(ctx, task.ID, codes); err != nil {
			s.metrics.cacheFails.Inc()
			log.Warn("seen-set not updated; the next check asks PostgreSQL again", "err", err)
		}
	}
	s.retitled(log, rec)

	switch {
	case task.Failed():
		log.Info("check failed", "status", task.Status, "err", task.Error)
		return "failed", nil
	case task.Unchanged:
		return "unchanged", nil
	case task.NotModified():
		return "not_modified", nil
	case rec.Baseline:
		log.Info("baseline recorded", "links", rec.Inserted)
		return "baseline", nil
	case rec.Rebaseline:
		log.Info("re-baseline after an options change recorded", "links", rec.Inserted)
		return "rebaseline", nil
	case rec.Burst:
		log.Info("redesign flood recorded as one burst", "count", len(rec.Updates), "links", check.Links)
	}
	s.metrics.updates.Add(float64(len(rec.Updates)))
	if len(rec.Updates) > 0 {
		log.Info("new links", "count", len(rec.Updates))
		for _, u := range rec.Updates {
			log.Debug("new link", "link_url", u.URL, "text", u.Text, "code", u.Code)
		}
	}
	return "ok", nil
}

// candidates returns the task's links that the seen-set does not know, with
// their codes, and the keys and digest of the task's whole link set. Links
// are deduplicated by key, and their text made safe for PostgreSQL, whatever
// the crawler sent.
func (s *Service) candidates(ctx context.Context, task watch.Task) (links []watch.NewLink, codes, all []uint64, digest string) {
	links = make([]watch.NewLink, 0, len(task.Context))
	codes = make([]uint64, 0, len(task.Context))
	all = make([]uint64, 0, len(task.Context))
	sent := make([]string, 0, len(task.Context))
	keys := make(map[uint64]struct{}, len(task.Context))
	for _, l := range task.Context {
		if l.URL == "" {
			continue
		}
		url := watch.CleanText(l.URL)
		key := shortlink.Key(url)
		if _, dup := keys[key]; dup {
			continue
		}
		keys[key] = struct{}{}
		text := watch.CleanText(l.Text)
		links = append(links, watch.NewLink{Key: key, URL: url, Text: text, Code: shortlink.Code(key, s.cfg.CodeLength),
			Summary: watch.CleanText(l.Summary), Place: l.Place.Checked()})
		codes = append(codes, SeenCode(key, text))
		all = append(all, key)
		// The digest is of the texts as the crawler sent them, which is
		// what it compares: a text that cleaning changes would otherwise
		// never match, and its page never be found unchanged.
		sent = append(sent, l.Text)
	}
	digest = shortlink.KeySetDigest(all, sent)
	if s.stale.has(task.ID) {
		s.metrics.cacheMiss.Add(float64(len(links)))
		return links, codes, all, digest // see staleCodes
	}
	seen, err := s.seen.Seen(ctx, task.ID, codes)
	if err != nil {
		s.metrics.cacheFails.Inc()
		s.log.Warn("seen-set unavailable; PostgreSQL decides every link", "page_id", task.ID, "err", err)
		s.metrics.cacheMiss.Add(float64(len(links)))
		return links, codes, all, digest
	}
	n := 0
	for i := range links {
		if seen[i] {
			continue
		}
		links[n], codes[n] = links[i], codes[i]
		n++
	}
	s.metrics.cacheHits.Add(float64(len(links) - n))
	s.metrics.cacheMiss.Add(float64(n))
	return links[:n], codes[:n], all, digest
}

// SeenCode is what the seen-set holds for a link: 63 bits of a hash of its
// key and its text. A known link whose headline changed then reads as
// unseen and goes to PostgreSQL, which records the revision; the unchanged
// links of a page, nearly all of them, still cost PostgreSQL nothing. The
// top bit is left clear so that every code is a positive int64, which Redis
// keeps in the compact intset encoding. FNV-1a with a final mix: the codes
// must be the same in every process, so no seeded hash will do, and a
// collision within one page (odds about n squared over 2^64) hides a link.
func SeenCode(key uint64, text string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := range 8 {
		h = (h ^ (key >> (8 * i) & 0xff)) * prime
	}
	for i := 0; i < len(text); i++ {
		h = (h ^ uint64(text[i])) * prime
	}
	// The murmur3 finaliser spreads every input bit over the low bits,
	// which pick a code's bucket.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h >> 1
}

// retitled counts the headlines a check brought up to date; their old
// texts left the seen-set before its commit (dropOldTexts).
func (s *Service) retitled(log *slog.Logger, rec watch.Recorded) {
	if len(rec.Retitled) == 0 {
		return
	}
	s.metrics.retitled.Add(float64(len(rec.Retitled)))
	s.metrics.revisions.Add(float64(rec.Revisions))
	if rec.Revisions > 0 {
		log.Info("headlines rewritten", "revisions", rec.Revisions)
	} else {
		log.Info("headlines brought up to date without revisions", "links", len(rec.Retitled))
	}
}

// dropOldTexts removes the codes of the headlines a check replaced from the
// page's seen-set, before the check commits (watch.Retitling), so that a
// headline changed back is seen as a rewrite again, even when the process
// dies right after the commit. Codes Redis fails to drop wait in s.stale.
func (s *Service) dropOldTexts(ctx context.Context, pageID int64, retitled []watch.Retitled) {
	old := make([]uint64, len(retitled))
	for i, r := range retitled {
		old[i] = SeenCode(r.Key, r.OldText)
	}
	if err := s.seen.Remove(ctx, pageID, old); err != nil {
		s.metrics.cacheFails.Inc()
		s.log.Warn("old headlines not dropped from the seen-set; the page skips the cache until they are",
			"page_id", pageID, "err", err)
		if dropped := s.stale.add(pageID, old); dropped > 0 {
			s.log.Error("too many old headlines wait to leave the seen-set; some pages trust it again early",
				"dropped", dropped)
		}
	}
}

// recordedCodes returns the codes of the links that went into updates. After
// a check whose caps cut links, only those may enter the seen-set: a cut link
// is not in PostgreSQL, and a cache that called it seen would keep it from
// ever being recorded. The old links among the candidates stay out of the
// cache until a check without cuts; they only cost PostgreSQL a lookup.
func recordedCodes(links []watch.NewLink, codes []uint64, updates []watch.Update) []uint64 {
	recorded := make(map[string]struct{}, len(updates))
	for _, u := range updates {
		recorded[u.Code] = struct{}{}
	}
	kept := make([]uint64, 0, len(updates))
	for i, l := range links {
		if _, ok := recorded[l.Code]; ok {
			kept = append(kept, codes[i])
		}
	}
	return kept
}

// healthChanged logs and counts a check that turned its page degraded or
// healthy again (watch.Recorded.Changed), the moments people are told of.
func (s *Service) healthChanged(log *slog.Logger, rec watch.Recorded) {
	switch h := rec.Health; {
	case !rec.Changed:
	case h.Degraded():
		s.metrics.health.WithLabelValues(string(h.Reason)).Inc()
		log.Warn("page degraded: its watch may be blind", "reason", string(h.Reason), "detail", h.Detail)
	default:
		s.metrics.health.WithLabelValues("recovered").Inc()
		log.Info("page recovered: a healthy check")
	}
}

// recordRejection records, when PostgreSQL refused a check for good, a
// failure on the page in its place, which also frees the page's lease, and
// returns the permanent error that dead-letters the task. Without it the
// page would show nothing of the check and stay leased until the lease ran
// out. An error while recording the failure is transient (the task returns
// to its queue) or permanent too (it is logged, and the task dead-lettered).
func (s *Service) recordRejection(ctx context.Context, c watch.Check, rejected error) error {
	// Only values the processor chose: any of the check's may be what was
	// refused, its fetch time included.
	failure := watch.Check{
		PageID:    c.PageID,
		FetchedAt: time.Now(),
		Error:     watch.CleanText("the database refused this check's data: " + rejected.Error()),
	}
	_, err := s.record(ctx, failure, nil)
	switch {
	case err == nil || errors.Is(err, watch.ErrPageNotFound):
		return watch.Permanent(rejected)
	case watch.IsPermanent(err):
		s.log.Error("the page's failure could not be recorded either", "page_id", c.PageID, "err", err)
		return watch.Permanent(fmt.Errorf("%w (recording the failure on the page failed too: %v)", rejected, err))
	default:
		return fmt.Errorf("record the refused check of page %d as a failure: %w", c.PageID, err)
	}
}

// record retries RecordCheck while the failure is transient.
func (s *Service) record(ctx context.Context, c watch.Check, links []watch.NewLink) (watch.Recorded, error) {
	for attempt := 0; ; attempt++ {
		rec, err := s.store.RecordCheckRetitling(ctx, c, links, s.dropOldTexts)
		if err == nil || errors.Is(err, watch.ErrPageNotFound) || watch.IsPermanent(err) {
			return rec, err
		}
		s.log.Warn("recording check failed; retrying", "page_id", c.PageID, "attempt", attempt+1, "err", err)
		if sleepErr := s.cfg.Backoff.Sleep(ctx, attempt); sleepErr != nil {
			return watch.Recorded{}, fmt.Errorf("record check of page %d: %w (gave up: %v)", c.PageID, err, sleepErr)
		}
	}
}

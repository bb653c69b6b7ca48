// Package extractor reads the new links of the pages that ask for it as
// articles: it claims each link's durable work from the store, fetches the
// link within the fleet's per-origin budget (below the pages' checks),
// extracts the article (package article) and stores it once per canonical
// URL, pointing the link's update at it.
//
// Work is at least once: it is written with its update and deleted with
// its outcome, and a claim leases it, so an extractor that dies costs only
// one more fetch of the links it had in flight.
package extractor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/article"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Store keeps the work and the articles (package store).
type Store interface {
	ClaimArticleWork(ctx context.Context, n int, lease time.Duration) ([]watch.ArticleWork, error)
	KnownArticle(ctx context.Context, linkURL string) (id int64, status watch.ArticleStatus, ok bool, err error)
	RecordArticle(ctx context.Context, w watch.ArticleWork, o watch.ArticleOutcome) (int64, error)
	FinishArticleWork(ctx context.Context, w watch.ArticleWork) error
	PostponeArticleWork(ctx context.Context, w watch.ArticleWork, until time.Time, counted bool) error
	ReleaseArticleWork(ctx context.Context, work []watch.ArticleWork) error
	ArticleWorkDue(ctx context.Context) (waiting int64, oldest time.Duration, err error)
}

// Fetcher fetches one page (package fetch, with the pacer of the
// ArticleFetch class).
type Fetcher interface {
	Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error)
}

// Gate holds the fleet's per-origin caps (package hostgate).
type Gate interface {
	EnterAs(ctx context.Context, class watch.FetchClass, origin string, lease time.Duration) (leave func(), ok bool)
	CountDaily(ctx context.Context, class watch.FetchClass, origin string, limit int) (undo func(), ok bool)
}

// Config configures the extractor.
type Config struct {
	// Concurrency is how many articles one extractor fetches at once, 1 to
	// 1000. Default 8.
	Concurrency int `env:"PORTALWATCH_EXTRACTOR_CONCURRENCY"`
	// Lease is how long a claimed link stays with this extractor before
	// another may take it: longer than a fetch and an extraction take.
	// Default 2m.
	Lease time.Duration `env:"PORTALWATCH_ARTICLE_LEASE"`
	// Poll is how often an idle extractor looks for work. Default 1s.
	Poll time.Duration `env:"PORTALWATCH_ARTICLE_POLL"`
	// Attempts is how many fetches of a link that fail in a way that may
	// pass (a timeout, a 503) are made before its article is an error,
	// 1 to 20. Default 4.
	Attempts int `env:"PORTALWATCH_ARTICLE_ATTEMPTS"`
	// PerOriginDay caps the article fetches of one origin a UTC day
	// across the fleet; a link past it gets status capped. 0: no cap.
	// Default 2000.
	PerOriginDay int `env:"PORTALWATCH_ARTICLES_PER_ORIGIN_DAY"`
	// MaxBytes and MaxNodes bound one extraction (article.Options).
	MaxBytes int `env:"PORTALWATCH_ARTICLE_MAX_BYTES"`
	MaxNodes int `env:"PORTALWATCH_ARTICLE_MAX_NODES"`
	// Memory bounds the heap of the extractions in flight together, in
	// bytes, 16 MiB to 16 GiB: a page waits for its estimated share
	// (about twelve bytes a byte of page) before it is extracted.
	// Default DefaultMemory, 96 MiB.
	Memory int64 `env:"PORTALWATCH_ARTICLE_MEMORY"`
	// RetryAfter is the first pause after a fetch that may pass, growing
	// fourfold with each attempt. Default 30s.
	RetryAfter time.Duration
	// BusyDelay is how long a link whose origin has the most fetches in
	// flight waits before it asks again. Default 2s.
	BusyDelay time.Duration
}

// Defaults of Config.
const (
	DefaultConcurrency  = 8
	DefaultLease        = 2 * time.Minute
	DefaultPoll         = time.Second
	DefaultAttempts     = 4
	DefaultPerOriginDay = 2000
	DefaultRetryAfter   = 30 * time.Second
	DefaultBusyDelay    = 2 * time.Second
)

// WithDefaults returns c with every unset field given its default;
// PerOriginDay, where zero means no cap, is left as it is.
func (c Config) WithDefaults() Config {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = article.DefaultMaxBytes
	}
	if c.MaxNodes == 0 {
		c.MaxNodes = article.DefaultMaxNodes
	}
	if c.Memory == 0 {
		c.Memory = DefaultMemory
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.BusyDelay == 0 {
		c.BusyDelay = DefaultBusyDelay
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field.
func (c Config) Validate() error {
	return errors.Join(
		config.Between("Concurrency", c.Concurrency, 1, 1000),
		config.Between("Lease", c.Lease, 10*time.Second, 24*time.Hour),
		config.Between("Poll", c.Poll, 10*time.Millisecond, time.Hour),
		config.Between("Attempts", c.Attempts, 1, 20),
		config.Between("PerOriginDay", c.PerOriginDay, 0, 10_000_000),
		config.Between("MaxBytes", c.MaxBytes, 64<<10, 64<<20),
		config.Between("MaxNodes", c.MaxNodes, 1000, 10_000_000),
		config.Between("Memory", c.Memory, 16<<20, 16<<30),
	)
}

// Service is one extractor.
type Service struct {
	cfg     Config
	st      Store
	fetcher Fetcher
	gate    Gate
	log     *slog.Logger
	metrics metrics
	memory  *memoryGate
	// wake cuts an idle poll short when a worker frees up.
	wake chan struct{}
}

type metrics struct {
	articles *prometheus.CounterVec
	duration prometheus.Histogram
	waiting  prometheus.Gauge
	oldest   prometheus.Gauge
	deferred *prometheus.CounterVec
}

// New returns an extractor over st, fetching with f within gate's caps.
// Its metrics are registered with reg.
func New(cfg Config, st Store, f Fetcher, gate Gate, log *slog.Logger, reg prometheus.Registerer) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := metrics{
		articles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_extractor_articles_total",
			Help: "Links given their article, by outcome: a status, or known (an article stored for the URL already).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "portalwatch_extractor_fetch_seconds",
			Help:    "Time from a link's fetch to its stored article.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "portalwatch_extractor_work_waiting",
			Help: "Links waiting for their article, due or not.",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "portalwatch_extractor_oldest_due_seconds",
			Help: "Age of the oldest link that is due for its article; 0 when none is.",
		}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_extractor_deferred_total",
			Help: "Links put back for later, by reason: slot (no free slot of the origin), busy (origin full), retry (a failure that may pass).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.articles, m.duration, m.waiting, m.oldest, m.deferred} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register extractor metrics: %w", err)
		}
	}
	return &Service{cfg: cfg, st: st, fetcher: f, gate: gate, log: log, metrics: m, memory: newMemoryGate(cfg.Memory),
		wake: make(chan struct{}, 1)}, nil
}

// claimTimeout bounds one claim of work, which a stop does not cancel.
const claimTimeout = 10 * time.Second

// Run claims and reads work until ctx ends, then lets the articles in
// flight finish within drain and hands back what it claimed and did not
// start. It fails only when the store keeps failing past ctx's end.
func (s *Service) Run(ctx context.Context, drain time.Duration) error {
	work := make(chan watch.ArticleWork)
	// Workers stop taking work when ctx ends; the ones in flight get drain
	// more to finish before their fetches are canceled.
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	var (
		wg   sync.WaitGroup
		busy atomic.Int64
	)
	for range s.cfg.Concurrency {
		wg.Go(func() {
			for w := range work {
				s.read(runCtx, w)
				busy.Add(-1)
				select {
				case s.wake <- struct{}{}:
				default:
				}
			}
		})
	}
	go s.gauge(ctx)

	var pending []watch.ArticleWork
	feed := func() {
		for len(pending) > 0 {
			select {
			case work <- pending[0]:
				pending = pending[1:]
			case <-ctx.Done():
				return
			}
		}
	}
	poll := time.NewTimer(0)
	defer poll.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			continue
		case <-poll.C:
		case <-s.wake:
		}
		// Only as many links as there are idle workers are claimed: a
		// claimed link's lease runs while it waits for a worker.
		idle := s.cfg.Concurrency - int(busy.Load())
		if idle <= 0 {
			poll.Reset(s.cfg.Poll)
			continue
		}
		// The claim is not canceled by a stop: a claim canceled after its
		// commit would leave its links leased, with an attempt counted,
		// where one that ends is handed back below.
		claimCtx, cancelClaim := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		claimed, err := s.st.ClaimArticleWork(claimCtx, idle, s.cfg.Lease)
		cancelClaim()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("claiming article work failed; trying again", "err", err)
			}
			poll.Reset(s.cfg.Poll + rand.N(s.cfg.Poll))
			continue
		}
		busy.Add(int64(len(claimed)))
		pending = append(pending, claimed...)
		feed()
		// A full batch says more is due: ask again at once, for the
		// workers still idle, or as soon as one frees up; otherwise at the
		// next poll.
		if len(claimed) == idle {
			poll.Reset(0)
		} else {
			poll.Reset(s.cfg.Poll)
		}
	}
	close(work)
	if len(pending) > 0 {
		busy.Add(-int64(len(pending)))
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := s.st.ReleaseArticleWork(rctx, pending); err != nil {
			s.log.Warn("handing back unstarted article work failed; it comes due when its lease ends", "links", len(pending), "err", err)
		}
		cancel()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drain):
		s.log.Warn("articles still in flight at the end of the shutdown timeout; canceling them", "drain", drain.String())
		cancelRun()
		<-done
	}
	return nil
}

// gauge refreshes the work gauges every 15 s until ctx ends.
func (s *Service) gauge(ctx context.Context) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		if waiting, oldest, err := s.st.ArticleWorkDue(ctx); err == nil {
			s.metrics.waiting.Set(float64(waiting))
			s.metrics.oldest.Set(oldest.Seconds())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// read gives w its article, or puts it back for later. Every store error
// is logged and leaves w to come due again with its lease.
func (s *Service) read(ctx context.Context, w watch.ArticleWork) {
	log := s.log.With("url", w.URL, "page_id", w.PageID)
	if err := s.readOne(ctx, w, log); err != nil {
		if ctx.Err() != nil {
			// Stopping: the fetch was canceled; the link is due again at
			// once for the next extractor.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if rerr := s.st.ReleaseArticleWork(rctx, []watch.ArticleWork{w}); rerr == nil {
				return
			}
		}
		log.Warn("article not recorded; the link comes due again when its lease ends", "err", err)
	}
}

func (s *Service) readOne(ctx context.Context, w watch.ArticleWork, log *slog.Logger) error {
	// The check that wrote w may have missed the article being stored in
	// the same instant: its updates show that one, read once.
	if _, status, ok, err := s.st.KnownArticle(ctx, w.URL); err != nil {
		return err
	} else if ok && status.Lasting() {
		s.metrics.articles.WithLabelValues("known").Inc()
		return s.st.FinishArticleWork(ctx, w)
	}
	origin, ok := watch.Origin(w.URL)
	if !ok {
		return s.record(ctx, w, failed(w, watch.ArticleError, "the link has no host to fetch it from"))
	}
	leave, admitted := s.gate.EnterAs(ctx, watch.ArticleFetch, origin, s.cfg.Lease)
	if !admitted {
		s.metrics.deferred.WithLabelValues("busy").Inc()
		return s.st.PostponeArticleWork(ctx, w, time.Now().Add(s.cfg.BusyDelay+rand.N(s.cfg.BusyDelay)), false)
	}
	// leave is called as soon as the fetch ends and again on the way out:
	// once is enough, the second would cost the gate a round trip.
	leave = sync.OnceFunc(leave)
	defer leave()
	uncount, within := s.gate.CountDaily(ctx, watch.ArticleFetch, origin, s.cfg.PerOriginDay)
	if !within {
		return s.record(ctx, w, failed(w, watch.ArticleCapped,
			fmt.Sprintf("%s had %d article fetches today already (PORTALWATCH_ARTICLES_PER_ORIGIN_DAY)", origin, s.cfg.PerOriginDay)))
	}
	start := time.Now()
	res, err := s.fetcher.Fetch(ctx, watch.FetchRequest{URL: w.URL, Proxy: w.Proxy})
	leave()
	if err != nil {
		if ctx.Err() != nil {
			uncount()
			return err
		}
		var fe *watch.FetchError
		if errors.As(err, &fe) && fe.Kind == watch.FetchDeferred {
			uncount()
			s.metrics.deferred.WithLabelValues("slot").Inc()
			return s.st.PostponeArticleWork(ctx, w, fe.RetryAt, false)
		}
		status, final := fetchStatus(err)
		if !final && w.Attempts < s.cfg.Attempts {
			s.metrics.deferred.WithLabelValues("retry").Inc()
			retry := s.cfg.RetryAfter << (2 * min(w.Attempts-1, 6))
			log.Info("article fetch failed; trying again later", "attempt", w.Attempts, "retry_in", retry.String(), "err", err)
			return s.st.PostponeArticleWork(ctx, w, time.Now().Add(retry), true)
		}
		o := failed(w, status, watch.CleanText(fetchDetail(err)))
		o.Article.FetchedAt = start
		return s.record(ctx, w, o)
	}
	o := s.extract(ctx, w, res)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	s.metrics.duration.Observe(time.Since(start).Seconds())
	return s.record(ctx, w, o)
}

// extract reads the fetched page as an article.
func (s *Service) extract(ctx context.Context, w watch.ArticleWork, res watch.FetchResult) watch.ArticleOutcome {
	final := w.URL
	if res.FinalURL != nil {
		final = res.FinalURL.String()
	}
	pageURL, err := url.Parse(final)
	if err != nil {
		return failed(w, watch.ArticleError, "the fetch ended at an unreadable URL")
	}
	o := watch.ArticleOutcome{LinkURL: w.URL, Article: watch.Article{URL: final, FetchedAt: res.FetchedAt}}
	release, err := s.memory.enter(ctx, len(res.HTML))
	if err != nil {
		o.Article.Status, o.Article.Detail = watch.ArticleError, "stopped while waiting to be read"
		return o
	}
	a, err := article.Extract(ctx, res.HTML, pageURL, article.Options{MaxBytes: s.cfg.MaxBytes, MaxNodes: s.cfg.MaxNodes})
	release()
	switch {
	case errors.Is(err, article.ErrNoArticle):
		o.Article.Status, o.Article.Detail = watch.ArticleNotArticle, "no headline and too little text to be an article"
		return o
	case errors.Is(err, article.ErrTooLarge):
		o.Article.Status, o.Article.Detail = watch.ArticleError, watch.CleanText(err.Error())
		return o
	case err != nil:
		o.Article.Status, o.Article.Detail = watch.ArticleError, watch.CleanText(err.Error())
		return o
	}
	o.Article = fromExtraction(a, final, res.FetchedAt)
	return o
}

// paywallWords is the body below which a page that says it is not free
// is taken for a paywall teaser rather than a readable article.
const paywallWords = 150

// fromExtraction is the stored form of a: canonical URL, fields capped,
// and the status it earns.
func fromExtraction(a *article.Article, final string, fetched time.Time) watch.Article {
	out := watch.Article{
		Status:        watch.ArticleOK,
		URL:           final,
		Headline:      a.Headline,
		Description:   a.Description,
		Body:          capBody(a.ArticleBody, watch.MaxArticleBody),
		DatePublished: a.DatePublished,
		DateModified:  a.DateModified,
		Author:        a.Author,
		InLanguage:    a.InLanguage,
		Image:         a.Image,
		Section:       a.ArticleSection,
		Keywords:      a.Keywords,
		Sources:       a.Sources,
		FetchedAt:     fetched,
	}
	if a.URL != "" {
		out.URL = a.URL
	}
	if a.BodySkipped != "" {
		out.Detail = "no text: " + a.BodySkipped
	}
	if a.IsAccessibleForFree != nil && !*a.IsAccessibleForFree && len(strings.Fields(a.ArticleBody)) < paywallWords {
		out.Status = watch.ArticlePaywall
		out.Detail = "the page says its content is not free and shows little of it"
	}
	return out
}

// capBody cuts body to at most max bytes, at the last paragraph break in
// its last quarter when there is one, else at a rune boundary.
func capBody(body string, max int) string {
	if len(body) <= max {
		return body
	}
	cut := body[:max]
	if i := strings.LastIndex(cut, "\n\n"); i > max*3/4 {
		return cut[:i]
	}
	return strings.ToValidUTF8(cut, "")
}

// failed is the outcome of a link that gave no article.
func failed(w watch.ArticleWork, status watch.ArticleStatus, detail string) watch.ArticleOutcome {
	return watch.ArticleOutcome{LinkURL: w.URL, Article: watch.Article{Status: status, Detail: detail, URL: w.URL, FetchedAt: time.Now()}}
}

func (s *Service) record(ctx context.Context, w watch.ArticleWork, o watch.ArticleOutcome) error {
	if _, err := s.st.RecordArticle(ctx, w, o); err != nil {
		return err
	}
	s.metrics.articles.WithLabelValues(string(o.Article.Status)).Inc()
	return nil
}

// fetchStatus is the status a failed fetch earns, and whether it is final
// or may pass on another attempt.
func fetchStatus(err error) (watch.ArticleStatus, bool) {
	var fe *watch.FetchError
	if !errors.As(err, &fe) {
		return watch.ArticleError, false
	}
	switch fe.Kind {
	case watch.FetchBlocked, watch.FetchDisallowed:
		return watch.ArticleBlocked, true
	case watch.FetchNotHTML:
		return watch.ArticleNotArticle, true
	case watch.FetchHTTPStatus:
		// 408, 425, 429 and the 5xx say "later"; other statuses say no.
		transient := fe.Status == 408 || fe.Status == 425 || fe.Status == 429 || fe.Status >= 500
		return watch.ArticleError, !transient
	case watch.FetchDNS, watch.FetchNetwork, watch.FetchTimeout:
		return watch.ArticleError, false
	case watch.FetchProxy:
		// The extractor's PORTALWATCH_PROXIES lacks the page's proxy: the
		// article can be read once the operator mends the list.
		return watch.ArticleError, false
	default: // bad URL, too many redirects, too large, bad response
		return watch.ArticleError, true
	}
}

// fetchDetail is the part of a fetch error a reader needs: the URL is the
// article's own already.
func fetchDetail(err error) string {
	var fe *watch.FetchError
	if errors.As(err, &fe) && fe.Err != nil {
		return fe.Err.Error()
	}
	return err.Error()
}

package pwbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// e2eConfig configures "pwbench e2e".
type e2eConfig struct {
	svc  services
	repo string // the module's root, where the programs are built from
	mode string // "synthetic" or "history"

	pages int // pages registered
	hosts int // loopback addresses the farm listens on
	synth synthConfig
	round time.Duration // how often each page changes

	crawlers, crawlerConcurrency     int
	processors, processorConcurrency int
	jitter                           string  // PORTALWATCH_JITTER, "" for the default
	env                              envList // extra environment for every program (experiments)
	logLevel                         string

	satInterval      time.Duration // check interval that saturates the system
	warmup, window   time.Duration // saturation: settle, then measure
	latencyIntervals int           // half-rate phase: measure over this many intervals
	perf             time.Duration // perf record each program for this long (0: off)

	redisLinks, redisPages int
	parseReps              int
	parseTime              time.Duration

	timeout time.Duration // bound on the whole run
	keep    bool          // keep logs and profiles
	// varyBodies makes every body the farm serves unique (-vary-bodies).
	varyBodies bool
	// gzip serves homepages gzip-coded (-gzip).
	gzip bool
	// articles runs extractors extractor processes with articles on
	// (-articles); without it every program runs with
	// PORTALWATCH_ARTICLES=false, so figures stay comparable with the runs
	// before articles.
	articles   bool
	extractors int
	// extractorNice, when above 0, starts the extractors at that nice
	// value (-extractor-nice), so that on a saturated machine the pages'
	// checks get the CPU first.
	extractorNice int
	// localLinks makes the replayed histories link their own farm host,
	// which answers with real article pages (-local-links, see localLinks).
	localLinks bool
	// portPerPage gives every page its own listener port, so its own
	// origin and robots.txt (-port-per-page; implied by -sources).
	portPerPage bool
	// bin holds programs built already (pwbench ab builds each revision
	// once); empty: build them from repo.
	bin string
}

func (c *e2eConfig) flags(fs *flag.FlagSet) {
	runFlags(fs, &c.svc, &c.repo)
	fs.StringVar(&c.mode, "mode", "synthetic", "synthetic: generated portals; history: replay ../shared/corpus/history")
	fs.IntVar(&c.pages, "pages", 1000, "pages registered and served")
	fs.IntVar(&c.hosts, "hosts", 16, "loopback addresses (127.0.1.x) the farm serves from")
	fs.IntVar(&c.synth.minKB, "min-kb", 100, "smallest synthetic page, KB")
	fs.IntVar(&c.synth.maxKB, "max-kb", 250, "largest synthetic page, KB")
	fs.IntVar(&c.synth.minAnchors, "min-anchors", 300, "fewest anchors on a synthetic page")
	fs.IntVar(&c.synth.maxAnchors, "max-anchors", 600, "most anchors on a synthetic page")
	fs.IntVar(&c.synth.perRound, "new-per-round", 3, "new anchors per page per round")
	fs.IntVar(&c.synth.visible, "visible-rounds", 10, "rounds a new anchor stays on its page")
	fs.BoolVar(&c.synth.keep, "keep-news", false,
		"news anchors never leave their page (it grows by -new-per-round a round): what following removals costs a check that records none")
	fs.DurationVar(&c.round, "round", 5*time.Second, "how often each page changes")
	fs.BoolVar(&c.varyBodies, "vary-bodies", false,
		"make every body the farm serves unique, as dynamic portals' are: no check finds the body its page's last one read")
	fs.BoolVar(&c.gzip, "gzip", false,
		"serve homepages gzip-coded when the client accepts it, as nearly every portal does (default off: plain bodies, the costlier case to parse and archive)")
	fs.BoolVar(&c.articles, "articles", false,
		"read new links as articles: PORTALWATCH_ARTICLES=true and -extractors extractor processes (default off, as before articles)")
	fs.IntVar(&c.extractors, "extractors", 1, "extractor processes, with -articles")
	fs.IntVar(&c.extractorNice, "extractor-nice", 0, "with -articles: start the extractors at this nice value, 1 to 19 (0: as the others)")
	fs.BoolVar(&c.synth.sources, "sources", false,
		"every synthetic page serves an RSS feed (linked from it) and a news sitemap (named by robots.txt) too, with stories of their own, "+
			"and is registered with sources homepage,feeds,sitemaps; implies -port-per-page")
	fs.BoolVar(&c.synth.sharedStoriesOnly, "shared-stories-only", false,
		"with -sources: the feed and the sitemap list only the homepage's stories, none of their own, so that the pipeline records "+
			"the same stories as without -sources and the difference is the cost of checking the sources alone")
	fs.BoolVar(&c.portPerPage, "port-per-page", false,
		"every page on its own port (its own origin and robots.txt), spread over -hosts addresses: the farm of -sources without the sources")
	fs.BoolVar(&c.localLinks, "local-links", false,
		"history mode: every link to another host points at the page's own farm host instead, which answers it with a real article page")
	fs.IntVar(&c.crawlers, "crawlers", 1, "crawler processes")
	fs.IntVar(&c.crawlerConcurrency, "crawler-concurrency", 16, "PORTALWATCH_CRAWLER_CONCURRENCY")
	fs.IntVar(&c.processors, "processors", 1, "processor processes")
	fs.IntVar(&c.processorConcurrency, "processor-concurrency", 8, "PORTALWATCH_PROCESSOR_CONCURRENCY")
	fs.StringVar(&c.jitter, "jitter", "", "PORTALWATCH_JITTER (empty: the programs' default)")
	fs.StringVar(&c.logLevel, "log-level", "info", "PORTALWATCH_LOG_LEVEL")
	fs.Var(&c.env, "env", "NAME=VALUE added to every program's environment, e.g. GOGC=200, or KIND:NAME=VALUE to one kind's, e.g. processor:GOMAXPROCS=1 (repeatable)")
	fs.DurationVar(&c.satInterval, "saturate-interval", time.Second, "check interval of the saturation phase")
	fs.DurationVar(&c.warmup, "warmup", 10*time.Second, "saturation: time to reach steady state")
	fs.DurationVar(&c.window, "window", 30*time.Second, "saturation: measurement window")
	fs.IntVar(&c.latencyIntervals, "latency-intervals", 3, "half-rate phase: intervals measured")
	fs.DurationVar(&c.perf, "perf", 0, "after the saturation window, perf-record each program this long (0: off)")
	fs.IntVar(&c.redisLinks, "redis-links", 1_000_000, "Redis memory: links (0: skip)")
	fs.IntVar(&c.redisPages, "redis-pages", 5000, "Redis memory: pages")
	fs.IntVar(&c.parseReps, "parse-reps", 5, "parse ceiling: repetitions")
	fs.DurationVar(&c.parseTime, "parse-time", 2*time.Second, "parse ceiling: time per repetition")
	fs.DurationVar(&c.timeout, "timeout", 20*time.Minute, "stop the run after this long, whatever happens")
	fs.BoolVar(&c.keep, "keep", false, "keep the programs' logs and profiles")
}

// snapshot is every cumulative counter the run reads, at one instant.
type snapshot struct {
	at    time.Time
	tasks float64 // homepage tasks the processors handled
	// sourceTasks are the tasks of feeds, sitemaps and discoveries.
	sourceTasks float64
	docFetches  int64   // feed and sitemap responses the farm served
	updates     float64 // updates they recorded
	fetches     int64   // responses the farm served
	cpu         cpuSample
	pg          pgCounters
	redis       map[string]float64
}

// e2eRun is one run of the whole pipeline.
type e2eRun struct {
	cfg   e2eConfig
	log   io.Writer
	dir   string // logs and profiles
	h     *harness
	farm  *farm
	db    *pgxpool.Pool
	rdb   *redis.Client
	amqpc *amqp.Connection
	procs []*process
	// extraEnv is added to every program's environment.
	extraEnv []string

	pageIdx map[int64]int // page id → farm page
}

// newE2ERun is a run of cfg logging to log, with the environment its farm
// needs, whether it runs alone or as an arm of pwbench ab.
func newE2ERun(cfg e2eConfig, log io.Writer) *e2eRun {
	r := &e2eRun{cfg: cfg, log: log}
	if cfg.synth.sources {
		// The scheduler discovers a batch's tenth of pages a minute by
		// default: 1,000 new pages would wait 20 minutes for theirs. A
		// claim a second over 1,000 pages costs nothing the run can see.
		r.extraEnv = append(r.extraEnv, "PORTALWATCH_SCHEDULER_DISCOVERY_POLL=1s")
	}
	return r
}

// settle checks the flags that depend on each other and completes what
// they imply: the farm's seed, and -port-per-page with -sources.
func (c *e2eConfig) settle() error {
	if c.synth.minKB < 1 || c.synth.maxKB < c.synth.minKB || c.synth.minAnchors < 50 ||
		c.synth.maxAnchors < c.synth.minAnchors || c.synth.perRound < 1 || c.synth.visible < 2 {
		return fmt.Errorf("bad page shape flags: %w", ErrUsage)
	}
	c.synth.seed = 20240501
	if c.synth.sources {
		if c.mode != "synthetic" {
			return fmt.Errorf("-sources needs -mode synthetic: %w", ErrUsage)
		}
		c.portPerPage = true
	}
	return nil
}

func runE2E(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg e2eConfig
	fs := flag.NewFlagSet("pwbench e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if err := cfg.settle(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	r := newE2ERun(cfg, stderr)
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return err
	}
	res, err := r.measure(ctx)
	if err != nil {
		return err
	}
	res.print(stdout)
	return printJSON(stdout, res.summary())
}

func (r *e2eRun) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// setup builds the programs, creates the sandbox, starts the farm, registers
// the pages and starts the programs.
func (r *e2eRun) setup(ctx context.Context) error {
	var err error
	if r.dir, err = os.MkdirTemp("", "pwbench-run-"); err != nil {
		return err
	}
	if err := r.connect(ctx); err != nil {
		return err
	}

	var ls []net.Listener
	if r.cfg.portPerPage {
		ls, err = listenFarmPorts(r.cfg.pages, r.cfg.hosts)
	} else {
		ls, err = listenFarm(r.cfg.hosts)
	}
	if err != nil {
		return err
	}
	var pages []*farmPage
	switch r.cfg.mode {
	case "synthetic":
		start := time.Now()
		pages = newSynthPages(r.cfg.pages, ls, r.cfg.synth)
		r.logf("generated %d synthetic pages in %.1fs", len(pages), time.Since(start).Seconds())
	case "history":
		if pages, err = newHistoryPages(r.cfg.pages, ls, corpusDir(r.cfg.repo), r.cfg.localLinks); err != nil {
			for _, l := range ls {
				l.Close()
			}
			return err
		}
	default:
		return fmt.Errorf("unknown mode %q: %w", r.cfg.mode, ErrUsage)
	}
	r.farm = newFarm(ls, pages, r.cfg.round)
	r.farm.varyBodies = r.cfg.varyBodies
	r.farm.gzip = r.cfg.gzip
	if r.cfg.localLinks || r.cfg.articles {
		// Every path that is no page answers with a real article, never a
		// 404: what the extractor reads, on loopback only.
		if r.farm.articles, err = loadArticlePages(r.cfg.repo); err != nil {
			return err
		}
	}
	if err := selfCheck(r.farm); err != nil {
		return err
	}
	if err := r.register(ctx); err != nil {
		return err
	}
	return r.startPrograms()
}

// connect builds the programs, creates the sandbox and opens pwbench's own connections to the run's database, Redis and
// RabbitMQ, for measuring.
func (r *e2eRun) connect(ctx context.Context) error {
	var err error
	if r.h, err = newHarness(ctx, r.cfg.svc, r.cfg.repo, r.cfg.bin, r.log); err != nil {
		return err
	}
	if r.db, err = r.h.pool(ctx); err != nil {
		return err
	}
	opts, err := redis.ParseURL(r.cfg.svc.RedisURL)
	if err != nil {
		return err
	}
	r.rdb = redis.NewClient(opts)
	if r.amqpc, err = amqp.Dial(r.cfg.svc.AMQPURL); err != nil {
		return fmt.Errorf("RabbitMQ: %w", err)
	}
	return nil
}

// register inserts the pages with plain SQL (every other column has its
// default), due now, with an hour's interval: the first phase checks each
// page once, its baseline.
//
// The schema refuses intervals under 10 s, a rule for people registering
// pages. 1,000 pages at 10 s ask for at most 100 checks a second, less than
// the system can do, so the run's own database drops that CHECK constraint to
// be able to saturate the system with N pages.
func (r *e2eRun) register(ctx context.Context) error {
	if _, err := r.db.Exec(ctx, `
		DO $$ DECLARE c text; BEGIN
			FOR c IN SELECT conname FROM pg_constraint
			         WHERE conrelid = 'pages'::regclass AND contype = 'c'
			           AND pg_get_constraintdef(oid) LIKE '%check_interval%'
			LOOP EXECUTE format('ALTER TABLE pages DROP CONSTRAINT %I', c); END LOOP;
		END $$`); err != nil {
		return fmt.Errorf("relax the interval constraint: %w", err)
	}
	urls := make([]string, len(r.farm.pages))
	for i, p := range r.farm.pages {
		urls[i] = p.url
	}
	sources := []string{"homepage"}
	if r.cfg.synth.sources {
		sources = []string{"homepage", "feeds", "sitemaps"}
	}
	rows, err := r.db.Query(ctx, `
		INSERT INTO pages (base_url, check_interval, sources)
		SELECT u, interval '1 hour', $2 FROM unnest($1::text[]) AS u
		RETURNING id, base_url`, urls, sources)
	if err != nil {
		return fmt.Errorf("register pages: %w", err)
	}
	byURL := map[string]int{}
	for i, u := range urls {
		byURL[u] = i
	}
	r.pageIdx = map[int64]int{}
	for rows.Next() {
		var id int64
		var u string
		if err := rows.Scan(&id, &u); err != nil {
			return err
		}
		r.pageIdx[id] = byURL[u]
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("register pages: %w", err)
	}
	r.logf("registered %d pages on %d loopback hosts", len(r.pageIdx), r.cfg.hosts)
	return nil
}

func (r *e2eRun) startPrograms() error {
	env := append(r.h.sb.Env(),
		"PORTALWATCH_LOG_LEVEL="+r.cfg.logLevel,
		"PORTALWATCH_CRAWLER_CONCURRENCY="+strconv.Itoa(r.cfg.crawlerConcurrency),
		"PORTALWATCH_PROCESSOR_CONCURRENCY="+strconv.Itoa(r.cfg.processorConcurrency),
		"PORTALWATCH_SHUTDOWN_TIMEOUT=10s")
	if r.cfg.jitter != "" {
		env = append(env, "PORTALWATCH_JITTER="+r.cfg.jitter)
	}
	env = append(env, "PORTALWATCH_ARTICLES="+strconv.FormatBool(r.cfg.articles))
	env = append(env, r.extraEnv...)
	start := func(kind string, n int) error {
		env := append(slices.Clip(env), r.cfg.env.of(kind)...)
		bin := r.h.program(kind)
		if kind == "extractor" && r.cfg.extractorNice > 0 {
			// A script that execs the program under nice keeps its pid, so
			// it is still stopped and measured by that pid.
			bin = filepath.Join(r.dir, "extractor-nice")
			script := fmt.Sprintf("#!/bin/sh\nexec nice -n %d %s\n", r.cfg.extractorNice, r.h.program(kind))
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				return err
			}
		}
		for i := range n {
			p, err := startProgram(bin, fmt.Sprintf("%s-%d", kind, i+1), kind, env)
			if err != nil {
				return err
			}
			r.procs = append(r.procs, p)
		}
		return nil
	}
	if err := start("processor", r.cfg.processors); err != nil {
		return err
	}
	if err := start("crawler", r.cfg.crawlers); err != nil {
		return err
	}
	if err := start("scheduler", 1); err != nil {
		return err
	}
	if r.cfg.articles {
		if err := start("extractor", r.cfg.extractors); err != nil {
			return err
		}
		r.logf("started %d extractor(s): new links are read as articles", r.cfg.extractors)
	}
	r.logf("started 1 scheduler, %d crawler(s) × %d, %d processor(s) × %d", r.cfg.crawlers, r.cfg.crawlerConcurrency,
		r.cfg.processors, r.cfg.processorConcurrency)
	return nil
}

func (r *e2eRun) kind(kind string) []*process {
	var out []*process
	for _, p := range r.procs {
		if p.kind == kind {
			out = append(out, p)
		}
	}
	return out
}

// alive returns an error if one of the programs has exited.
func (r *e2eRun) alive() error {
	for _, p := range r.procs {
		if p.Exited() && !p.stopping {
			return fmt.Errorf("%s (pid %d) exited with status %d:\n%s", p.Name, p.Pid(), p.ExitCode(), p.logTail())
		}
	}
	return nil
}

// waitFor polls cond every 200 ms until it holds, the programs die, or
// timeout passes, logging its progress every 5 s.
func (r *e2eRun) waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, string, error)) error {
	return r.waitEvery(ctx, what, timeout, 200*time.Millisecond, cond)
}

// waitEvery is waitFor polling every interval: a wait whose end is a
// measurement polls often enough that the poll does not lengthen it.
func (r *e2eRun) waitEvery(ctx context.Context, what string, timeout, interval time.Duration, cond func() (bool, string, error)) error {
	lastLog := time.Now()
	err := testsvc.Poll(ctx, timeout, interval, func() (bool, string, error) {
		ok, progress, err := cond()
		if err != nil || ok {
			return ok, progress, err
		}
		if err := r.alive(); err != nil {
			return false, progress, err
		}
		if time.Since(lastLog) > 5*time.Second {
			r.logf("  waiting for %s: %s", what, progress)
			lastLog = time.Now()
		}
		return false, progress, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// sleep waits d, or less when ctx ends first (its error then).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *e2eRun) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now(), fetches: r.farm.fetches.Load(), docFetches: r.farm.docFetches.Load()}
	var err error
	procs := r.kind("processor")
	if s.tasks, err = scrapeAll(ctx, procs, "portalwatch_processor_tasks_total"); err != nil {
		return s, err
	}
	// A page check is a homepage's task; the tasks of feeds, sitemaps and
	// discoveries are counted apart, so pages/s means what it meant before
	// -sources.
	if s.sourceTasks, err = scrapeAllLabel(ctx, procs, "portalwatch_processor_tasks_total", isSourceOutcome); err != nil {
		return s, err
	}
	s.tasks -= s.sourceTasks
	if s.updates, err = scrapeAll(ctx, procs, "portalwatch_processor_updates_total"); err != nil {
		return s, err
	}
	s.cpu = r.meter(ctx).sample()
	if s.pg, err = readPG(ctx, r.db); err != nil {
		return s, err
	}
	s.redis, err = redisCalls(ctx, r.rdb)
	return s, err
}

// meter is the CPU meter of the run: its programs, and of PostgreSQL only
// the run database's backends and the server's auxiliary processes.
func (r *e2eRun) meter(ctx context.Context) cpuMeter {
	return cpuMeter{
		programs: func() []*process { return r.procs },
		pgPIDs: func() map[int]bool {
			rows, err := r.db.Query(ctx, `SELECT pid FROM pg_stat_activity
				WHERE datname = current_database() OR backend_type <> 'client backend'`)
			if err != nil {
				return nil
			}
			defer rows.Close()
			pids := map[int]bool{}
			for rows.Next() {
				var pid int
				if rows.Scan(&pid) == nil {
					pids[pid] = true
				}
			}
			return pids
		},
	}
}

// countPages counts the pages that satisfy a condition on pages.
func (r *e2eRun) countPages(ctx context.Context, where string, args ...any) (int, error) {
	var n int
	err := r.db.QueryRow(ctx, `SELECT count(*) FROM pages WHERE `+where, args...).Scan(&n)
	return n, err
}

// measure runs the phases: baseline, saturation, half rate, drain; then
// checks correctness and measures memory and the parse ceiling.
func (r *e2eRun) measure(ctx context.Context) (*e2eResult, error) {
	res := &e2eResult{cfg: r.cfg, pages: len(r.farm.pages), bySource: map[string]int{}, onlyTruth: map[string]int{}, onlyFound: map[string]int{}}
	for _, phase := range []func(context.Context, *e2eResult) error{
		r.baseline, r.saturate, r.halfRate, r.drain, r.evaluate, r.memory, r.ceiling,
	} {
		if err := phase(ctx, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// baseline waits until every page has been checked once, at version 0.
func (r *e2eRun) baseline(ctx context.Context, res *e2eResult) error {
	n, start := res.pages, time.Now()
	err := r.waitFor(ctx, "every page's baseline", 10*time.Minute, func() (bool, string, error) {
		done, err := r.countPages(ctx, "baseline_at IS NOT NULL")
		return done == n, fmt.Sprintf("%d of %d", done, n), err
	})
	if err != nil {
		return err
	}
	res.baselinePerSec = float64(n) / time.Since(start).Seconds()
	r.logf("baseline: %d pages in %.1fs (%.0f pages/s, every link inserted)", n, time.Since(start).Seconds(), res.baselinePerSec)
	if !r.cfg.synth.sources {
		return nil
	}
	// Discovery and each source's silent first check happen here, before
	// the rounds start, so that no measured window holds them and every
	// source's baseline is its version 0.
	want := 2 * n
	err = r.waitFor(ctx, "every page's feed and news sitemap to be discovered and baselined", 10*time.Minute, func() (bool, string, error) {
		var found, kinds, baselined int
		err := r.db.QueryRow(ctx, `SELECT count(*), count(DISTINCT (page_id, kind)), count(baseline_at) FROM sources WHERE enabled`).
			Scan(&found, &kinds, &baselined)
		if err == nil && found > want {
			err = fmt.Errorf("discovery found %d sources for %d pages, want one feed and one news sitemap each", found, n)
		}
		return kinds == want && baselined == want, fmt.Sprintf("%d of %d found, %d baselined", kinds, want, baselined), err
	})
	if err != nil {
		return err
	}
	r.logf("sources: %d feeds and news sitemaps discovered and baselined %.1fs after the pages' baselines began", want, time.Since(start).Seconds())
	return nil
}

// saturate starts the rounds and makes every page due all the time, then
// measures a window once the pipeline has settled; with -perf it profiles
// the programs afterwards, still saturated.
func (r *e2eRun) saturate(ctx context.Context, res *e2eResult) error {
	r.farm.startRounds(time.Now())
	if _, err := r.db.Exec(ctx, `UPDATE pages SET check_interval = $1 * interval '1 millisecond', next_check_at = now()`,
		r.cfg.satInterval.Milliseconds()); err != nil {
		return err
	}
	// Sources follow their page's interval; their next checks were an
	// hour away.
	if _, err := r.db.Exec(ctx, `UPDATE sources SET next_check_at = now()`); err != nil {
		return err
	}
	r.logf("saturation: interval %s, warming up %s, then measuring %s", r.cfg.satInterval, r.cfg.warmup, r.cfg.window)
	w, err := r.window(ctx, r.cfg.warmup, r.cfg.window)
	if err != nil {
		return err
	}
	res.saturation, res.satStart, res.satEnd = w.window, w.start, w.end
	r.logf("saturation: %.1f pages/s checked (%.1f fetched), machine busy %.2f of %d cores",
		w.pagesPerSec, w.fetchesPerSec, w.busyCores, numCPU())
	if w.pages < 1 {
		return errors.New("no page was checked in the saturation window")
	}
	if r.cfg.perf > 0 {
		res.profiles = r.profile(ctx, r.cfg.perf)
	}
	return nil
}

// halfRate sets the interval at which the pages ask for half the peak rate,
// phases spread at random, and measures a window of latencyIntervals
// intervals after 1.5 intervals of settling.
func (r *e2eRun) halfRate(ctx context.Context, res *e2eResult) error {
	n := float64(res.pages)
	interval := time.Duration(n / (res.saturation.pagesPerSec / 2) * float64(time.Second)).Round(100 * time.Millisecond)
	res.interval = interval
	if _, err := r.db.Exec(ctx, `UPDATE pages SET check_interval = $1 * interval '1 millisecond',
		next_check_at = now() + random() * $1 * interval '1 millisecond'`, interval.Milliseconds()); err != nil {
		return err
	}
	if _, err := r.db.Exec(ctx, `UPDATE sources SET next_check_at = now() + random() * $1 * interval '1 millisecond'`,
		interval.Milliseconds()); err != nil {
		return err
	}
	settle := 3 * interval / 2
	r.logf("half rate: interval %s (%.1f pages/s asked), settling %s, then measuring %d intervals",
		interval, n/interval.Seconds(), settle, r.cfg.latencyIntervals)
	w, err := r.window(ctx, settle, time.Duration(r.cfg.latencyIntervals)*interval)
	if err != nil {
		return err
	}
	res.half, res.halfStart, res.halfEnd = w.window, w.start, w.end
	r.logf("half rate: %.1f pages/s checked", w.pagesPerSec)
	return nil
}

// timedWindow is a window with the instants it began and ended.
type timedWindow struct {
	window
	start, end time.Time
}

// window waits settle, then measures for d.
func (r *e2eRun) window(ctx context.Context, settle, d time.Duration) (timedWindow, error) {
	if err := sleep(ctx, settle); err != nil {
		return timedWindow{}, err
	}
	s0, err := r.snapshot(ctx)
	if err != nil {
		return timedWindow{}, err
	}
	if err := sleep(ctx, d); err != nil {
		return timedWindow{}, err
	}
	s1, err := r.snapshot(ctx)
	if err != nil {
		return timedWindow{}, err
	}
	if err := r.alive(); err != nil {
		return timedWindow{}, err
	}
	return timedWindow{window: newWindow(s0, s1), start: s0.at, end: s1.at}, nil
}

// drain freezes the pages, waits for a check of each after the freeze,
// stops the scheduler, lets the queues empty and reads the programs' peak
// RSS while they still run.
func (r *e2eRun) drain(ctx context.Context, res *e2eResult) error {
	n, freeze := res.pages, time.Now()
	r.farm.stopRounds(freeze)
	if err := r.waitFor(ctx, "a check of every page after the freeze", 3*res.interval+time.Minute, func() (bool, string, error) {
		done, err := r.countPages(ctx, "last_checked_at > $1", freeze)
		return done == n, fmt.Sprintf("%d of %d", done, n), err
	}); err != nil {
		return err
	}
	for _, p := range r.kind("scheduler") {
		p.stop(30 * time.Second)
	}
	if err := r.drainQueues(ctx); err != nil {
		return err
	}
	if r.cfg.articles {
		// How far the extractors kept up: the work they had not done when
		// the pipeline's queues were empty.
		if err := r.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM updates u JOIN article_links l ON l.url = u.url),
			(SELECT count(*) FROM article_work)`).Scan(&res.withArticle, &res.workLeft); err != nil {
			return err
		}
		r.logf("articles: %d updates with their article, %d links waiting", res.withArticle, res.workLeft)
	}
	if err := r.archiveFigures(ctx, res); err != nil {
		return err
	}
	res.rss = map[string]float64{}
	for _, p := range r.procs {
		if p.Exited() {
			continue
		}
		if b, err := peakRSS(p.Pid()); err == nil {
			res.rss[p.kind] = max(res.rss[p.kind], float64(b)/(1<<20))
		}
	}
	return nil
}

// memory measures the run's own seen-set, stops the programs, and fills
// 1,000,000 links over 5,000 pages through package seen.
func (r *e2eRun) memory(ctx context.Context, res *e2eResult) error {
	var links int
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM links`).Scan(&links); err != nil {
		return err
	}
	usage, keys, err := memoryUsage(ctx, r.rdb, r.h.sb.Prefix)
	if err != nil {
		return err
	}
	res.runLinks, res.runKeys, res.runRedisPerLink = links, keys, float64(usage)/float64(max(links, 1))
	r.stopPrograms()
	if r.cfg.redisLinks <= 0 {
		return nil
	}
	r.logf("Redis memory: %d links over %d pages through package seen", r.cfg.redisLinks, r.cfg.redisPages)
	m, err := measureRedisMemory(ctx, r.cfg.svc.RedisURL, r.h.sb.Prefix+":mem", r.cfg.redisLinks, r.cfg.redisPages)
	if err != nil {
		return err
	}
	res.redis = &m
	return nil
}

// ceiling measures the parse-only rate on the farm's pages, with the
// programs stopped.
func (r *e2eRun) ceiling(_ context.Context, res *e2eResult) error {
	pages, err := decodePages(r.farm, 200)
	if err != nil {
		return err
	}
	r.logf("parse ceiling: %d of the farm's pages, one core, %d × %s", len(pages), r.cfg.parseReps, r.cfg.parseTime)
	res.parse, err = parseCeiling(pages, r.cfg.parseReps, r.cfg.parseTime)
	return err
}

// drainQueues waits until both queues are empty and the processors have
// stopped handling tasks for a second.
func (r *e2eRun) drainQueues(ctx context.Context) error {
	last, lastChange := -1.0, time.Now()
	return r.waitFor(ctx, "the queues to drain", 2*time.Minute, func() (bool, string, error) {
		jobs, err := testsvc.MessagesReady(r.amqpc, r.h.sb.JobQueue)
		if err != nil {
			return false, "", err
		}
		tasks, err := testsvc.MessagesReady(r.amqpc, r.h.sb.TaskQ)
		if err != nil {
			return false, "", err
		}
		handled, err := scrapeAll(ctx, r.kind("processor"), "portalwatch_processor_tasks_total")
		if err != nil {
			return false, "", err
		}
		if handled != last {
			last, lastChange = handled, time.Now()
		}
		return jobs == 0 && tasks == 0 && time.Since(lastChange) > time.Second,
			fmt.Sprintf("%d jobs and %d tasks ready", jobs, tasks), nil
	})
}

// evaluate compares updates with the farm's truth: every new link found,
// none extra, none twice; and the detection latency of the links that
// appeared in the half-rate window.
func (r *e2eRun) evaluate(ctx context.Context, res *e2eResult) error {
	truth := r.farm.truth()
	for _, t := range truth {
		res.truth += len(t)
	}
	for _, t := range truth {
		for _, l := range t {
			if k := l.only(); k != kindHomepage && k != "" {
				res.onlyTruth[k]++
			}
		}
	}
	rows, err := r.db.Query(ctx, `SELECT page_id, url, discovered_at, source FROM updates`)
	if err != nil {
		return err
	}
	defer rows.Close()
	type key struct {
		page int
		url  string
	}
	seen := map[key]bool{}
	var halfLat, satLat []float64
	for rows.Next() {
		var (
			id     int64
			u, src string
			at     time.Time
		)
		if err := rows.Scan(&id, &u, &at, &src); err != nil {
			return err
		}
		idx, ok := r.pageIdx[id]
		if !ok {
			res.extra++
			continue
		}
		k := key{idx, r.farm.pages[idx].canon(u)}
		if seen[k] {
			res.duplicates++
			continue
		}
		seen[k] = true
		want, ok := truth[idx][k.url]
		if !ok {
			res.extra++
			if len(res.extraSample) < 5 {
				res.extraSample = append(res.extraSample, u)
			}
			continue
		}
		res.found++
		res.bySource[src]++
		if !want.sources[src] {
			res.wrongSource++
			if len(res.wrongSample) < 5 {
				res.wrongSample = append(res.wrongSample, fmt.Sprintf("%s recorded from %s", u, src))
			}
		}
		if k := want.only(); k != kindHomepage && k != "" {
			res.onlyFound[k]++
		}
		lat := at.Sub(want.introduced).Seconds()
		switch {
		case !want.introduced.Before(res.halfStart) && want.introduced.Before(res.halfEnd):
			halfLat = append(halfLat, lat)
		case !want.introduced.Before(res.satStart) && want.introduced.Before(res.satEnd):
			satLat = append(satLat, lat)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for idx, want := range truth {
		for u := range want {
			if !seen[key{idx, u}] {
				res.missing++
				if len(res.missingSample) < 5 {
					res.missingSample = append(res.missingSample, u)
				}
			}
		}
	}
	slices.Sort(halfLat)
	slices.Sort(satLat)
	res.latency, res.satLatency = halfLat, satLat
	r.logf("correctness: %d new links served, %d found, %d missing, %d extra, %d duplicates, %d from a source that never listed them",
		res.truth, res.found, res.missing, res.extra, res.duplicates, res.wrongSource)
	return nil
}

// stopPrograms stops every program by its pid, gracefully.
func (r *e2eRun) stopPrograms() {
	for _, p := range r.procs {
		if code := p.stop(30 * time.Second); code != 0 {
			r.logf("%s (pid %d) exited with status %d after SIGTERM", p.Name, p.Pid(), code)
		}
	}
}

func (r *e2eRun) close() {
	r.stopPrograms()
	if r.farm != nil {
		r.farm.Close()
	}
	if r.amqpc != nil {
		r.amqpc.Close()
	}
	if r.rdb != nil {
		r.rdb.Close()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.h != nil {
		r.h.Close()
	}
	finishDir(r.dir, r.cfg.keep, r.procs, r.log, "logs and profiles")
}

// envList is a repeatable NAME=VALUE flag.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }

// Set takes NAME=VALUE, for every program, or KIND:NAME=VALUE, for the
// programs of one kind (crawler:GOMAXPROCS=1).
func (e *envList) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE or KIND:NAME=VALUE, got %q", v)
	}
	if kind, _, scoped := strings.Cut(name, ":"); scoped && !slices.Contains(programGroups, kind) {
		return fmt.Errorf("%q: no program kind %q (want one of %s)", v, kind, strings.Join(programGroups, ", "))
	}
	*e = append(*e, v)
	return nil
}

// of returns the entries for a program of kind: those for every program,
// and kind's own without their prefix.
func (e envList) of(kind string) []string {
	var out []string
	for _, v := range e {
		name, _, _ := strings.Cut(v, "=")
		k, _, scoped := strings.Cut(name, ":")
		switch {
		case !scoped:
			out = append(out, v)
		case k == kind:
			out = append(out, strings.TrimPrefix(v, kind+":"))
		}
	}
	return out
}

// archiveFigures measures the archive (PORTALWATCH_ARCHIVE, on unless -env
// says otherwise): the bytes of its files, the snapshots indexed, and the
// bytes per successful check, which is what an archive costs the disk.
func (r *e2eRun) archiveFigures(ctx context.Context, res *e2eResult) error {
	if err := r.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM snapshots), (SELECT coalesce(sum(ok_checks), 0) FROM pages)`).
		Scan(&res.archiveSnapshots, &res.okChecks); err != nil {
		return fmt.Errorf("archive figures: %w", err)
	}
	err := filepath.WalkDir(filepath.Join(r.h.sb.DataDir, "archive"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			res.archiveBytes += info.Size()
		}
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive figures: %w", err)
	}
	r.logf("archive: %d bytes, %d snapshots, %d successful checks", res.archiveBytes, res.archiveSnapshots, res.okChecks)
	return nil
}

package pwbench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"time"
)

// politeConfig configures "pwbench polite".
type politeConfig struct {
	e2e            e2eConfig
	origins        int           // loopback origins
	perOrigin      int           // pages on each
	interval       time.Duration // each page's check interval
	spacing        time.Duration // PORTALWATCH_HOST_SPACING
	inFlight       int           // PORTALWATCH_HOST_MAX_INFLIGHT
	warmup, window time.Duration
}

// politeResult is what "pwbench polite" prints as JSON.
type politeResult struct {
	Origins   int     `json:"origins"`
	PerOrigin int     `json:"pages_per_origin"`
	Demand    float64 `json:"demand_per_origin"` // checks a second the pages ask of each origin
	Allowed   float64 `json:"allowed_per_origin"`
	// Rate is each origin's checks a second over the window divided by
	// the rate the spacing allows (or the demand, when that is lower).
	RateMin  float64 `json:"rate_min"`
	RateMean float64 `json:"rate_mean"`
	// Early counts the gaps between two fetches of one origin shorter
	// than the spacing (less 10 ms of clock slack): politeness broken.
	Early       int     `json:"early"`
	GapMinMS    float64 `json:"gap_min_ms"`
	GapMedianMS float64 `json:"gap_median_ms"`
	Deferred    float64 `json:"deferred"` // checks the crawlers deferred in the window
}

// runPolite measures how close the fleet comes to the rate the per-origin
// politeness allows when the pages of a few origins ask for more: each
// origin should be fetched once a spacing, never sooner.
func runPolite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := politeConfig{}
	fs := flag.NewFlagSet("pwbench polite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFlags(fs, &c.e2e.svc, &c.e2e.repo)
	fs.IntVar(&c.origins, "origins", 4, "loopback origins (127.0.1.x)")
	fs.IntVar(&c.perOrigin, "pages-per-origin", 12, "pages on each origin")
	fs.DurationVar(&c.interval, "interval", 5*time.Second, "each page's check interval")
	fs.DurationVar(&c.spacing, "spacing", time.Second, "PORTALWATCH_HOST_SPACING")
	fs.IntVar(&c.inFlight, "inflight", 3, "PORTALWATCH_HOST_MAX_INFLIGHT")
	fs.DurationVar(&c.warmup, "warmup", 15*time.Second, "time to reach steady state")
	fs.DurationVar(&c.window, "window", 40*time.Second, "measurement window")
	fs.IntVar(&c.e2e.crawlers, "crawlers", 1, "crawler processes")
	fs.IntVar(&c.e2e.crawlerConcurrency, "crawler-concurrency", 16, "PORTALWATCH_CRAWLER_CONCURRENCY")
	fs.Var(&c.e2e.env, "env", "NAME=VALUE for every program (repeatable)")
	fs.BoolVar(&c.e2e.keep, "keep", false, "keep the programs' logs")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if c.origins < 1 || c.origins > 254 || c.perOrigin < 1 || c.interval < time.Second || c.spacing <= 0 || c.inFlight < 0 {
		return fmt.Errorf("bad flags: want 1-254 origins, pages, an interval ≥ 1s and a positive spacing: %w", ErrUsage)
	}
	e := &c.e2e
	e.mode, e.pages, e.hosts = "synthetic", c.origins*c.perOrigin, c.origins
	e.synth = synthConfig{minKB: 5, maxKB: 10, minAnchors: 50, maxAnchors: 80, perRound: 1, visible: 3, seed: 20240501}
	e.round = c.interval
	e.processors, e.processorConcurrency = 1, 8
	e.logLevel = "info"
	e.timeout = 10 * time.Minute
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()

	r := &e2eRun{cfg: *e, log: stderr, extraEnv: []string{
		"PORTALWATCH_HOST_SPACING=" + c.spacing.String(),
		fmt.Sprintf("PORTALWATCH_HOST_MAX_INFLIGHT=%d", c.inFlight),
	}}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return err
	}
	res, err := r.polite(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d origins × %d pages every %s, spacing %s, in-flight cap %d: demand %.2f/s an origin, allowed %.2f/s\n",
		res.Origins, res.PerOrigin, c.interval, c.spacing, c.inFlight, res.Demand, res.Allowed)
	fmt.Fprintf(stdout, "rate of the allowed: min %.3f, mean %.3f; early gaps %d, shortest %.0f ms; median gap %.0f ms; deferred %.0f\n",
		res.RateMin, res.RateMean, res.Early, res.GapMinMS, res.GapMedianMS, res.Deferred)
	return printJSON(stdout, res)
}

func (r *e2eRun) polite(ctx context.Context, c politeConfig) (politeResult, error) {
	res := politeResult{Origins: c.origins, PerOrigin: c.perOrigin,
		Demand:  float64(c.perOrigin) / c.interval.Seconds(),
		Allowed: 1 / c.spacing.Seconds()}
	if err := r.baseline(ctx, &e2eResult{pages: len(r.farm.pages)}); err != nil {
		return res, err
	}
	r.farm.startRounds(time.Now())
	if _, err := r.db.Exec(ctx, `UPDATE pages SET check_interval = $1 * interval '1 millisecond', next_check_at = now() + random() * $1 * interval '1 millisecond'`, c.interval.Milliseconds()); err != nil {
		return res, err
	}
	r.logf("polite: warming up %s, then measuring %s", c.warmup, c.window)
	if err := sleep(ctx, c.warmup); err != nil {
		return res, err
	}
	type mark struct{ fetches, gaps int }
	before := map[string]mark{}
	for host, h := range r.farm.hosts {
		n, gaps := h.snapshot(0)
		before[host] = mark{n, len(gaps)}
	}
	deferred0, err := scrapeAll(ctx, r.kind("crawler"), `portalwatch_crawler_checks_total{outcome="deferred"}`)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := sleep(ctx, c.window); err != nil {
		return res, err
	}
	if err := r.alive(); err != nil {
		return res, err
	}
	elapsed := time.Since(start).Seconds()
	deferred1, err := scrapeAll(ctx, r.kind("crawler"), `portalwatch_crawler_checks_total{outcome="deferred"}`)
	if err != nil {
		return res, err
	}
	res.Deferred = deferred1 - deferred0
	target := min(res.Demand, res.Allowed)
	res.RateMin = math.Inf(1)
	var all []time.Duration
	for host, h := range r.farm.hosts {
		n, gaps := h.snapshot(before[host].gaps)
		rate := float64(n-before[host].fetches) / elapsed / target
		res.RateMin = min(res.RateMin, rate)
		res.RateMean += rate / float64(len(r.farm.hosts))
		for _, g := range gaps {
			if g < c.spacing-10*time.Millisecond {
				res.Early++
			}
		}
		all = append(all, gaps...)
		r.logf("polite: %s: %.3f of the allowed rate", host, rate)
	}
	if len(all) > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		res.GapMedianMS = float64(all[len(all)/2].Microseconds()) / 1000
		res.GapMinMS = float64(all[0].Microseconds()) / 1000
	}
	return res, nil
}

package pwbench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// peerConfig configures "pwbench peer".
type peerConfig struct {
	svc      services
	repo     string
	pages    int
	rounds   int // rounds with every page changed
	same     int // rounds with no page changed
	synth    synthConfig
	hosts    int
	urlwatch string
	timeout  time.Duration
}

// peerRound is one round of checks of every page by one system.
type peerRound struct {
	seconds float64
	cpu     float64 // CPU seconds, all processes the system needs
	cpuProg float64 // of its own programs only
}

// runPeer checks the same synthetic pages with urlwatch (cache in a
// temporary folder, only the stdout reporter) and with portalwatch, round
// after round, every page changing between rounds, and reports pages per
// second and CPU seconds per page side by side.
//
// A urlwatch round is one "urlwatch" run over every page, as cron would
// start it: it fetches with its 10 threads, diffs each page against its
// cache and prints the diffs. A portalwatch round starts when every page is
// made due and ends when the last check is recorded in PostgreSQL; the
// scheduler polls every 100 ms here (PORTALWATCH_SCHEDULER_POLL), so its
// default 1 s pause does not dominate a round of a couple of seconds.
func runPeer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c peerConfig
	fs := flag.NewFlagSet("pwbench peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFlags(fs, &c.svc, &c.repo)
	fs.IntVar(&c.pages, "pages", 200, "pages both systems check")
	fs.IntVar(&c.rounds, "rounds", 3, "measured rounds with every page changed, per system (after a first, baseline round)")
	fs.IntVar(&c.same, "unchanged-rounds", 2, "then measured rounds with no page changed, per system")
	fs.IntVar(&c.hosts, "hosts", 16, "loopback addresses the farm serves from")
	fs.StringVar(&c.urlwatch, "urlwatch", "urlwatch", "the urlwatch program (Debian package urlwatch)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "stop the run after this long, whatever happens")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	c.synth = synthConfig{minKB: 100, maxKB: 250, minAnchors: 300, maxAnchors: 600, perRound: 3, visible: 10, seed: 20240501}
	if _, err := exec.LookPath(c.urlwatch); err != nil {
		return fmt.Errorf("urlwatch not found (apt-get install -y urlwatch): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	ls, err := listenFarm(c.hosts)
	if err != nil {
		return err
	}
	f := newFarm(ls, newSynthPages(c.pages, ls, c.synth), time.Hour)
	defer f.Close()
	f.setVersion(0)

	uw, err := urlwatchRounds(ctx, c, f, stderr)
	if err != nil {
		return err
	}
	pw, updates, err := portalwatchRounds(ctx, c, f, stderr)
	if err != nil {
		return err
	}

	changed, same := func(rs []peerRound) []peerRound { return rs[:c.rounds] }, func(rs []peerRound) []peerRound { return rs[c.rounds:] }
	fmt.Fprintf(stdout, "\n== urlwatch vs portalwatch: %d synthetic pages (median (min–max) of the rounds) ==\n", c.pages)
	fmt.Fprintf(stdout, "%-28s %22s %24s %26s\n", "", "pages/s", "CPU ms/page (all)", "CPU ms/page (own programs)")
	row := func(name string, rs []peerRound) {
		fmt.Fprintf(stdout, "%-28s %22s %24s %26s\n", name, peerRate(rs, c.pages), peerCPU(rs, c.pages, false), peerCPU(rs, c.pages, true))
	}
	row(fmt.Sprintf("urlwatch, pages changed ×%d", c.rounds), changed(uw))
	row(fmt.Sprintf("portalwatch, changed ×%d", c.rounds), changed(pw))
	if c.same > 0 {
		row(fmt.Sprintf("urlwatch, unchanged ×%d", c.same), same(uw))
		row(fmt.Sprintf("portalwatch, unchanged ×%d", c.same), same(pw))
	}
	ratio := peerRate(changed(pw), c.pages).median / peerRate(changed(uw), c.pages).median
	want := c.rounds * c.pages * c.synth.perRound
	fmt.Fprintf(stdout, "portalwatch / urlwatch pages/s, pages changed: %.2f (target ≥ 3); updates recorded %d (want %d)\n", ratio, updates, want)
	out := map[string]any{
		"pages": c.pages, "rounds": c.rounds, "unchanged_rounds": c.same,
		"urlwatch_pages_per_s": round3(peerRate(changed(uw), c.pages).median), "portalwatch_pages_per_s": round3(peerRate(changed(pw), c.pages).median),
		"ratio":                    round3(ratio),
		"urlwatch_cpu_ms_per_page": round3(peerCPU(changed(uw), c.pages, false).median), "portalwatch_cpu_ms_per_page": round3(peerCPU(changed(pw), c.pages, false).median),
		"portalwatch_programs_cpu_ms_per_page": round3(peerCPU(changed(pw), c.pages, true).median),
		"updates":                              updates, "updates_expected": want,
	}
	if c.same > 0 {
		out["urlwatch_unchanged_pages_per_s"] = round3(peerRate(same(uw), c.pages).median)
		out["portalwatch_unchanged_pages_per_s"] = round3(peerRate(same(pw), c.pages).median)
		out["ratio_unchanged"] = round3(peerRate(same(pw), c.pages).median / peerRate(same(uw), c.pages).median)
	}
	return printJSON(stdout, out)
}

// peerRate is the pages per second of each round.
func peerRate(rs []peerRound, pages int) spread {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = float64(pages) / r.seconds
	}
	return spreadOf(xs)
}

// peerCPU is the CPU milliseconds per page of each round: everything the
// system needs, or its own programs only.
func peerCPU(rs []peerRound, pages int, own bool) spread {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = 1000 * r.cpu / float64(pages)
		if own {
			xs[i] = 1000 * r.cpuProg / float64(pages)
		}
	}
	return spreadOf(xs)
}

// versions returns the farm version of each measured round: c.rounds new
// versions, then c.same repeats of the last.
func (c peerConfig) versions() []int {
	var vs []int
	for v := 1; v <= c.rounds; v++ {
		vs = append(vs, v)
	}
	for range c.same {
		vs = append(vs, c.rounds)
	}
	return vs
}

// urlwatchRounds runs urlwatch once to fill its cache, then once per
// measured round.
func urlwatchRounds(ctx context.Context, c peerConfig, f *farm, log io.Writer) ([]peerRound, error) {
	dir, err := os.MkdirTemp("", "pwbench-urlwatch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var urls strings.Builder
	for i, p := range f.pages {
		if i > 0 {
			urls.WriteString("---\n")
		}
		fmt.Fprintf(&urls, "name: page %d\nurl: %s\n", i, p.url)
	}
	config := "report:\n  stdout:\n    enabled: true\n    color: false\n  email:\n    enabled: false\n"
	for name, body := range map[string]string{"urls.yaml": urls.String(), "urlwatch.yaml": config, "hooks.py": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	runOnce := func() (peerRound, error) {
		cmd := exec.CommandContext(ctx, c.urlwatch, "--urls", filepath.Join(dir, "urls.yaml"),
			"--config", filepath.Join(dir, "urlwatch.yaml"), "--hooks", filepath.Join(dir, "hooks.py"),
			"--cache", filepath.Join(dir, "cache.db"))
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
		cmd.Stdout = io.Discard
		var errOut strings.Builder
		cmd.Stderr = &errOut
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return peerRound{}, fmt.Errorf("urlwatch: %w: %s", err, errOut.String())
		}
		wall := time.Since(start).Seconds()
		// urlwatch needs no service: its CPU is its own (the farm's serving
		// is pwbench's, for both systems alike).
		own := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		return peerRound{seconds: wall, cpu: own, cpuProg: own}, nil
	}
	fmt.Fprintf(log, "%s  urlwatch: first run (fills its cache)\n", time.Now().Format("15:04:05"))
	if _, err := runOnce(); err != nil {
		return nil, err
	}
	var rounds []peerRound
	for i, v := range c.versions() {
		f.setVersion(v)
		round, err := runOnce()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "%s  urlwatch round %d (version %d): %.2fs, %.0f pages/s\n",
			time.Now().Format("15:04:05"), i+1, v, round.seconds, float64(c.pages)/round.seconds)
		rounds = append(rounds, round)
	}
	return rounds, nil
}

// portalwatchRounds runs the real programs on the same pages: a baseline
// round, then one round per measured version.
func portalwatchRounds(ctx context.Context, c peerConfig, f *farm, log io.Writer) ([]peerRound, int, error) {
	cfg := e2eConfig{svc: c.svc, repo: c.repo, mode: "synthetic", pages: c.pages, hosts: c.hosts,
		crawlers: 1, crawlerConcurrency: 16, processors: 1, processorConcurrency: 8, logLevel: "info"}
	r := &e2eRun{cfg: cfg, log: log, farm: f}
	defer func() {
		r.farm = nil // the caller closes the farm
		r.close()
	}()
	var err error
	if r.dir, err = os.MkdirTemp("", "pwbench-peer-"); err != nil {
		return nil, 0, err
	}
	if err := r.connect(ctx); err != nil {
		return nil, 0, err
	}
	if err := r.register(ctx); err != nil {
		return nil, 0, err
	}
	r.extraEnv = []string{"PORTALWATCH_SCHEDULER_POLL=100ms"}
	if err := r.startPrograms(); err != nil {
		return nil, 0, err
	}
	meter := r.meter(ctx)
	round := func(v int) (peerRound, error) {
		f.setVersion(v)
		before := meter.sample()
		start := time.Now()
		if _, err := r.db.Exec(ctx, `UPDATE pages SET next_check_at = now()`); err != nil {
			return peerRound{}, err
		}
		// A round of a few hundred pages lasts one or two seconds: waitFor's
		// 200 ms poll would add half its period to it on average (a tenth
		// of the round), while urlwatch's rounds end when its process does.
		err := r.waitEvery(ctx, fmt.Sprintf("round of version %d", v), 5*time.Minute, 10*time.Millisecond, func() (bool, string, error) {
			done, err := r.countPages(ctx, "last_checked_at >= $1", start)
			return done == c.pages, fmt.Sprintf("%d of %d", done, c.pages), err
		})
		if err != nil {
			return peerRound{}, err
		}
		seconds := time.Since(start).Seconds()
		d := meter.sample().sub(before)
		var own, all float64
		for _, g := range programGroups {
			own += d.byGroup[g]
		}
		all = own
		for _, g := range serviceGroups {
			all += d.byGroup[g]
		}
		return peerRound{seconds: seconds, cpu: all, cpuProg: own}, nil
	}
	fmt.Fprintf(log, "%s  portalwatch: baseline round\n", time.Now().Format("15:04:05"))
	if _, err := round(0); err != nil {
		return nil, 0, err
	}
	var rounds []peerRound
	for i, v := range c.versions() {
		rd, err := round(v)
		if err != nil {
			return nil, 0, err
		}
		fmt.Fprintf(log, "%s  portalwatch round %d (version %d): %.2fs, %.0f pages/s\n",
			time.Now().Format("15:04:05"), i+1, v, rd.seconds, float64(c.pages)/rd.seconds)
		rounds = append(rounds, rd)
	}
	if err := r.drainQueues(ctx); err != nil {
		return nil, 0, err
	}
	var updates int
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM updates`).Scan(&updates); err != nil {
		return nil, 0, err
	}
	return rounds, updates, nil
}

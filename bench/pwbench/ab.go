package pwbench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
)

// abConfig is one A/B comparison: the programs of two revisions, each built
// once, measured by the same e2e run in turn, pairs times, the order
// alternating (A B, B A, …) so that a drift of the machine over the run
// falls on both alike.
type abConfig struct {
	a, b  string // module roots of the two revisions
	pairs int
	e2e   e2eConfig
}

// abFigures are the summary's figures an A/B reports, by their summary key
// (cpu_ms_per_page.X is one group's CPU): throughput and its ratio to the
// parse ceiling, CPU a page in all and by process, what PostgreSQL writes,
// Redis calls, latency and memory.
var abFigures = []string{
	"e2e_pages_per_s", "ratio", "cpu_ms_per_page.total", "cpu_ms_per_page.crawler", "cpu_ms_per_page.processor",
	"cpu_ms_per_page.scheduler", "cpu_ms_per_page.postgres", "cpu_ms_per_page.rabbitmq", "cpu_ms_per_page.redis",
	"pg_xacts_per_page", "pg_rows_inserted_per_page", "pg_rows_updated_per_page", "pg_wal_bytes_per_page",
	"redis_calls_per_page.total", "latency_p99_s", "crawler_rss_mb",
}

// runAB runs `pwbench ab`.
func runAB(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var cfg abConfig
	fs := flag.NewFlagSet("pwbench ab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.e2e.flags(fs)
	fs.StringVar(&cfg.a, "a", "", "module root of revision A, the reference (a checkout or a git worktree)")
	fs.StringVar(&cfg.b, "b", "", "module root of revision B, measured against A")
	fs.IntVar(&cfg.pairs, "pairs", 3, "measured runs of each revision, alternating")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if cfg.a == "" || cfg.b == "" || cfg.pairs < 1 {
		return fmt.Errorf("give -a and -b, and -pairs of at least 1: %w", ErrUsage)
	}
	if err := cfg.e2e.settle(); err != nil {
		return err
	}
	bins := map[string]string{}
	for _, arm := range []struct{ name, root string }{{"A", cfg.a}, {"B", cfg.b}} {
		start := time.Now()
		bin, err := systest.BuildAt(ctx, arm.root, false)
		if err != nil {
			return fmt.Errorf("build %s (%s): %w", arm.name, arm.root, err)
		}
		defer os.RemoveAll(bin)
		bins[arm.name] = bin
		fmt.Fprintf(stderr, "built %s from %s in %.1fs\n", arm.name, arm.root, time.Since(start).Seconds())
	}
	runs := map[string][]map[string]any{}
	for i := range cfg.pairs {
		order := []string{"A", "B"}
		if i%2 == 1 {
			order = []string{"B", "A"}
		}
		for _, arm := range order {
			fmt.Fprintf(stderr, "%s  pair %d of %d: %s\n", time.Now().Format("15:04:05"), i+1, cfg.pairs, arm)
			sum, err := runE2EOnce(ctx, cfg.e2e, bins[arm], stderr)
			if err != nil {
				return fmt.Errorf("pair %d, %s: %w", i+1, arm, err)
			}
			runs[arm] = append(runs[arm], sum)
		}
	}
	report := abReport(runs["A"], runs["B"])
	report.print(stdout)
	return printJSON(stdout, report)
}

// runE2EOnce is one e2e run on programs built already, and its summary.
func runE2EOnce(ctx context.Context, cfg e2eConfig, bin string, log io.Writer) (map[string]any, error) {
	cfg.bin = bin
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	r := newE2ERun(cfg, log)
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	res, err := r.measure(ctx)
	if err != nil {
		return nil, err
	}
	// Through JSON, so that the figures are read as any reader of the
	// summary line reads them.
	b, err := json.Marshal(res.summary())
	if err != nil {
		return nil, err
	}
	var sum map[string]any
	return sum, json.Unmarshal(b, &sum)
}

// abFigure is one figure of an A/B: each revision's values, run by run, and
// B/A of each pair.
type abFigure struct {
	Name   string    `json:"name"`
	A      []float64 `json:"a"`
	B      []float64 `json:"b"`
	Ratios []float64 `json:"ratios"`
	// Mean is the mean of the pairs' ratios; Min and Max their spread.
	Mean float64 `json:"ratio_mean"`
	Min  float64 `json:"ratio_min"`
	Max  float64 `json:"ratio_max"`
}

type abResult struct {
	Pairs   int        `json:"pairs"`
	Figures []abFigure `json:"figures"`
	// Missing, Extra and Duplicates sum every run's correctness counts.
	Missing    float64 `json:"missing"`
	Extra      float64 `json:"extra"`
	Duplicates float64 `json:"duplicates"`
}

func abReport(a, b []map[string]any) abResult {
	res := abResult{Pairs: min(len(a), len(b))}
	for _, name := range abFigures {
		f := abFigure{Name: name}
		for i := range res.Pairs {
			va, okA := figure(a[i], name)
			vb, okB := figure(b[i], name)
			if !okA || !okB || va < 0 || vb < 0 {
				continue // not measured in this run (the summary says -1)
			}
			f.A, f.B = append(f.A, va), append(f.B, vb)
			if va != 0 {
				f.Ratios = append(f.Ratios, vb/va)
			}
		}
		if len(f.Ratios) == 0 {
			continue
		}
		f.Min, f.Max = slices.Min(f.Ratios), slices.Max(f.Ratios)
		for _, r := range f.Ratios {
			f.Mean += r / float64(len(f.Ratios))
		}
		res.Figures = append(res.Figures, f)
	}
	for _, runs := range [][]map[string]any{a, b} {
		for _, run := range runs {
			for key, sum := range map[string]*float64{"missing": &res.Missing, "extra": &res.Extra, "duplicates": &res.Duplicates} {
				if v, ok := figure(run, key); ok {
					*sum += v
				}
			}
		}
	}
	return res
}

// figure reads a number of a summary: "x" or "x.y" for a key of a map; for
// "x.total" of a map without one, the sum of its values.
func figure(sum map[string]any, name string) (float64, bool) {
	key, sub, nested := strings.Cut(name, ".")
	v, ok := sum[key]
	if !ok {
		return 0, false
	}
	if !nested {
		f, ok := v.(float64)
		return f, ok && !math.IsNaN(f)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return 0, false
	}
	if f, ok := m[sub].(float64); ok {
		return f, true
	}
	if sub != "total" {
		return 0, false
	}
	total := 0.0
	for _, x := range m {
		if f, ok := x.(float64); ok {
			total += f
		}
	}
	return total, true
}

func (r abResult) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "figure\tA (runs)\tB (runs)\tB/A mean\tB/A spread\n")
	for _, f := range r.Figures {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f–%.3f\n", f.Name, values(f.A), values(f.B), f.Mean, f.Min, f.Max)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d pairs; missing / extra / duplicate updates over every run: %.0f / %.0f / %.0f\n",
		r.Pairs, r.Missing, r.Extra, r.Duplicates)
}

func values(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
	}
	return strings.Join(s, ", ")
}

package pwbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// window is what happened between two snapshots.
type window struct {
	seconds       float64
	pages         float64 // tasks the processors handled: page checks
	pagesPerSec   float64
	fetchesPerSec float64
	// sourcesPerSec are the feed and sitemap checks (and discoveries)
	// recorded a second; docFetchesPerSec their fetches.
	sourcesPerSec, docFetchesPerSec float64
	updates                         float64
	cpuPerPage                      map[string]float64 // CPU seconds per page check, by process group
	busyCores                       float64            // the whole machine, in cores
	otherPerPage                    float64            // machine CPU per page not accounted to any group

	pgXacts, pgInserted, pgUpdated, pgWAL float64            // per page check
	pgTableIns, pgTableUpd, pgTableHot    map[string]float64 // per page check
	redisCalls                            map[string]float64 // per page check
}

func newWindow(a, b snapshot) window {
	w := window{seconds: b.at.Sub(a.at).Seconds(), pages: b.tasks - a.tasks, updates: b.updates - a.updates}
	w.pagesPerSec = w.pages / w.seconds
	w.fetchesPerSec = float64(b.fetches-a.fetches) / w.seconds
	w.sourcesPerSec = (b.sourceTasks - a.sourceTasks) / w.seconds
	w.docFetchesPerSec = float64(b.docFetches-a.docFetches) / w.seconds
	per := func(x float64) float64 { return x / math.Max(w.pages, 1) }
	cpu := b.cpu.sub(a.cpu)
	w.cpuPerPage = map[string]float64{}
	for g, s := range cpu.byGroup {
		w.cpuPerPage[g] = per(s)
	}
	if cpu.machineAll > 0 {
		w.busyCores = cpu.machineBusy / cpu.machineAll * float64(numCPU())
		// machineAll counts every core; busy seconds are core-seconds.
		accounted := 0.0
		for _, v := range cpu.byGroup {
			accounted += v
		}
		w.otherPerPage = per(cpu.machineBusy - accounted)
	}
	w.pgXacts = per(b.pg.commits - a.pg.commits + b.pg.rollbacks - a.pg.rollbacks)
	w.pgInserted = per(b.pg.inserted - a.pg.inserted)
	w.pgUpdated = per(b.pg.updated - a.pg.updated)
	w.pgWAL = per(b.pg.walBytes - a.pg.walBytes)
	w.pgTableIns, w.pgTableUpd, w.pgTableHot = map[string]float64{}, map[string]float64{}, map[string]float64{}
	for t := range b.pg.tableIns {
		w.pgTableIns[t] = per(b.pg.tableIns[t] - a.pg.tableIns[t])
		w.pgTableUpd[t] = per(b.pg.tableUpd[t] - a.pg.tableUpd[t])
		w.pgTableHot[t] = per(b.pg.tableHot[t] - a.pg.tableHot[t])
	}
	w.redisCalls = map[string]float64{}
	for c, v := range b.redis {
		if d := v - a.redis[c]; d > 0 {
			w.redisCalls[c] = per(d)
		}
	}
	return w
}

// programGroups and serviceGroups are the rows of the CPU table.
var (
	programGroups = []string{"scheduler", "crawler", "processor", "extractor"}
	serviceGroups = []string{"rabbitmq", "postgres", "redis"}
)

func (w window) cpuTotal(groups ...[]string) float64 {
	var t float64
	for _, gs := range groups {
		for _, g := range gs {
			t += w.cpuPerPage[g]
		}
	}
	return t
}

func numCPU() int { return runtime.NumCPU() }

// e2eResult is everything "pwbench e2e" measured.
type e2eResult struct {
	cfg   e2eConfig
	pages int

	baselinePerSec      float64
	saturation, half    window
	satStart, satEnd    time.Time
	halfStart, halfEnd  time.Time
	interval            time.Duration
	latency, satLatency []float64 // sorted, seconds
	truth, found        int
	missing, extra      int
	duplicates          int
	missingSample       []string
	// wrongSource counts updates whose source never listed their link;
	// bySource counts the updates found by their source; onlyTruth and
	// onlyFound count the links only a feed or only a sitemap listed, and
	// how many of them were found (-sources).
	wrongSource          int
	wrongSample          []string
	bySource             map[string]int
	onlyTruth, onlyFound map[string]int
	extraSample          []string
	rss                  map[string]float64 // MB, largest process of each kind
	// withArticle and workLeft are, with -articles, the updates given their
	// article and the links still waiting when the queues have drained.
	withArticle, workLeft int
	// archiveBytes, archiveSnapshots and okChecks are the archive's files,
	// its index rows and the run's successful checks.
	archiveBytes               int64
	archiveSnapshots, okChecks int64
	runLinks, runKeys          int
	runRedisPerLink            float64
	redis                      *redisMemory
	parse                      ceiling
	profiles                   map[string][]string
}

func (r *e2eResult) ratio() float64 { return r.saturation.pagesPerSec / r.parse.pagesPerSec.median }

// capacity is what the pipeline would check per second on this machine's
// cores if they ran nothing else (no other users, no farm): the cores over
// the CPU a page check costs the programs and services. On a shared, noisy
// machine it moves less than the measured rate.
func (r *e2eResult) capacity() float64 {
	return float64(numCPU()) / r.saturation.cpuTotal(programGroups, serviceGroups)
}

// ratioCPU compares capacity with the parse ceiling per CPU-second: the
// ratio with the other users of the machine taken out on both sides.
func (r *e2eResult) ratioCPU() float64 { return r.capacity() / r.parse.pagesPerCPU.median }

func (r *e2eResult) print(w io.Writer) {
	s := r.saturation
	fmt.Fprintf(w, "\n== portalwatch end to end: %s farm, %d pages, %d loopback hosts ==\n", r.cfg.mode, r.pages, r.cfg.hosts)
	fmt.Fprintf(w, "programs: 1 scheduler, %d crawler(s) × %d, %d processor(s) × %d; %d cores; extra environment: %s\n",
		r.cfg.crawlers, r.cfg.crawlerConcurrency, r.cfg.processors, r.cfg.processorConcurrency, numCPU(), orDefault(r.cfg.env.String(), "none"))
	fmt.Fprintf(w, "\nthroughput (saturated, interval %s, %.0fs window)\n", r.cfg.satInterval, s.seconds)
	fmt.Fprintf(w, "  e2e pages checked/s        %8.1f   (fetched/s %.1f; baseline round %.1f)\n", s.pagesPerSec, s.fetchesPerSec, r.baselinePerSec)
	fmt.Fprintf(w, "  parse ceiling pages/s      %8.1f   (one core, html.Parse + BFS; spread %s; %.0f KB, %.0f links per page)\n",
		r.parse.pagesPerSec.median, r.parse.pagesPerSec, r.parse.bytesPerPag/1000, r.parse.linksPerPag)
	fmt.Fprintf(w, "  ratio e2e / ceiling        %8.2f   (target ≥ 0.75)\n", r.ratio())
	fmt.Fprintf(w, "  machine busy               %8.2f of %d cores\n", s.busyCores, numCPU())
	fmt.Fprintf(w, "  capacity (CPU-normalised)  %8.1f   (%d cores / CPU per page of programs and services; parse %.1f pages per CPU-second; ratio %.2f)\n",
		r.capacity(), numCPU(), r.parse.pagesPerCPU.median, r.ratioCPU())
	fmt.Fprintf(w, "\nCPU ms per page check\n")
	for _, g := range append(append(append([]string{}, programGroups...), serviceGroups...), "pwbench") {
		fmt.Fprintf(w, "  %-26s %8.3f\n", g, 1000*s.cpuPerPage[g])
	}
	fmt.Fprintf(w, "  %-26s %8.3f   (programs %.3f + services %.3f; pwbench's farm not included)\n", "total",
		1000*s.cpuTotal(programGroups, serviceGroups), 1000*s.cpuTotal(programGroups), 1000*s.cpuTotal(serviceGroups))
	fmt.Fprintf(w, "  %-26s %8.3f   (machine busy time no process above accounts for: kernel, other users)\n", "other", 1000*s.otherPerPage)
	fmt.Fprintf(w, "\nPostgreSQL per page check (run database; WAL is cluster-wide)\n")
	fmt.Fprintf(w, "  transactions %.2f, rows inserted %.2f, rows updated %.2f, WAL %.0f bytes\n", s.pgXacts, s.pgInserted, s.pgUpdated, s.pgWAL)
	for _, t := range sortedKeys(s.pgTableIns) {
		fmt.Fprintf(w, "  %-10s inserted %.2f, updated %.2f (HOT %.2f)\n", t, s.pgTableIns[t], s.pgTableUpd[t], s.pgTableHot[t])
	}
	fmt.Fprintf(w, "Redis commands per page check (server-wide): %s\n", formatCalls(s.redisCalls))
	fmt.Fprintf(w, "\ndetection latency at half rate (interval %s, jitter %s, %.1f pages/s, %d links)\n",
		r.interval, orDefault(r.cfg.jitter, "default"), r.half.pagesPerSec, len(r.latency))
	fmt.Fprintf(w, "  p50 %.2fs  p99 %.2fs  max %.2fs   (target p99 ≤ %.1fs)\n",
		percentile(r.latency, 50), percentile(r.latency, 99), lastOr(r.latency), r.interval.Seconds()+2)
	fmt.Fprintf(w, "  saturated: p50 %.2fs  p99 %.2fs  max %.2fs (%d links)\n",
		percentile(r.satLatency, 50), percentile(r.satLatency, 99), lastOr(r.satLatency), len(r.satLatency))
	fmt.Fprintf(w, "\npeak RSS (VmHWM) MB: %s\n", formatMap(r.rss, "%.0f"))
	fmt.Fprintf(w, "Redis in this run: %d links in %d keys, %.1f B/link (Σ MEMORY USAGE)\n", r.runLinks, r.runKeys, r.runRedisPerLink)
	if r.redis != nil {
		r.redis.print(w)
	}
	fmt.Fprintf(w, "\ncorrectness: %d new links served, %d found; missing %d, extra %d, duplicates %d\n",
		r.truth, r.found, r.missing, r.extra, r.duplicates)
	for _, u := range r.missingSample {
		fmt.Fprintf(w, "  missing e.g. %s\n", u)
	}
	for _, u := range r.extraSample {
		fmt.Fprintf(w, "  extra e.g. %s\n", u)
	}
	if r.cfg.synth.sources {
		fmt.Fprintf(w, "sources: saturated %.1f feed and sitemap checks/s (%.1f fetched) beside the pages; updates by source %s\n",
			s.sourcesPerSec, s.docFetchesPerSec, formatMap(intMap(r.bySource), "%.0f"))
		fmt.Fprintf(w, "  only in a feed: %d of %d found; only in a sitemap: %d of %d found; from a source that never listed them %d\n",
			r.onlyFound[kindFeed], r.onlyTruth[kindFeed], r.onlyFound[kindSitemap], r.onlyTruth[kindSitemap], r.wrongSource)
		for _, u := range r.wrongSample {
			fmt.Fprintf(w, "  wrong source e.g. %s\n", u)
		}
	}
	for _, name := range sortedKeys(r.profiles) {
		fmt.Fprintf(w, "\nperf profile of %s (self time, top entries)\n", name)
		for _, l := range r.profiles[name] {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w)
}

// summary is the JSON object of the run's last line.
func (r *e2eResult) summary() map[string]any {
	s := r.saturation
	cpu := map[string]float64{}
	for g, v := range s.cpuPerPage {
		cpu[g] = round3(1000 * v)
	}
	cpu["total"] = round3(1000 * s.cpuTotal(programGroups, serviceGroups))
	cpu["other"] = round3(1000 * s.otherPerPage)
	out := map[string]any{
		"mode": r.cfg.mode, "pages": r.pages, "env": r.cfg.env.String(),
		"crawlers": r.cfg.crawlers, "crawler_concurrency": r.cfg.crawlerConcurrency,
		"processors": r.cfg.processors, "processor_concurrency": r.cfg.processorConcurrency,
		"e2e_pages_per_s":           round3(s.pagesPerSec),
		"parse_pages_per_s":         round3(r.parse.pagesPerSec.median),
		"parse_pages_per_s_min":     round3(r.parse.pagesPerSec.min),
		"parse_pages_per_s_max":     round3(r.parse.pagesPerSec.max),
		"ratio":                     round3(r.ratio()),
		"busy_cores":                round3(s.busyCores),
		"cpu_ms_per_page":           cpu,
		"latency_p50_s":             round3(percentile(r.latency, 50)),
		"latency_p99_s":             round3(percentile(r.latency, 99)),
		"latency_max_s":             round3(lastOr(r.latency)),
		"latency_links":             len(r.latency),
		"latency_interval_s":        round3(r.interval.Seconds()),
		"half_rate_pages_per_s":     round3(r.half.pagesPerSec),
		"redis_bytes_per_link_run":  round3(r.runRedisPerLink),
		"pg_xacts_per_page":         round3(s.pgXacts),
		"pg_rows_inserted_per_page": round3(s.pgInserted),
		"pg_rows_updated_per_page":  round3(s.pgUpdated),
		"pg_wal_bytes_per_page":     math.Round(s.pgWAL),
		"redis_calls_per_page":      roundMap(s.redisCalls),
		"rss_mb":                    roundMap(r.rss),
		"crawler_rss_mb":            round3(r.rss["crawler"]),
		"new_links":                 r.truth,
		"missing":                   r.missing,
		"extra":                     r.extra,
		"duplicates":                r.duplicates,
	}
	out["archive_bytes"] = r.archiveBytes
	out["archive_snapshots"] = r.archiveSnapshots
	if r.okChecks > 0 {
		out["archive_bytes_per_check"] = round3(float64(r.archiveBytes) / float64(r.okChecks))
	}
	if r.cfg.synth.sources {
		out["sources"] = true
		out["source_checks_per_s"] = round3(s.sourcesPerSec)
		out["updates_by_source"] = r.bySource
		out["feed_only_links"], out["feed_only_found"] = r.onlyTruth[kindFeed], r.onlyFound[kindFeed]
		out["sitemap_only_links"], out["sitemap_only_found"] = r.onlyTruth[kindSitemap], r.onlyFound[kindSitemap]
		out["wrong_source"] = r.wrongSource
	}
	if r.cfg.portPerPage {
		out["port_per_page"] = true
	}
	if r.cfg.articles {
		out["updates_with_article"] = r.withArticle
		out["article_work_left"] = r.workLeft
	}
	if r.redis != nil {
		out["redis_bytes_per_link"] = round3(r.redis.perLinkInfo)
		out["redis_bytes_per_link_usage"] = round3(r.redis.perLinkUsage)
	} else {
		out["redis_bytes_per_link"] = -1
	}
	return out
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func lastOr(sorted []float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[len(sorted)-1]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func roundMap(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = round3(v)
	}
	return out
}

func formatMap(m map[string]float64, f string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+fmt.Sprintf(f, m[k]))
	}
	return strings.Join(parts, ", ")
}

// formatCalls lists the Redis commands issued at least 0.01 times per page.
func formatCalls(m map[string]float64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		if m[k] >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func intMap(m map[string]int) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

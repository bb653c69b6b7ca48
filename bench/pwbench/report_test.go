package pwbench

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {1, 1}, {10, 1}, {11, 2}, {50, 5}, {90, 9}, {99, 10}, {100, 10},
	} {
		if got := percentile(xs, c.p); got != c.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile([]float64{4.5}, 99); got != 4.5 {
		t.Errorf("percentile of one value = %v, want 4.5", got)
	}
	if got := percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile of nothing = %v, want NaN", got)
	}
}

func TestSpreadOfSortsACopy(t *testing.T) {
	t.Parallel()
	xs := []float64{30, 10, 20, 50, 40}
	s := spreadOf(xs)
	if s != (spread{median: 30, min: 10, max: 50}) {
		t.Errorf("spreadOf(%v) = %+v, want median 30, min 10, max 50", xs, s)
	}
	if !slices.Equal(xs, []float64{30, 10, 20, 50, 40}) {
		t.Errorf("spreadOf sorted its argument: %v", xs)
	}
	if got := spreadOf([]float64{2, 1}); got.median != 2 {
		t.Errorf("median of two = %v, want the upper one, 2", got.median)
	}
	if got := spreadOf(nil); !math.IsNaN(got.median) {
		t.Errorf("spreadOf(nil) = %+v, want NaN", got)
	}
}

func TestRound3MarksWhatJSONCannotHold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want float64 }{
		{1.23449, 1.234}, {1.2345001, 1.235}, {-2.5, -2.5}, {math.NaN(), -1}, {math.Inf(1), -1},
	} {
		if got := round3(c.in); got != c.want {
			t.Errorf("round3(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestCPUSubLeavesOutProcessesThatCameOrWent(t *testing.T) {
	t.Parallel()
	before := cpuSample{machineBusy: 10, machineAll: 40, byPID: map[int]pidCPU{
		1: {"crawler", 5}, 2: {"postgres", 1}, 3: {"redis", 7}, 4: {"scheduler", 2},
	}}
	after := cpuSample{machineBusy: 16, machineAll: 52, byPID: map[int]pidCPU{
		1: {"crawler", 8}, 2: {"postgres", 1.5}, 5: {"postgres", 100}, 4: {"processor", 9},
	}}
	d := after.sub(before)
	want := map[string]float64{"crawler": 3, "postgres": 0.5}
	if len(d.byGroup) != len(want) || d.byGroup["crawler"] != 3 || d.byGroup["postgres"] != 0.5 {
		t.Errorf("byGroup = %v, want %v (pid 3 went, pid 5 came, pid 4 changed group)", d.byGroup, want)
	}
	if d.machineBusy != 6 || d.machineAll != 12 {
		t.Errorf("machine = %v busy of %v, want 6 of 12", d.machineBusy, d.machineAll)
	}
}

func TestNewWindowIsPerPageCheck(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := snapshot{at: t0, tasks: 100, updates: 7, fetches: 1000,
		cpu: cpuSample{machineBusy: 0, machineAll: 0, byPID: map[int]pidCPU{1: {"crawler", 1}, 2: {"postgres", 0}}},
		pg: pgCounters{commits: 10, rollbacks: 1, inserted: 5, walBytes: 1000,
			tableIns: map[string]float64{"links": 2}, tableUpd: map[string]float64{"links": 0}, tableHot: map[string]float64{"links": 0}},
		redis: map[string]float64{"sadd": 50, "ping": 9}}
	b := snapshot{at: t0.Add(10 * time.Second), tasks: 300, updates: 47, fetches: 1250,
		cpu: cpuSample{machineBusy: 8, machineAll: 20 * float64(numCPU()),
			byPID: map[int]pidCPU{1: {"crawler", 3}, 2: {"postgres", 4}}},
		pg: pgCounters{commits: 410, rollbacks: 1, inserted: 205, walBytes: 201000,
			tableIns: map[string]float64{"links": 202}, tableUpd: map[string]float64{"links": 20}, tableHot: map[string]float64{"links": 10}},
		redis: map[string]float64{"sadd": 250, "ping": 9}}
	w := newWindow(a, b)
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("seconds", w.seconds, 10)
	check("pages", w.pages, 200)
	check("pagesPerSec", w.pagesPerSec, 20)
	check("fetchesPerSec", w.fetchesPerSec, 25)
	check("updates", w.updates, 40)
	check("crawler CPU per page", w.cpuPerPage["crawler"], 2.0/200)
	check("postgres CPU per page", w.cpuPerPage["postgres"], 4.0/200)
	check("busy cores", w.busyCores, 8/(20*float64(numCPU()))*float64(numCPU()))
	check("other CPU per page", w.otherPerPage, (8.0-6)/200)
	check("transactions per page", w.pgXacts, 2)
	check("rows inserted per page", w.pgInserted, 1)
	check("WAL per page", w.pgWAL, 1000)
	check("links inserted per page", w.pgTableIns["links"], 1)
	check("links HOT per page", w.pgTableHot["links"], 0.05)
	check("sadd per page", w.redisCalls["sadd"], 1)
	if _, ok := w.redisCalls["ping"]; ok {
		t.Errorf("a command not called in the window is listed: %v", w.redisCalls)
	}
	if w.cpuTotal(programGroups, serviceGroups) != w.cpuPerPage["crawler"]+w.cpuPerPage["postgres"] {
		t.Errorf("cpuTotal = %v, want crawler + postgres", w.cpuTotal(programGroups, serviceGroups))
	}
}

func TestNewWindowWithNoPageCheckDoesNotDivideByZero(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	w := newWindow(snapshot{at: t0}, snapshot{at: t0.Add(time.Second), pg: pgCounters{commits: 3}})
	if w.pages != 0 || w.pgXacts != 3 || math.IsInf(w.pgXacts, 0) {
		t.Errorf("no checks: pages %v, transactions per page %v; want 0 and 3 (per one page)", w.pages, w.pgXacts)
	}
}

func TestE2EResultRatios(t *testing.T) {
	t.Parallel()
	r := &e2eResult{
		saturation: window{pagesPerSec: 30, cpuPerPage: map[string]float64{"crawler": 0.01, "processor": 0.005, "postgres": 0.005}},
		parse:      ceiling{pagesPerSec: spread{median: 40}, pagesPerCPU: spread{median: 50}},
	}
	if got := r.ratio(); got != 0.75 {
		t.Errorf("ratio = %v, want 30/40", got)
	}
	wantCap := float64(numCPU()) / 0.02
	if got := r.capacity(); math.Abs(got-wantCap) > 1e-9 {
		t.Errorf("capacity = %v, want %v (cores over 20 ms a page)", got, wantCap)
	}
	if got := r.ratioCPU(); math.Abs(got-wantCap/50) > 1e-9 {
		t.Errorf("ratioCPU = %v, want %v", got, wantCap/50)
	}
	sum := r.summary()
	if sum["ratio"] != 0.75 || sum["redis_bytes_per_link"] != -1 || sum["latency_p99_s"] != -1.0 {
		t.Errorf("summary ratio %v, Redis bytes %v, p99 %v; want 0.75, -1 (not measured), -1 (no links)",
			sum["ratio"], sum["redis_bytes_per_link"], sum["latency_p99_s"])
	}
}

func TestSchedulerReportArithmetic(t *testing.T) {
	t.Parallel()
	res := schedResult{
		autovacuum: "on", plan: "Index Scan using pages_due", planAfter: "Index Scan", indexScan: true, messageBytes: 120,
		rawStream: [2]float64{1000, 3000}, rawBatch: [2]float64{4000, 6000},
		jobs: 1500, seconds: 1, jobsEarly: 600,
		cpu: cpuDelta{byGroup: map[string]float64{"scheduler": 0.3, "rabbitmq": 0.15}, machineBusy: 1, machineAll: 2},
	}
	var out bytes.Buffer
	if err := res.report(&out, schedConfig{pages: 2000, batch: 500, window: 500, procs: 1}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line is not the JSON summary: %v\n%s", err, out.String())
	}
	for key, want := range map[string]float64{
		"scheduler_jobs_per_s": 1500, "raw_publish_per_s": 2000, "raw_batch_publish_per_s": 5000,
		"ratio": 0.75, "ratio_batch": 0.3, "scheduler_jobs_per_s_first_30s": 20, "jobs_published": 1500,
	} {
		if sum[key] != want {
			t.Errorf("%s = %v, want %v", key, sum[key], want)
		}
	}
	cpu := sum["cpu_us_per_job"].(map[string]any)
	if cpu["scheduler"] != 200.0 || cpu["rabbitmq"] != 100.0 || cpu["postgres"] != 0.0 {
		t.Errorf("cpu_us_per_job = %v, want scheduler 200, rabbitmq 100, postgres 0", cpu)
	}
	if !strings.Contains(out.String(), "FOR UPDATE SKIP LOCKED") {
		t.Errorf("the report does not show the store's due query:\n%s", out.String())
	}
}

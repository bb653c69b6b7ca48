package pwbench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// schedConfig configures "pwbench scheduler".
type schedConfig struct {
	svc      services
	repo     string
	pages    int
	maxTime  time.Duration // bound on the scheduler phase
	rawTime  time.Duration // bound on each raw publishing phase
	rawMax   int           // bound on the messages of each raw phase
	window   int           // raw streaming: unconfirmed messages at most
	batch    int           // PORTALWATCH_SCHEDULER_BATCH
	procs    int           // scheduler processes
	vacuum   time.Duration // experiment: VACUUM pages this often during the run (0: never)
	timeout  time.Duration
	keepLogs bool
}

func runScheduler(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c schedConfig
	fs := flag.NewFlagSet("pwbench scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runFlags(fs, &c.svc, &c.repo)
	fs.IntVar(&c.pages, "pages", 1_000_000, "pages in the pages table, all due")
	fs.DurationVar(&c.maxTime, "max-time", 4*time.Minute, "bound on the scheduler phase")
	fs.DurationVar(&c.rawTime, "raw-time", 15*time.Second, "bound on each raw publishing phase")
	fs.IntVar(&c.rawMax, "raw-max", 300_000, "bound on the messages of each raw publishing phase")
	fs.IntVar(&c.window, "raw-window", 500, "raw streaming publisher: unconfirmed messages at most")
	fs.IntVar(&c.procs, "schedulers", 1, "scheduler processes (they share the work through SKIP LOCKED)")
	fs.DurationVar(&c.vacuum, "vacuum-every", 0,
		"experiment: VACUUM pages this often while the scheduler runs, as a well-tuned autovacuum would (0: never)")
	fs.IntVar(&c.batch, "batch", 500, "PORTALWATCH_SCHEDULER_BATCH (the raw batch publisher uses the same)")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "stop the run after this long, whatever happens")
	fs.BoolVar(&c.keepLogs, "keep", false, "keep the scheduler's log")
	if err := fs.Parse(args); err != nil {
		return ErrUsage
	}
	if c.pages < 1 || c.batch < 1 || c.window < 1 || c.procs < 1 || c.rawMax < 1 {
		return fmt.Errorf("-pages, -batch, -raw-window, -schedulers and -raw-max must be at least 1: %w", ErrUsage)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	r := &schedRun{cfg: c, log: stderr}
	defer r.close()
	for _, phase := range []func(context.Context) error{
		r.setup, r.planBefore, r.rawBefore, r.schedule, r.planAfter, r.rawAfter,
	} {
		if err := phase(ctx); err != nil {
			return err
		}
	}
	return r.res.report(stdout, c)
}

// schedRun is one run of the scheduler benchmark. Its phases run in order:
// setup fills the table, planBefore shows the due query's plan, rawBefore
// measures what the broker takes without the scheduler, schedule measures the
// scheduler, planAfter shows the plan over the rows it left behind, rawAfter
// measures the broker again with the job queue full.
type schedRun struct {
	cfg      schedConfig
	log      io.Writer
	h        *harness
	db       *pgxpool.Pool
	conn     *amqp.Connection
	rawQueue string
	body     []byte // a job as the scheduler publishes it, for equal-sized raw messages
	dir      string // the schedulers' logs with -keep
	procs    []*process
	res      schedResult
}

// schedResult is what the phases measured.
type schedResult struct {
	autovacuum          string // the server's setting
	plan, planAfter     string // EXPLAIN ANALYZE of the due query
	indexScan           bool   // plan uses the index and no sequential scan
	messageBytes        int
	rawStream, rawBatch [2]float64 // msg/s before and after the scheduler phase
	jobs                float64    // jobs published in the measured span
	seconds             float64    // the measured span
	jobsEarly           float64    // jobs published in its first earlySpan
	cpu                 cpuDelta   // over the measured span
}

// earlySpan is the start of the scheduler phase reported on its own: the
// table's dead index entries have not piled up yet.
const earlySpan = 30 * time.Second

func (r *schedRun) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// setup builds the programs, creates the sandbox, fills pages with
// cfg.pages due pages and connects to RabbitMQ.
func (r *schedRun) setup(ctx context.Context) error {
	var err error
	if r.h, err = newHarness(ctx, r.cfg.svc, r.cfg.repo, "", r.log); err != nil {
		return err
	}
	r.rawQueue = "pwbench_" + r.h.sb.ID + "_raw"
	if r.db, err = r.h.pool(ctx); err != nil {
		return err
	}
	start := time.Now()
	if _, err := r.db.Exec(ctx, `
		INSERT INTO pages (base_url, check_interval, next_check_at)
		SELECT 'http://127.0.1.' || (1 + g % 16) || ':8080/p/' || g || '/', interval '1 hour',
		       now() - interval '1 hour' * random()
		FROM generate_series(1, $1::int) AS g`, r.cfg.pages); err != nil {
		return fmt.Errorf("insert pages: %w", err)
	}
	if _, err := r.db.Exec(ctx, `VACUUM ANALYZE pages`); err != nil {
		return fmt.Errorf("vacuum pages: %w", err)
	}
	if err := r.db.QueryRow(ctx, `SHOW autovacuum`).Scan(&r.res.autovacuum); err != nil {
		return fmt.Errorf("read autovacuum: %w", err)
	}
	r.logf("inserted %d due pages in %.1fs", r.cfg.pages, time.Since(start).Seconds())
	if r.body, err = json.Marshal(watch.Job{BaseURL: "http://127.0.1.7:8080/p/512345/", ID: 512345, ScheduledAt: time.Now()}); err != nil {
		return err
	}
	r.res.messageBytes = len(r.body)
	if r.conn, err = amqp.Dial(r.cfg.svc.AMQPURL); err != nil {
		return fmt.Errorf("RabbitMQ: %w", err)
	}
	return nil
}

// planBefore shows the plan of the scheduler's own due query
// (store.ClaimDueQuery) with every page due.
func (r *schedRun) planBefore(ctx context.Context) error {
	var err error
	r.res.plan, err = explain(ctx, r.db, store.ClaimDueQuery, r.cfg.batch)
	r.res.indexScan = strings.Contains(r.res.plan, "Index Scan") && !strings.Contains(r.res.plan, "Seq Scan")
	return err
}

// rawBefore measures confirmed publishing without the scheduler.
func (r *schedRun) rawBefore(ctx context.Context) error {
	r.logf("raw publishing before: %d-byte persistent messages to a quorum queue", len(r.body))
	if err := r.raw(ctx, 0); err != nil {
		return err
	}
	r.logf("  streaming (window %d): %.0f msg/s; batches of %d: %.0f msg/s",
		r.cfg.window, r.res.rawStream[0], r.cfg.batch, r.res.rawBatch[0])
	return nil
}

// rawAfter measures confirmed publishing again, with the job queue full.
func (r *schedRun) rawAfter(ctx context.Context) error {
	r.logf("raw publishing after (job queue now holds %.0f messages)", r.res.jobs)
	if err := r.raw(ctx, 1); err != nil {
		return err
	}
	r.logf("  streaming: %.0f msg/s; batches: %.0f msg/s", r.res.rawStream[1], r.res.rawBatch[1])
	return nil
}

func (r *schedRun) raw(ctx context.Context, i int) error {
	var err error
	if r.res.rawStream[i], err = rawPublish(ctx, r.conn, r.rawQueue, r.body, r.cfg.window, false, r.cfg.rawMax, r.cfg.rawTime); err != nil {
		return err
	}
	r.res.rawBatch[i], err = rawPublish(ctx, r.conn, r.rawQueue, r.body, r.cfg.batch, true, r.cfg.rawMax, r.cfg.rawTime)
	return err
}

// schedule starts the schedulers and measures jobs published (and
// confirmed) per second from their first published job until every page is
// published or cfg.maxTime passes, with the CPU each process spent; then
// stops them.
func (r *schedRun) schedule(ctx context.Context) error {
	var err error
	if r.dir, err = os.MkdirTemp("", "pwbench-sched-"); err != nil {
		return err
	}
	for i := range r.cfg.procs {
		p, err := startProgram(r.h.program("scheduler"), fmt.Sprintf("scheduler-%d", i+1), "scheduler",
			r.h.sb.Env(), "PORTALWATCH_SCHEDULER_BATCH="+strconv.Itoa(r.cfg.batch))
		if err != nil {
			return err
		}
		r.procs = append(r.procs, p)
	}
	meter := cpuMeter{programs: func() []*process { return r.procs }}
	published := func() float64 {
		v, err := scrapeAll(ctx, r.procs, "portalwatch_scheduler_jobs_published_total")
		if err != nil {
			return -1
		}
		return v
	}
	// The clock starts at the first published job, so the program's start
	// and its first connection do not count.
	var t0 time.Time
	var n0 float64
	err = testsvc.Poll(ctx, r.cfg.timeout, 50*time.Millisecond, func() (bool, string, error) {
		if err := r.alive(); err != nil {
			return false, "", err
		}
		if n := published(); n > 0 {
			t0, n0 = time.Now(), n
		}
		return !t0.IsZero(), "nothing published", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the scheduler's first job: %w", err)
	}
	cpu0 := meter.sample()
	stopVacuum := r.vacuumEvery(ctx, r.cfg.vacuum)
	var n1, nEarly float64
	var t1 time.Time
	lastLog := time.Now()
	for {
		n1, t1 = published(), time.Now()
		if nEarly == 0 && t1.Sub(t0) >= earlySpan {
			nEarly = n1 - n0
		}
		if int(n1) >= r.cfg.pages || t1.Sub(t0) > r.cfg.maxTime {
			break
		}
		if time.Since(lastLog) > 10*time.Second {
			r.logf("  scheduler: %.0f of %d published, %.0f jobs/s", n1, r.cfg.pages, (n1-n0)/t1.Sub(t0).Seconds())
			lastLog = time.Now()
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			stopVacuum()
			return err
		}
	}
	stopVacuum()
	r.res.cpu = meter.sample().sub(cpu0)
	r.res.jobs, r.res.seconds, r.res.jobsEarly = n1-n0, t1.Sub(t0).Seconds(), nEarly
	r.stopSchedulers()
	r.logf("scheduler: %.0f jobs in %.1fs = %.0f jobs/s", r.res.jobs, r.res.seconds, r.res.rate())
	return nil
}

// vacuumEvery runs VACUUM pages every d (never for d ≤ 0) until the
// returned stop is called; stop waits for a VACUUM under way.
func (r *schedRun) vacuumEvery(ctx context.Context, d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if _, err := r.db.Exec(ctx, `VACUUM pages`); err != nil {
					r.logf("  VACUUM pages: %v", err)
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// alive returns an error if a scheduler has exited.
func (r *schedRun) alive() error {
	for _, p := range r.procs {
		if p.Exited() && !p.stopping {
			return fmt.Errorf("%s exited:\n%s", p.Name, p.logTail())
		}
	}
	return nil
}

func (r *schedRun) stopSchedulers() {
	for _, p := range r.procs {
		if !p.stopping {
			p.stop(30 * time.Second)
		}
	}
}

// planAfter shows the due query's plan once most pages are claimed: their
// old index entries are dead until VACUUM, and the scan has to step over
// them.
func (r *schedRun) planAfter(ctx context.Context) error {
	if _, err := r.db.Exec(ctx, `UPDATE pages SET next_check_at = now() - interval '1 second', lease_until = NULL
		WHERE id IN (SELECT id FROM pages WHERE next_check_at > now() LIMIT 1000)`); err != nil {
		return fmt.Errorf("make 1,000 pages due again: %w", err)
	}
	var err error
	r.res.planAfter, err = explain(ctx, r.db, store.ClaimDueQuery, r.cfg.batch)
	return err
}

func (r *schedRun) close() {
	r.stopSchedulers()
	finishDir(r.dir, r.cfg.keepLogs, r.procs, r.log, "scheduler logs")
	if r.conn != nil {
		if err := testsvc.DropQueues(r.cfg.svc.AMQPURL, r.rawQueue); err != nil {
			r.logf("cleanup: %v", err)
		}
		r.conn.Close()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.h != nil {
		r.h.Close()
	}
}

// rate is jobs published and confirmed per second.
func (s *schedResult) rate() float64 { return s.jobs / s.seconds }

// rawMean is the mean of the before and after figures.
func rawMean(v [2]float64) float64 { return (v[0] + v[1]) / 2 }

// cpuPerJob is CPU microseconds per published job of one process group.
func (s *schedResult) cpuPerJob(group string) float64 { return 1e6 * s.cpu.byGroup[group] / s.jobs }

// report prints the results for people, then the JSON summary line.
func (s *schedResult) report(w io.Writer, c schedConfig) error {
	raw, rawBatch, rate := rawMean(s.rawStream), rawMean(s.rawBatch), s.rate()
	fmt.Fprintf(w, "\n== scheduler: %d due pages, batch %d; server autovacuum=%s; harness VACUUM every %s ==\n",
		c.pages, c.batch, s.autovacuum, c.vacuum)
	fmt.Fprintf(w, "due-page query (store.ClaimDueQuery):\n%s\n\nplan, all %d pages due:\n%s\n",
		strings.TrimSpace(store.ClaimDueQuery), c.pages, indent(s.plan))
	fmt.Fprintf(w, "plan after the run (%.0f pages claimed, 1,000 made due again):\n%s\n\n", s.jobs, indent(s.planAfter))
	fmt.Fprintf(w, "jobs published and confirmed   %8.0f /s (%d scheduler process(es)); first %s: %.0f /s\n",
		rate, c.procs, earlySpan, s.jobsEarly/earlySpan.Seconds())
	fmt.Fprintf(w, "raw confirmed publish, streaming window %d: %8.0f /s (before %.0f, after %.0f)\n", c.window, raw, s.rawStream[0], s.rawStream[1])
	fmt.Fprintf(w, "raw confirmed publish, batches of %d:       %8.0f /s (before %.0f, after %.0f)\n", c.batch, rawBatch, s.rawBatch[0], s.rawBatch[1])
	fmt.Fprintf(w, "ratio scheduler / raw streaming %.2f (target ≥ 0.8); / raw batches %.2f\n", rate/raw, rate/rawBatch)
	fmt.Fprintf(w, "CPU µs per job: scheduler %.1f, rabbitmq %.1f, postgres %.1f; machine busy %.2f of %d cores\n",
		s.cpuPerJob("scheduler"), s.cpuPerJob("rabbitmq"), s.cpuPerJob("postgres"), s.cpu.machineBusy/s.cpu.machineAll*float64(numCPU()), numCPU())
	return printJSON(w, map[string]any{
		"pages": c.pages, "scheduler_jobs_per_s": round3(rate), "scheduler_jobs_per_s_first_30s": round3(s.jobsEarly / earlySpan.Seconds()), "jobs_published": s.jobs,
		"raw_publish_per_s": round3(raw), "raw_batch_publish_per_s": round3(rawBatch),
		"ratio": round3(rate / raw), "ratio_batch": round3(rate / rawBatch),
		"index_scan": s.indexScan, "message_bytes": s.messageBytes, "schedulers": c.procs, "autovacuum": s.autovacuum, "vacuum_every_s": c.vacuum.Seconds(),
		"cpu_us_per_job": map[string]float64{"scheduler": round3(s.cpuPerJob("scheduler")),
			"rabbitmq": round3(s.cpuPerJob("rabbitmq")), "postgres": round3(s.cpuPerJob("postgres"))},
	})
}

// rawPublish publishes body to queue, persistent, with publisher confirms,
// until max messages or d has passed, and returns messages confirmed per
// second. Streaming keeps at most window messages unconfirmed; batch
// publishes window messages and waits for all their confirms before the
// next, as a publisher that must act on each batch's outcome does. The
// queue is declared with the arguments portalwatch gives its work queues
// (internal/queue) and purged afterwards.
func rawPublish(ctx context.Context, conn *amqp.Connection, queue string, body []byte, window int, batch bool, max int, d time.Duration) (float64, error) {
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(queue+".dlq", true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		return 0, err
	}
	defer ch.QueueDelete(queue+".dlq", false, false, false)
	if _, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{
		"x-queue-type": "quorum", "x-delivery-limit": int64(20), "x-dead-letter-exchange": "",
		"x-dead-letter-routing-key": queue + ".dlq", "x-dead-letter-strategy": "at-least-once",
		"x-overflow": "reject-publish",
	}); err != nil {
		return 0, fmt.Errorf("declare %s: %w", queue, err)
	}
	defer ch.QueuePurge(queue, false)
	if err := ch.Confirm(false); err != nil {
		return 0, err
	}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "application/json", Body: body}
	var pending []*amqp.DeferredConfirmation
	wait := func(n int) error {
		for len(pending) > n {
			ok, err := pending[0].WaitContext(ctx)
			if err != nil {
				return err
			}
			if !ok {
				return errors.New("broker nacked a raw message")
			}
			pending = pending[1:]
		}
		return nil
	}
	start := time.Now()
	sent := 0
	for sent < max && time.Since(start) < d {
		msg.Timestamp = time.Now()
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, msg)
		if err != nil {
			return 0, err
		}
		pending = append(pending, dc)
		sent++
		switch {
		case batch && len(pending) == window:
			err = wait(0)
		case !batch:
			err = wait(window)
		}
		if err != nil {
			return 0, err
		}
	}
	if err := wait(0); err != nil {
		return 0, err
	}
	return float64(sent) / time.Since(start).Seconds(), nil
}

var placeholder = regexp.MustCompile(`\$([0-9]+)\b`)

// explain runs EXPLAIN (ANALYZE, BUFFERS) of the due-page query with limit
// as $1 (then the scheduler's default jitter 0.1 as $2 and lease of 10
// minutes in milliseconds as $3, for the claim that also reschedules), in a
// transaction that is rolled back (the query locks and updates rows).
func explain(ctx context.Context, db *pgxpool.Pool, query string, limit int) (string, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // nothing to keep
	params := []string{strconv.Itoa(limit), "0.1", "600000"}
	literal := placeholder.ReplaceAllStringFunc(query, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		if n >= 1 && n <= len(params) {
			return params[n-1]
		}
		return p
	})
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+literal)
	if err != nil {
		return "", fmt.Errorf("explain the due-page query: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return "", err
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

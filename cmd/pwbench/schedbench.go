package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	amqp "github.com/rabbitmq/amqp091-go"

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
	c.svc.flags(fs)
	fs.StringVar(&c.repo, "repo", ".", "portalwatch's module root")
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
		return errUsage
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}

	bin, err := buildPrograms(ctx, c.repo, stderr)
	if err != nil {
		return err
	}
	defer bin.Close()
	sb, err := newSandbox(ctx, c.svc, stderr)
	if err != nil {
		return err
	}
	defer sb.Close()
	rawQueue := "pwbench_" + sb.id + "_raw"
	defer deleteQueues(c.svc.amqp, stderr, rawQueue)
	if err := bin.migrate(ctx, sb); err != nil {
		return err
	}
	db, err := sb.pool(ctx)
	if err != nil {
		return err
	}
	defer db.Close()

	start := time.Now()
	if _, err := db.Exec(ctx, `
		INSERT INTO pages (base_url, check_interval, next_check_at)
		SELECT 'http://127.0.1.' || (1 + g % 16) || ':8080/p/' || g || '/', interval '1 hour',
		       now() - interval '1 hour' * random()
		FROM generate_series(1, $1::int) AS g`, c.pages); err != nil {
		return fmt.Errorf("insert pages: %w", err)
	}
	if _, err := db.Exec(ctx, `VACUUM ANALYZE pages`); err != nil {
		return err
	}
	var autovacuum string
	if err := db.QueryRow(ctx, `SHOW autovacuum`).Scan(&autovacuum); err != nil {
		return err
	}
	logf("inserted %d due pages in %.1fs", c.pages, time.Since(start).Seconds())

	// The due-page query, read from the store's source so the plan shown is
	// the plan of the code as it is.
	query, where, err := dueQuery(c.repo)
	if err != nil {
		return err
	}
	plan, err := explain(ctx, db, query, c.batch)
	if err != nil {
		return err
	}
	indexScan := strings.Contains(plan, "Index Scan") && !strings.Contains(plan, "Seq Scan")

	// A job as the scheduler publishes it, for equal-sized raw messages.
	body, _ := json.Marshal(watch.Job{BaseURL: "http://127.0.1.7:8080/p/512345/", ID: 512345, ScheduledAt: time.Now()})
	conn, err := amqp.Dial(c.svc.amqp)
	if err != nil {
		return fmt.Errorf("RabbitMQ: %w", err)
	}
	defer conn.Close()
	logf("raw publishing before: %d-byte persistent messages to a quorum queue", len(body))
	rawStream1, err := rawPublish(ctx, conn, rawQueue, body, c.window, false, c.rawMax, c.rawTime)
	if err != nil {
		return err
	}
	rawBatch1, err := rawPublish(ctx, conn, rawQueue, body, c.batch, true, c.rawMax, c.rawTime)
	if err != nil {
		return err
	}
	logf("  streaming (window %d): %.0f msg/s; batches of %d: %.0f msg/s", c.window, rawStream1, c.batch, rawBatch1)

	dir, err := os.MkdirTemp("", "pwbench-sched-")
	if err != nil {
		return err
	}
	if c.keepLogs {
		defer fmt.Fprintf(stderr, "scheduler log kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	var procs []*process
	defer func() {
		for _, p := range procs {
			p.stop(30 * time.Second)
		}
	}()
	for i := range c.procs {
		p, err := startProgram(bin.path("scheduler"), fmt.Sprintf("scheduler-%d", i+1), "scheduler", dir,
			append(sb.env(), "PORTALWATCH_SCHEDULER_BATCH="+strconv.Itoa(c.batch)))
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	meter := cpuMeter{programs: func() []*process { return procs }}
	published := func() float64 {
		v, err := scrapeAll(ctx, procs, "portalwatch_scheduler_jobs_published_total")
		if err != nil {
			return -1
		}
		return v
	}
	exited := func() *process {
		for _, p := range procs {
			if p.exited() {
				return p
			}
		}
		return nil
	}
	// The clock starts at the first published job, so the program's start
	// and its first connection do not count.
	var t0 time.Time
	var n0 float64
	for t0.IsZero() {
		if p := exited(); p != nil {
			return fmt.Errorf("%s exited:\n%s", p.name, p.logTail(3000))
		}
		if time.Since(start) > c.timeout {
			return errors.New("scheduler published nothing")
		}
		if n := published(); n > 0 {
			t0, n0 = time.Now(), n
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	cpu0 := meter.sample()
	vacuumDone := make(chan struct{})
	stopVacuum := make(chan struct{})
	go func() {
		defer close(vacuumDone)
		if c.vacuum <= 0 {
			return
		}
		t := time.NewTicker(c.vacuum)
		defer t.Stop()
		for {
			select {
			case <-stopVacuum:
				return
			case <-t.C:
				if _, err := db.Exec(ctx, `VACUUM pages`); err != nil {
					logf("  VACUUM pages: %v", err)
				}
			}
		}
	}()
	var n1, nEarly float64
	var t1 time.Time
	lastLog := time.Now()
	const early = 30 * time.Second
	for {
		n1, t1 = published(), time.Now()
		if nEarly == 0 && t1.Sub(t0) >= early {
			nEarly = n1 - n0
		}
		if int(n1) >= c.pages || t1.Sub(t0) > c.maxTime {
			break
		}
		if time.Since(lastLog) > 10*time.Second {
			logf("  scheduler: %.0f of %d published, %.0f jobs/s", n1, c.pages, (n1-n0)/t1.Sub(t0).Seconds())
			lastLog = time.Now()
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	close(stopVacuum)
	<-vacuumDone
	cpu := meter.sample().sub(cpu0)
	schedRate := (n1 - n0) / t1.Sub(t0).Seconds()
	for _, p := range procs {
		p.stop(30 * time.Second)
	}
	logf("scheduler: %.0f jobs in %.1fs = %.0f jobs/s", n1-n0, t1.Sub(t0).Seconds(), schedRate)
	// The same query once most pages are claimed: their old index entries
	// are dead until VACUUM, and the scan has to step over them.
	if _, err := db.Exec(ctx, `UPDATE pages SET next_check_at = now() - interval '1 second', lease_until = NULL
		WHERE id IN (SELECT id FROM pages WHERE next_check_at > now() LIMIT 1000)`); err != nil {
		return err
	}
	planAfter, err := explain(ctx, db, query, c.batch)
	if err != nil {
		return err
	}

	logf("raw publishing after (job queue now holds %.0f messages)", n1)
	rawStream2, err := rawPublish(ctx, conn, rawQueue, body, c.window, false, c.rawMax, c.rawTime)
	if err != nil {
		return err
	}
	rawBatch2, err := rawPublish(ctx, conn, rawQueue, body, c.batch, true, c.rawMax, c.rawTime)
	if err != nil {
		return err
	}
	logf("  streaming: %.0f msg/s; batches: %.0f msg/s", rawStream2, rawBatch2)

	raw := (rawStream1 + rawStream2) / 2
	rawBatch := (rawBatch1 + rawBatch2) / 2
	perJob := func(g string) float64 { return 1e6 * cpu.byGroup[g] / (n1 - n0) }
	fmt.Fprintf(stdout, "\n== scheduler: %d due pages, batch %d; server autovacuum=%s; harness VACUUM every %s ==\n",
		c.pages, c.batch, autovacuum, c.vacuum)
	fmt.Fprintf(stdout, "due-page query (from internal/store/schedule.go):\n%s\n\nplan, all %d pages due:\n%s\n", where, c.pages, indent(plan))
	fmt.Fprintf(stdout, "plan after the run (%.0f pages claimed, 1,000 made due again):\n%s\n\n", n1, indent(planAfter))
	fmt.Fprintf(stdout, "jobs published and confirmed   %8.0f /s (%d scheduler process(es)); first %s: %.0f /s\n",
		schedRate, c.procs, early, nEarly/early.Seconds())
	fmt.Fprintf(stdout, "raw confirmed publish, streaming window %d: %8.0f /s (before %.0f, after %.0f)\n", c.window, raw, rawStream1, rawStream2)
	fmt.Fprintf(stdout, "raw confirmed publish, batches of %d:       %8.0f /s (before %.0f, after %.0f)\n", c.batch, rawBatch, rawBatch1, rawBatch2)
	fmt.Fprintf(stdout, "ratio scheduler / raw streaming %.2f (target ≥ 0.8); / raw batches %.2f\n", schedRate/raw, schedRate/rawBatch)
	fmt.Fprintf(stdout, "CPU µs per job: scheduler %.1f, rabbitmq %.1f, postgres %.1f; machine busy %.2f of %d cores\n",
		perJob("scheduler"), perJob("rabbitmq"), perJob("postgres"), cpu.machineBusy/cpu.machineAll*float64(numCPU()), numCPU())
	return printJSON(stdout, map[string]any{
		"pages": c.pages, "scheduler_jobs_per_s": round3(schedRate), "scheduler_jobs_per_s_first_30s": round3(nEarly / early.Seconds()), "jobs_published": n1 - n0,
		"raw_publish_per_s": round3(raw), "raw_batch_publish_per_s": round3(rawBatch),
		"ratio": round3(schedRate / raw), "ratio_batch": round3(schedRate / rawBatch),
		"index_scan": indexScan, "message_bytes": len(body), "schedulers": c.procs, "autovacuum": autovacuum, "vacuum_every_s": c.vacuum.Seconds(),
		"cpu_us_per_job": map[string]float64{"scheduler": round3(perJob("scheduler")),
			"rabbitmq": round3(perJob("rabbitmq")), "postgres": round3(perJob("postgres"))},
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

// dueQuery returns the scheduler's due-page query, the SQL string literal of
// internal/store that claims rows FOR UPDATE SKIP LOCKED, and its WHERE
// clause for display.
func dueQuery(repo string) (query, where string, err error) {
	fset := token.NewFileSet()
	dir := filepath.Join(repo, "internal", "store")
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return "", "", err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING || query != "" {
				return query == ""
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && strings.Contains(s, "SKIP LOCKED") && strings.Contains(s, "next_check_at") {
				query = s
			}
			return query == ""
		})
	}
	if query == "" {
		return "", "", fmt.Errorf("no FOR UPDATE SKIP LOCKED query found in %s", dir)
	}
	return query, strings.TrimSpace(query), nil
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

//go:build chaos

// Package chaos is portalwatch's fault-injection suite. It runs the real
// programs against private PostgreSQL, Redis and RabbitMQ servers of its own
// (so it may kill and restart them without disturbing anything else), drives
// a farm of portal pages through scripted rounds, injects faults all along,
// and at the end compares the updates table with the farm's truth: nothing
// missing, nothing extra, nothing twice; TestChaos compares the removals
// table too.
//
// It needs the build tag: `go test -tags chaos ./chaos` (make chaos, and a
// short run inside make test). Settings: CHAOS_PAGES, CHAOS_ROUNDS,
// CHAOS_SEED.
package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

var binDir string

func TestMain(m *testing.M) { systest.Main(m, false, &binDir) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// world is the private servers and the system under test.
type world struct {
	t     *testing.T
	pg    *testsvc.PrivatePostgres
	redis *testsvc.PrivateRedis // nil with a Redis cluster or the shared Redis
	mq    *testsvc.PrivateRabbitMQ
	// rabbits and redises are the private clusters a world may run
	// instead of one server.
	rabbits *testsvc.PrivateRabbitCluster
	redises *testsvc.PrivateRedisCluster
	sys     *systest.System
	fleet   *fleet
	log     *faultLog
}

// servers says what a world runs besides its private PostgreSQL: by
// default a private Redis and a private RabbitMQ.
type servers struct {
	rabbitNodes  int  // a private RabbitMQ cluster of this many nodes
	redisMasters int  // a private Redis Cluster of this many masters
	sharedQueues bool // the machine's RabbitMQ and Redis, for tests that fault neither
}

// newWorld starts the world's servers at once, then the system under test
// on them, its programs logging at info and given extraEnv.
func newWorld(t *testing.T, s servers, extraEnv ...string) *world {
	t.Helper()
	w := &world{t: t, log: &faultLog{start: time.Now()}}
	var wg sync.WaitGroup
	wg.Go(func() { w.pg = testsvc.StartPostgres(t) })
	switch {
	case s.sharedQueues:
	case s.redisMasters > 0:
		wg.Go(func() { w.redises = testsvc.StartRedisCluster(t, s.redisMasters) })
	default:
		wg.Go(func() { w.redis = testsvc.StartRedis(t) })
	}
	switch {
	case s.sharedQueues:
	case s.rabbitNodes > 0:
		wg.Go(func() { w.rabbits = testsvc.StartRabbitCluster(t, s.rabbitNodes) })
	default:
		wg.Go(func() { w.mq = testsvc.StartRabbitMQ(t) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	svc := systest.Services{PostgresAdminURL: w.pg.AdminURL(), AMQPURL: testsvc.AMQPURL(), RedisURL: testsvc.RedisURL()}
	switch {
	case w.rabbits != nil:
		svc.AMQPURL = w.rabbits.URL()
	case w.mq != nil:
		svc.AMQPURL = w.mq.URL()
	}
	switch {
	case w.redises != nil:
		svc.RedisURL = w.redises.URL()
	case w.redis != nil:
		svc.RedisURL = w.redis.URL()
	}
	w.sys = systest.New(t, binDir, svc, append([]string{"PORTALWATCH_LOG_LEVEL=info"}, extraEnv...)...)
	return w
}

// faultLog records every fault with its time, for the final report.
type faultLog struct {
	mu     sync.Mutex
	start  time.Time
	events []string
	counts map[string]int
}

func (l *faultLog) add(kind, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[kind]++
	l.events = append(l.events, fmt.Sprintf("%7.2fs %-18s %s", time.Since(l.start).Seconds(), kind, fmt.Sprintf(format, args...)))
}

// fleet keeps a set of programs running the way supervisord does: a program
// that dies is started again after a short pause. Exits it did not cause are
// failures: a program must never exit because a dependency is down.
type fleet struct {
	w      *world
	mu     sync.Mutex
	slots  map[string]*systest.Process
	killed map[*systest.Process]bool
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	env    map[string][]string
}

func (w *world) startFleet(programs map[string]string, env map[string][]string) *fleet {
	f := &fleet{w: w, slots: map[string]*systest.Process{}, killed: map[*systest.Process]bool{}, stop: make(chan struct{}), env: env}
	for slot, program := range programs {
		f.slots[slot] = w.sys.Start(program, env[program]...)
		f.wg.Go(func() { f.supervise(slot, program) })
	}
	w.fleet = f
	w.t.Cleanup(f.shutdown) // before the system's cleanup stops the programs
	return f
}

func (f *fleet) supervise(slot, program string) {
	for {
		f.mu.Lock()
		p := f.slots[slot]
		f.mu.Unlock()
		select {
		case <-f.stop:
			return
		case <-p.Done():
		}
		f.mu.Lock()
		expected := f.killed[p]
		f.mu.Unlock()
		if !expected {
			f.w.t.Errorf("%s (pid %d) exited by itself with status %d:\n%s", slot, p.Pid(), p.ExitCode(), systest.Tail(p.Output(), 20))
		}
		select {
		case <-f.stop:
			return
		case <-time.After(time.Duration(200+rand.IntN(800)) * time.Millisecond):
		}
		np := f.w.sys.Start(program, f.env[program]...)
		f.mu.Lock()
		f.slots[slot] = np
		f.mu.Unlock()
	}
}

func (f *fleet) killRandom() string {
	f.mu.Lock()
	names := make([]string, 0, len(f.slots))
	for n := range f.slots {
		names = append(names, n)
	}
	slot := names[rand.IntN(len(names))]
	p := f.slots[slot]
	f.killed[p] = true
	f.mu.Unlock()
	select {
	case <-p.Done():
		return ""
	default:
	}
	p.Kill()
	return fmt.Sprintf("%s pid %d", slot, p.Pid())
}

func (f *fleet) shutdown() {
	f.once.Do(func() { close(f.stop) })
	f.wg.Wait()
}

// fault is one kind of fault the injector may choose.
type fault struct {
	kind   string
	weight int
	max    int // the most times it may happen in a run (slow faults are rationed)
	do     func(w *world) string
}

func faults(long bool) []fault {
	mqMax, pgMax := 1, 2
	if long {
		mqMax, pgMax = 4, 6
	}
	return []fault{
		{"kill -9 program", 12, 1 << 30, func(w *world) string { return w.fleet.killRandom() }},
		{"redis flushall", 2, 1 << 30, func(w *world) string {
			opts, _ := redis.ParseURL(w.redis.URL())
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			if err := rdb.FlushAll(context.Background()).Err(); err != nil {
				return "failed: " + err.Error()
			}
			return "all keys gone"
		}},
		{"redis restart", 1, 3, func(w *world) string { w.redis.Restart(); return "restarted without persistence" }},
		{"pg terminate conns", 2, 1 << 30, func(w *world) string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var n int
			err := w.sys.DB.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
			if err != nil {
				return "failed: " + err.Error()
			}
			return fmt.Sprintf("%d connections terminated", n)
		}},
		{"pg restart", 1, pgMax, func(w *world) string { w.pg.Restart(); return "fast shutdown and start" }},
		{"pg kill -9", 1, pgMax / 2, func(w *world) string { w.pg.Kill(); w.pg.Start(); return "crash and recovery" }},
		{"rabbitmq restart", 1, mqMax, func(w *world) string { w.mq.Restart(); return "stop and start" }},
		{"rabbitmq kill -9", 1, mqMax / 2, func(w *world) string { w.mq.Kill(); w.mq.Start(); return "crash and restart" }},
	}
}

// inject runs faults at random intervals until ctx ends. Every other fault
// is a SIGKILL of a random program; the others first go once through every
// kind in random order, so even a short run covers the whole matrix, and then
// are drawn by weight.
func (w *world) inject(ctx context.Context, long bool, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	all := faults(long)
	used := map[string]int{}
	pending := append([]fault(nil), all[1:]...)
	rng.Shuffle(len(pending), func(i, j int) { pending[i], pending[j] = pending[j], pending[i] })
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(400+rng.IntN(1100)) * time.Millisecond):
		}
		f := all[0]
		switch {
		case n%2 == 0:
		case len(pending) > 0:
			f, pending = pending[0], pending[1:]
		default:
			f = pickWeighted(rng, all, used)
		}
		if used[f.kind] >= f.max {
			continue
		}
		used[f.kind]++
		if what := f.do(w); what != "" {
			w.log.add(f.kind, "%s", what)
		}
	}
}

func pickWeighted(rng *rand.Rand, all []fault, used map[string]int) fault {
	total := 0
	for _, c := range all {
		if used[c.kind] < c.max {
			total += c.weight
		}
	}
	pick := rng.IntN(total)
	for _, c := range all {
		if used[c.kind] >= c.max {
			continue
		}
		if pick < c.weight {
			return c
		}
		pick -= c.weight
	}
	return all[0]
}

func (w *world) report(v systest.Verdict, farm *systest.Farm, removals ...systest.RemovalVerdict) {
	w.log.mu.Lock()
	defer w.log.mu.Unlock()
	w.t.Logf("faults injected (%d):", len(w.log.events))
	for _, e := range w.log.events {
		w.t.Log("  " + e)
	}
	for kind, n := range w.log.counts {
		w.t.Logf("  %-18s ×%d", kind, n)
	}
	w.t.Logf("rounds advanced without a recorded check: %d", farm.TimedOutRounds())
	w.t.Logf("verdict: %s", v)
	if len(v.MissingSample) > 0 {
		w.t.Logf("missing, for example: %v", v.MissingSample)
	}
	if len(v.ExtraSample) > 0 {
		w.t.Logf("extra, for example: %v", v.ExtraSample)
	}
	for _, rv := range removals {
		w.t.Logf("verdict: %s", rv)
		if len(rv.MissingSample) > 0 {
			w.t.Logf("removals missing, for example: %v", rv.MissingSample)
		}
		if len(rv.ExtraSample) > 0 {
			w.t.Logf("removals extra, for example: %v", rv.ExtraSample)
		}
	}
}

// removalChecks is the removal count TestChaos runs with: a link absent for
// this many successful checks is recorded as removed.
const removalChecks = 2

// quietRounds is how many rounds the chaos tests drive after the scripted
// ones: removalChecks, in which every transient link is gone for good, and
// one more, whose claims record the removals the last ones made due
// (store.ClaimDueQuery).
const quietRounds = removalChecks + 1

// TestChaos runs the farm under faults and demands the exact truth, of
// updates, of headline revisions and of removals: after the scripted rounds it drives quietRounds
// quiet rounds, in which every transient link is gone, so that each has been
// absent for at least removalChecks successful checks and recorded by the
// next claim of its page by the end, and the removals must be exactly the
// farm's transient links, each once.
func TestChaos(t *testing.T) {
	long := os.Getenv("CHAOS_LONG") == "true"
	pages, rounds := envInt("CHAOS_PAGES", 50), envInt("CHAOS_ROUNDS", 12)
	if long {
		pages, rounds = envInt("CHAOS_PAGES", 100), envInt("CHAOS_ROUNDS", 30)
	}
	seed := uint64(envInt("CHAOS_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("chaos: %d pages, %d rounds, seed %d (CHAOS_SEED=%d reproduces the fault schedule)", pages, rounds, seed, seed)

	w := newWorld(t, servers{}, "PORTALWATCH_CRAWLER_CONCURRENCY=8", "PORTALWATCH_PROCESSOR_CONCURRENCY=4",
		fmt.Sprintf("PORTALWATCH_REMOVAL_CHECKS=%d", removalChecks))
	farm := systest.NewFarm(t, pages)
	farm.QuietAfter(rounds)
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{
		"scheduler-1": "scheduler", "scheduler-2": "scheduler",
		"crawler-1": "crawler", "crawler-2": "crawler",
		"processor-1": "processor", "processor-2": "processor",
	}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	faultCtx, stopFaults := context.WithCancel(ctx)
	var injector sync.WaitGroup
	injector.Go(func() { w.inject(faultCtx, long, seed) })

	err = farm.Drive(ctx, w.sys, ids, rounds+quietRounds, 2*time.Second, 90*time.Second, t.Logf)
	stopFaults()
	injector.Wait()
	if err != nil {
		t.Fatalf("driving the farm: %v", err)
	}
	// Let stray redeliveries land: they must change nothing.
	time.Sleep(2 * time.Second)
	w.fleet.shutdown()
	v, err := farm.Check(ctx, w.sys)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := farm.CheckRemovals(ctx, w.sys, removalChecks)
	if err != nil {
		t.Fatal(err)
	}
	revisions, err := farm.CheckRevisions(ctx, w.sys, rounds+quietRounds)
	if err != nil {
		t.Fatal(err)
	}
	w.report(v, farm, rv)
	t.Logf("verdict: %s", revisions)
	if len(revisions.MissingSample)+len(revisions.ExtraSample) > 0 {
		t.Logf("revisions missing, for example: %v; extra: %v", revisions.MissingSample, revisions.ExtraSample)
	}
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 || v.Expected != pages*rounds*3 {
		t.Errorf("updates differ from the truth: %s", v)
	}
	// Every scripted round's transient link is gone for removalChecks
	// checked rounds; none may be left unsettled, or the truth is not exact.
	if rv.Missing != 0 || rv.Extra != 0 || rv.Twice != 0 || rv.Unsettled != 0 || rv.Expected != pages*rounds || rv.Recorded != rv.Expected {
		t.Errorf("removals differ from the truth: %s", rv)
	}
	// Each round rewrote two headlines of every page: each a revision, once.
	if revisions.Missing != 0 || revisions.Extra != 0 || revisions.Duplicates != 0 || revisions.Expected != pages*(rounds+quietRounds)*2 {
		t.Errorf("revisions differ from the truth: %s", revisions)
	}
	if t.Failed() {
		t.FailNow()
	}
	if n := farm.TimedOutRounds(); n != 0 {
		t.Errorf("%d rounds were never checked within the deadline", n)
	}
	// Nothing here is malformed or poisonous: the dead-letter queues stay
	// empty (a healthy message dead-lettered would be a lost check).
	for _, q := range []string{w.sys.JobQueue + ".dlq", w.sys.TaskQ + ".dlq"} {
		if n := testsvc.QueueDepthAt(t, w.mq.URL(), q); n != 0 {
			t.Errorf("%s holds %d messages, want 0", q, n)
		}
	}
}

// Command web serves portalwatch to people: the HTTP API (/api/v1), Atom,
// RSS and JSON feeds (/feeds), the web page, /healthz and /metrics, all on
// PORTALWATCH_WEB_ADDR (127.0.0.1:8080 by default). It needs PostgreSQL
// only (RabbitMQ is asked for dead-letter counts, and their absence is
// shown, not fatal), and never migrates the schema: its reads work with a
// read-only database role (see README.md). It is configured from the
// environment; SIGTERM stops it gracefully within
// PORTALWATCH_SHUTDOWN_TIMEOUT.
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notify"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/web"
	"github.com/portalwatch/portalwatch/migrations"
)

func main() { proc.Main("web", run) }

// run serves on cfg.Web.Addr until ctx ends.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.Web.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (PORTALWATCH_WEB_ADDR): %w", cfg.Web.Addr, err)
	}
	return serve(ctx, cfg, ln, log)
}

// serve is run on a listener the caller opened, so a test can start the
// program in-process on a free port.
func serve(ctx context.Context, cfg config.Config, ln net.Listener, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		ln.Close()
		return err
	}
	defer st.Close()
	// The heavy reads (updates, removals, feeds) may go to a replica.
	reads := st
	if cfg.DatabaseReadURL != "" {
		if reads, err = store.Open(ctx, cfg.DatabaseReadURL); err != nil {
			ln.Close()
			return fmt.Errorf("read replica (DATABASE_READ_URL): %w", err)
		}
		defer reads.Close()
		health.Set("postgres_read", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return reads.Ping(ctx)
		})
	}
	dead, err := queue.NewDead(proc.QueueConfig(cfg, "web"))
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}

	// Test messages go out as the notifier's would: same senders, same
	// dial guard.
	senders, closeSenders, err := proc.NotifySenders(cfg)
	if err != nil {
		ln.Close()
		return fmt.Errorf("notification senders: %w", err)
	}
	defer closeSenders()

	srv, err := web.New(web.Config{
		PublicRead: cfg.Web.PublicRead,
		Policy:     registration.Policy{GuardURL: fetch.Guard(cfg.AllowPrivate, nil)},
		Health:     health,
		Metrics:    promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		Registerer: reg,
	}, web.Deps{
		Pages: st, Writer: st, Updates: reads, Tokens: st, Removals: reads,
		Subscriptions: st, Tester: testSender(senders),
		Dead: newDeadLetters(dead, []string{cfg.JobQueue, cfg.TaskQueue}),
	}, log)
	if err != nil {
		ln.Close()
		return err
	}
	schema := schemaHealth(st, health)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { watchSchema(gctx, st, schema, log); return nil })
	g.Go(func() error { return web.ServeListener(gctx, ln, srv.Handler(), cfg.ShutdownTimeout, log) })
	return g.Wait()
}

// schemaHealth puts the database on /healthz: not ready until watchSchema
// has seen the schema this program was built for, then a ping.
func schemaHealth(st *store.Store, health *ops.Health) *atomic.Pointer[error] {
	state := new(atomic.Pointer[error])
	waiting := errors.New("connecting")
	state.Store(&waiting)
	health.Set("postgres", func() error {
		if err := *state.Load(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return st.Ping(ctx)
	})
	return state
}

// watchSchema waits until the database holds the schema this program was
// built for, keeping state (shown on /healthz) on what it waits for; it
// returns once it does, or when ctx ends. The web program does not migrate
// (its role may be read-only); the pipeline programs and `watchctl migrate`
// do. Requests made meanwhile fail with 500 and a logged reason.
func watchSchema(ctx context.Context, st *store.Store, state *atomic.Pointer[error], log *slog.Logger) {
	want := newestMigration()
	policy := backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second}
	for attempt := 0; ; attempt++ {
		v, err := st.SchemaVersion(ctx)
		if err == nil && v >= want {
			var ok error
			state.Store(&ok)
			return
		}
		if err == nil {
			err = fmt.Errorf("the database is at schema version %d, this program needs %d: run `watchctl migrate` (or start any pipeline program)", v, want)
		}
		state.Store(&err)
		log.Warn("database not ready; retrying", "attempt", attempt+1, "err", err)
		if policy.Sleep(ctx, attempt) != nil {
			return
		}
	}
}

// newestMigration is the version of the newest embedded migration.
func newestMigration() int64 {
	var newest int64
	files, _ := fs.Glob(migrations.FS, "*.sql")
	for _, f := range files {
		prefix, _, _ := strings.Cut(f, "_")
		if v, err := strconv.ParseInt(prefix, 10, 64); err == nil && v > newest {
			newest = v
		}
	}
	return newest
}

// testSender sends test messages through the notifier's senders.
type testSender map[watch.Channel]notify.Sender

func (t testSender) SendTest(ctx context.Context, sub watch.Subscription) notify.Result {
	return notify.SendTest(ctx, t, sub)
}

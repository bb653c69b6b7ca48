// Command scheduler publishes a job to the job queue for every page that is
// due, moving each page's next check forward by its interval plus jitter.
// Several schedulers may run at once. It is configured from the environment
// (`scheduler --help` lists the variables; README.md explains them);
// /healthz and /metrics are served on PORTALWATCH_HTTP_ADDR, 127.0.0.1:9101
// by default.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "scheduler", err))
}

// settings are every variable the scheduler reads, each in the config of
// the component it sets.
type settings struct {
	Ops       ops.Config
	Listen    ops.Listen
	Database  store.Config
	Broker    queue.Config
	Queues    queue.Names
	Scheduler scheduler.Config
	// Redis holds the fleet's per-origin budget, where the scheduler books
	// the jobs' fetch slots.
	Redis redisconn.Config
	// RedisPrefix starts the budget's keys; the crawlers' must be the same.
	RedisPrefix string `env:"PORTALWATCH_REDIS_PREFIX"`
}

func defaults() settings {
	return settings{
		Ops:         ops.Config{}.WithDefaults(),
		Listen:      ops.Listen{Addr: "127.0.0.1:9101"},
		Database:    store.Config{}.WithDefaults(),
		Broker:      queue.Config{}.WithDefaults(),
		Queues:      queue.Names{}.WithDefaults(),
		Scheduler:   scheduler.Config{Jitter: scheduler.DefaultJitter, HostSpacing: scheduler.DefaultHostSpacing}.WithDefaults(),
		Redis:       redisconn.Config{}.WithDefaults(),
		RedisPrefix: redisconn.DefaultPrefix,
	}
}

// run reads the settings from getenv and runs the scheduler until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "scheduler", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "scheduler", os.Getpid())
	return ops.Stopped(log, serve(ctx, cfg, log))
}

// serve wires the program's adapters and service and runs them until ctx
// ends.
func serve(ctx context.Context, cfg settings, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	st, err := store.Open(ctx, cfg.Database.URL)
	if err != nil {
		return err
	}
	defer st.Close()
	pub, err := queue.NewPublisher(cfg.Broker.Named("scheduler"), log, cfg.Queues.Jobs, cfg.Queues.Renders)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	health.Set("rabbitmq", pub.Health)
	// Without Redis the gate books from the scheduler's own rules, which
	// keep the spacing as long as one scheduler runs.
	gate, err := hostgate.Open(cfg.Redis.URL, hostgate.Config{Prefix: cfg.RedisPrefix}, log)
	if err != nil {
		return fmt.Errorf("host gate: %w", err)
	}
	defer gate.Close()
	sched := cfg.Scheduler
	sched.Queue, sched.RenderQueue = cfg.Queues.Jobs, cfg.Queues.Renders
	svc, err := scheduler.New(sched, st, gate, pub, log, reg)
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pub.Connect(ctx); return nil }) //nolint:errcheck // only ends early when stopping
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error {
		if err := st.WaitReady(ctx, store.Migrated, log, health.Track("postgres", st.HealthCheck)); err != nil {
			return nil // stopped while waiting
		}
		log.Info("scheduling", "queue", cfg.Queues.Jobs, "batch", sched.BatchSize)
		return svc.Run(ctx)
	})
	return g.Wait()
}

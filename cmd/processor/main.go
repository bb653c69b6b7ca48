// Command processor consumes the task queue and records every link that is
// new on its page in the updates table. Several processors may run at once.
// It is configured from the environment (`processor --help` lists the
// variables; README.md explains them); /healthz and /metrics are served on
// PORTALWATCH_HTTP_ADDR, 127.0.0.1:9103 by default.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "processor", err))
}

// settings are every variable the processor reads, each in the config of
// the component it sets.
type settings struct {
	Ops    ops.Config
	Listen ops.Listen
	// Concurrency is how many tasks one processor handles at once, 1 to
	// 1000.
	Concurrency int `env:"PORTALWATCH_PROCESSOR_CONCURRENCY"`
	// Prefetch is the task queue's prefetch, 1 to 2000; 0 means
	// prefetchPerWorker × Concurrency.
	Prefetch  int `env:"PORTALWATCH_PROCESSOR_PREFETCH"`
	Database  store.Config
	Broker    queue.Config
	Queues    queue.Names
	Redis     redisconn.Config
	Seen      seen.Config
	Processor processor.Config
	Retention processor.RetentionConfig
	// Archive is where the crawlers keep the pages as fetched: the
	// processor indexes their snapshots and sweeps the archive.
	Archive archive.Config
}

// prefetchPerWorker keeps each worker's next tasks at hand while it
// records one.
const prefetchPerWorker = 4

func defaults() settings {
	return settings{
		Ops:         ops.Config{}.WithDefaults(),
		Listen:      ops.Listen{Addr: "127.0.0.1:9103"},
		Concurrency: 8,
		Database:    store.Config{}.WithDefaults(),
		Broker:      queue.Config{}.WithDefaults(),
		Queues:      queue.Names{}.WithDefaults(),
		Redis:       redisconn.Config{}.WithDefaults(),
		Seen:        seen.Config{Prefix: redisconn.DefaultPrefix}.WithDefaults(),
		Processor: processor.Config{
			Caps:          processor.DefaultCaps,
			Burst:         processor.DefaultBurst,
			RemovalChecks: processor.DefaultRemovalChecks,
			Revisions:     watch.DefaultRevisionCaps,
			Articles:      true,
		}.WithDefaults(),
		Retention: processor.RetentionConfig{Links: processor.DefaultLinksRetention}.WithDefaults(),
		Archive:   archive.Defaults(),
	}
}

// Validate checks the processor's own settings.
func (s settings) Validate() error {
	return errors.Join(
		config.Between("Concurrency", s.Concurrency, 1, 1000),
		config.Between("Prefetch", s.Prefetch, 0, 2000),
	)
}

// run reads the settings from getenv and runs the processor until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "processor", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "processor", os.Getpid())
	return ops.Stopped(log, serve(ctx, cfg, log))
}

// serve wires the program's adapters and service and runs them until ctx
// ends.
func serve(ctx context.Context, cfg settings, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	st, err := store.Open(ctx, cfg.Database.URL, store.GenericPlans())
	if err != nil {
		return err
	}
	defer st.Close()
	broker := cfg.Broker.Named("processor")
	deadLetters, err := queue.NewPublisher(broker, log, cfg.Queues.Tasks)
	if err != nil {
		return fmt.Errorf("dead-letter publisher: %w", err)
	}
	defer deadLetters.Close()
	pruner, err := processor.NewPruner(cfg.Retention, st, log)
	if err != nil {
		return err
	}
	procCfg := cfg.Processor
	procCfg.LinkRefresh = processor.LinkRefreshFor(cfg.Retention.Links)
	procCfg.ArchiveGrace = cfg.Archive.Grace
	prefetch := cfg.Prefetch
	if prefetch == 0 {
		prefetch = min(prefetchPerWorker*cfg.Concurrency, 2000)
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error { return pruner.Run(ctx) })
	if cfg.Archive.Enabled {
		// The sweep needs the crawlers' files: on several hosts, the
		// archive directory is a shared volume (README).
		files, err := archive.NewFS(cfg.Archive.Directory())
		if err != nil {
			return err
		}
		g.Go(func() error { return archive.RunSweeps(ctx, files, st, cfg.Archive, log) })
	}
	g.Go(func() error {
		if err := st.WaitReady(ctx, store.Migrated, log, health.Track("postgres", st.HealthCheck)); err != nil {
			return nil // stopped while waiting
		}
		// The seen-set is keyed by the database's epoch, so a cache filled
		// for another incarnation of the database is never read.
		epoch, err := backoff.Retry(ctx, backoff.Default, log, "read the database epoch", func() (string, error) { return st.Epoch(ctx) })
		if err != nil {
			return nil // stopped while waiting
		}
		seenCfg := cfg.Seen
		seenCfg.Epoch = epoch
		set, err := seen.Open(cfg.Redis.URL, seenCfg)
		if err != nil {
			return err
		}
		defer set.Close()
		// Redis is a cache: the processor works without it, only slower.
		health.Set("redis", set.HealthCheck)
		svc, err := processor.New(procCfg, st, set, log, reg)
		if err != nil {
			return err
		}
		consumer, err := queue.NewConsumer(queue.ConsumerConfig{
			Config:       broker,
			Queue:        cfg.Queues.Tasks,
			Prefetch:     prefetch,
			Workers:      cfg.Concurrency,
			DrainTimeout: cfg.Ops.ShutdownTimeout,
		}, log, svc.Handle, deadLetters)
		if err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		health.Set("rabbitmq", consumer.Health)
		return svc.Run(ctx, consumer.Run)
	})
	return g.Wait()
}

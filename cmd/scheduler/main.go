// Command scheduler publishes a job to the job queue for every page that is
// due, moving each page's next check forward by its interval plus jitter.
// Several schedulers may run at once. It is configured from the environment
// (see README.md); /healthz and /metrics are served on PORTALWATCH_HTTP_ADDR,
// 127.0.0.1:9101 by default.
package main

import (
	"context"
	"fmt"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/store"
)

func main() { proc.Main("scheduler", run) }

// run wires the program's adapters and service and runs them until ctx ends.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	pub, err := queue.NewPublisher(proc.QueueConfig(cfg, "scheduler"), log, cfg.JobQueue)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	health.Set("rabbitmq", pub.Health)
	svc, err := scheduler.New(scheduler.Config{
		Queue:        cfg.JobQueue,
		PollInterval: cfg.Scheduler.PollInterval,
		BatchSize:    cfg.Scheduler.BatchSize,
		Lease:        cfg.Scheduler.Lease,
		Jitter:       cfg.Scheduler.Jitter,
		Workers:      cfg.Scheduler.Workers,
	}, st, pub, log, reg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pub.Connect(ctx); return nil }) //nolint:errcheck // only ends early when stopping
	g.Go(func() error { return ops.Serve(ctx, cfg.HTTPAddrOr("127.0.0.1:9101"), health, reg, log) })
	g.Go(func() error {
		if err := proc.PrepareStore(ctx, st, health, log); err != nil {
			return nil // stopped while waiting
		}
		log.Info("scheduling", "queue", cfg.JobQueue, "batch", cfg.Scheduler.BatchSize)
		return svc.Run(ctx)
	})
	return g.Wait()
}

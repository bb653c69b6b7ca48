// Command processor consumes the task queue and records every link that is
// new on its page in the updates table. Several processors may run at once.
// It is configured from the environment (see README.md); /healthz and
// /metrics are served on PORTALWATCH_HTTP_ADDR, 127.0.0.1:9103 by default.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func main() { proc.Main("processor", run) }

// run wires the program's adapters and service and runs them until ctx ends.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	st, err := store.Open(ctx, cfg.DatabaseURL, store.GenericPlans())
	if err != nil {
		return err
	}
	defer st.Close()
	qcfg := proc.QueueConfig(cfg, "processor")
	deadLetters, err := queue.NewPublisher(qcfg, log, cfg.TaskQueue)
	if err != nil {
		return fmt.Errorf("dead-letter publisher: %w", err)
	}
	defer deadLetters.Close()

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(ctx, cfg.HTTPAddrOr("127.0.0.1:9103"), health, reg, log) })
	g.Go(func() error {
		pruner, err := processor.NewPruner(processor.RetentionConfig{
			Updates:  cfg.Processor.UpdatesRetention,
			Links:    cfg.Processor.LinksRetention,
			Interval: cfg.Processor.PruneInterval,
			Batch:    cfg.Processor.PruneBatch,
		}, st, log)
		if err != nil {
			return fmt.Errorf("pruner: %w", err)
		}
		return pruner.Run(ctx)
	})
	g.Go(func() error {
		if err := proc.PrepareStore(ctx, st, health, log); err != nil {
			return nil // stopped while waiting
		}
		epoch, err := proc.Retry(ctx, log, "read the database epoch", func() (string, error) { return st.Epoch(ctx) })
		if err != nil {
			return nil // stopped while waiting
		}
		set, err := seen.Open(cfg.RedisURL, seen.Config{Prefix: cfg.RedisPrefix, Epoch: epoch, TTL: cfg.Processor.SeenTTL})
		if err != nil {
			return err
		}
		defer set.Close()
		// Redis is a cache: the processor works without it, only slower.
		health.Set("redis", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return set.Ping(ctx)
		})
		svc, err := processor.New(processor.Config{
			CodeLength: cfg.CodeLength,
			Backoff:    backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second},
			Caps: watch.Caps{
				PerCheck: cfg.Processor.MaxNewLinksPerCheck,
				PerDay:   cfg.Processor.MaxNewLinksPerDay,
			},
			LinkRefresh:   processor.LinkRefreshFor(cfg.Processor.LinksRetention),
			Burst:         watch.Burst{Share: cfg.Processor.BurstShare, Min: cfg.Processor.BurstMin},
			RemovalChecks: cfg.Processor.RemovalChecks,
		}, st, set, log, reg)
		if err != nil {
			return fmt.Errorf("processor: %w", err)
		}
		consumer, err := queue.NewConsumer(queue.ConsumerConfig{
			Config:       qcfg,
			Queue:        cfg.TaskQueue,
			Prefetch:     cfg.Processor.Prefetch,
			Workers:      cfg.Processor.Concurrency,
			DrainTimeout: cfg.ShutdownTimeout,
		}, log, svc.Handle, deadLetters)
		if err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		health.Set("rabbitmq", consumer.Health)
		// The sweep stops with the consumer, also when the consumer fails
		// on its own (a bad broker URL), not only at a signal. Due removals
		// wait in their pages' rows for the claims of the pages' next
		// checks, so the stop leaves none behind.
		sweepCtx, stopSweep := context.WithCancel(ctx)
		var sweep sync.WaitGroup
		sweep.Go(func() { _ = svc.RunRemovalSweep(sweepCtx) })
		err = consumer.Run(ctx)
		stopSweep()
		sweep.Wait()
		return err
	})
	return g.Wait()
}

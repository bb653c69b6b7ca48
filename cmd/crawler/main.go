// Command crawler consumes the job queue: it fetches each page, extracts its
// links and publishes them as a task, acking the job only after the broker
// confirmed the task. Run as many as the web's latency calls for. It is
// configured from the environment (see README.md); /healthz and /metrics are
// served on PORTALWATCH_HTTP_ADDR, 127.0.0.1:9102 by default.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/queue"
)

func main() { proc.Main("crawler", run) }

// run wires the program's adapters and service and runs them until ctx ends.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	tuneGC(log)
	health, reg := ops.NewHealth(), ops.NewRegistry()

	qcfg := proc.QueueConfig(cfg, "crawler")
	// One publisher carries tasks and dead letters; the consumer has its own
	// connection, so a publisher blocked by a broker alarm never stalls acks.
	pub, err := queue.NewPublisher(qcfg, log, cfg.TaskQueue, cfg.JobQueue)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	// Spacing and in-flight caps per origin are kept in Redis so that they
	// hold for all crawlers together; without Redis they hold per crawler.
	gate, err := hostgate.Open(cfg.RedisURL, hostgate.Config{
		Prefix:      cfg.RedisPrefix,
		MaxInFlight: cfg.Crawler.HostMaxInFlight,
	}, log)
	if err != nil {
		return fmt.Errorf("host gate: %w", err)
	}
	defer gate.Close()
	fetcher, err := fetch.New(fetch.Config{
		UserAgent:      cfg.Crawler.UserAgent,
		Timeout:        cfg.Crawler.FetchTimeout,
		MaxBodyBytes:   cfg.Crawler.MaxBodyBytes,
		MaxRedirects:   cfg.Crawler.MaxRedirects,
		AllowPrivate:   cfg.AllowPrivate,
		IgnoreRobots:   cfg.Crawler.IgnoreRobots,
		MinHostSpacing: cfg.Crawler.HostSpacing,
		MaxPoliteWait:  cfg.Crawler.MaxPoliteWait,
		Pacer:          gate,
	})
	if err != nil {
		return fmt.Errorf("fetcher: %w", err)
	}
	svc, err := crawler.New(crawler.Config{
		TaskQueue:        cfg.TaskQueue,
		Limits:           domwalk.Limits{MaxLinks: cfg.Crawler.MaxLinks, MaxTreeBytes: cfg.Crawler.MaxTreeBytes},
		ParseConcurrency: cfg.Crawler.ParseConcurrency,
		CheckTimeout:     cfg.Crawler.CheckTimeout,
		Gate:             gate,
		ParseMemory:      cfg.Crawler.ParseMemory,
		MaxTaskBytes:     cfg.Crawler.MaxTaskBytes,
	}, fetcher, pub, log, reg)
	if err != nil {
		return fmt.Errorf("crawler: %w", err)
	}
	consumer, err := queue.NewConsumer(queue.ConsumerConfig{
		Config:       qcfg,
		Queue:        cfg.JobQueue,
		Prefetch:     cfg.Crawler.Concurrency,
		Workers:      cfg.Crawler.Concurrency,
		DrainTimeout: cfg.ShutdownTimeout,
	}, log, svc.Handle, pub)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	health.Set("rabbitmq", consumer.Health)
	health.Set("rabbitmq_publisher", pub.Health)

	if cfg.AllowPrivate {
		log.Warn("PORTALWATCH_ALLOW_PRIVATE=true: the crawler may connect to loopback and private addresses")
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pub.Connect(ctx); return nil }) //nolint:errcheck // only ends early when stopping
	g.Go(func() error { return ops.Serve(ctx, cfg.HTTPAddrOr("127.0.0.1:9102"), health, reg, log) })
	g.Go(func() error {
		log.Info("crawling", "queue", cfg.JobQueue, "concurrency", cfg.Crawler.Concurrency)
		return consumer.Run(ctx)
	})
	return g.Wait()
}

// tuneGC trades memory for CPU where the environment does not say otherwise:
// parsing allocates a DOM per page that dies right after, so a collection
// every 100% of heap growth (Go's default) spends a sixth of the crawler's
// CPU on garbage; 400% with a soft limit of 160 MiB costs a fraction of that
// and keeps the heap bounded (pwbench: crawler CPU per page -27%).
func tuneGC(log *slog.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
		log.Debug("GOGC unset: collecting at 400% heap growth")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(160 << 20)
		log.Debug("GOMEMLIMIT unset: soft memory limit 160 MiB")
	}
}

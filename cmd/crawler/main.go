// Command crawler consumes the job queue: it fetches each page, extracts its
// links and publishes them as a task, acking the job only after the broker
// confirmed the task. Run as many as the web's latency calls for. It needs
// RabbitMQ and Redis, never PostgreSQL. It is configured from the
// environment (`crawler --help` lists the variables; README.md explains
// them); /healthz and /metrics are served on PORTALWATCH_HTTP_ADDR,
// 127.0.0.1:9102 by default.
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

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/secrets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "crawler", err))
}

// settings are every variable the crawler reads, each in the config of the
// component it sets.
type settings struct {
	Ops    ops.Config
	Listen ops.Listen
	// Concurrency is how many pages one crawler fetches at once, 1 to
	// 1000. The job queue's prefetch is four times that: jobs waiting for
	// their booked slot, or for their origin to have room, wait without a
	// worker.
	Concurrency int `env:"PORTALWATCH_CRAWLER_CONCURRENCY"`
	Broker      queue.Config
	Queues      queue.Names
	Redis       redisconn.Config
	Gate        hostgate.Config
	Fetch       fetch.Config
	Crawler     crawler.Config
	// Secrets opens the sealed secret headers of pages (Cookie,
	// Authorization) just before their fetch.
	Secrets secrets.Config
	// Archive keeps the page as fetched for the checks that find
	// something (PORTALWATCH_ARCHIVE=false: off).
	Archive archive.Config
}

func defaults() settings {
	return settings{
		Ops:         ops.Config{}.WithDefaults(),
		Listen:      ops.Listen{Addr: "127.0.0.1:9102"},
		Concurrency: 16,
		Broker:      queue.Config{}.WithDefaults(),
		Queues:      queue.Names{}.WithDefaults(),
		Redis:       redisconn.Config{}.WithDefaults(),
		Gate:        hostgate.Config{Prefix: redisconn.DefaultPrefix, MaxInFlight: hostgate.DefaultMaxInFlight}.WithDefaults(),
		Fetch: fetch.Config{
			MaxRedirects:   fetch.DefaultMaxRedirects,
			MinHostSpacing: fetch.DefaultMinHostSpacing,
		}.WithDefaults(),
		Crawler: crawler.Config{}.WithDefaults(),
		Archive: archive.Defaults(),
	}
}

// Validate checks the crawler's own settings.
func (s settings) Validate() error {
	return config.Between("Concurrency", s.Concurrency, 1, 1000)
}

// run reads the settings from getenv and runs the crawler until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "crawler", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "crawler", os.Getpid())
	// Trade memory for CPU where the environment does not say otherwise:
	// parsing allocates a DOM per page that dies right after, so a collection
	// every 100% of heap growth (Go's default) spends a sixth of the crawler's
	// CPU on garbage; 400% with a soft limit of 160 MiB costs a fraction of that
	// and keeps the heap bounded (pwbench: crawler CPU per page -27%).
	ops.TuneGC(getenv, log, 400, 160<<20)
	return ops.Stopped(log, serve(ctx, cfg, log))
}

// serve wires the program's adapters and service and runs them until ctx
// ends.
func serve(ctx context.Context, cfg settings, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	broker := cfg.Broker.Named("crawler")
	// One publisher carries tasks and dead letters; the consumer has its own
	// connection, so a publisher blocked by a broker alarm never stalls acks.
	pub, err := queue.NewPublisher(broker, log, cfg.Queues.Tasks, cfg.Queues.Jobs)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	// Spacing and in-flight caps per origin are kept in Redis so that they
	// hold for all crawlers together; without Redis they hold per crawler.
	gate, err := hostgate.Open(cfg.Redis.URL, cfg.Gate, log)
	if err != nil {
		return fmt.Errorf("host gate: %w", err)
	}
	defer gate.Close()
	fetchCfg := cfg.Fetch
	fetchCfg.Pacer = gate
	fetcher, err := fetch.New(fetchCfg)
	if err != nil {
		return err
	}
	crawlCfg := cfg.Crawler
	crawlCfg.TaskQueue, crawlCfg.Gate, crawlCfg.Budget = cfg.Queues.Tasks, gate, gate
	crawlCfg.HostSpacing, crawlCfg.MaxSlotWait = cfg.Fetch.MinHostSpacing, cfg.Fetch.MaxPoliteWait
	crawlCfg.Discoverer = discover.Discoverer{Fetcher: fetcher, Limits: discover.DefaultLimits}
	if crawlCfg.Secrets, err = cfg.Secrets.Sealer(); err != nil {
		return err
	}
	if cfg.Archive.Enabled {
		writer, closeArchive, err := archive.Open(cfg.Archive, "portalwatch", "portalwatch crawler")
		if err != nil {
			return err
		}
		// Sealed after the consumer stopped (deferred calls run last
		// first), so no write of a check in flight is cut off.
		defer sealArchive(ctx, log, closeArchive)
		crawlCfg.Archive = writer
		log.Info("archiving checks that find something", "dir", cfg.Archive.Directory())
	}
	svc, err := crawler.New(crawlCfg, fetcher, pub, log, reg)
	if err != nil {
		return err
	}
	consumer, err := queue.NewConsumer(queue.ConsumerConfig{
		Config:       broker,
		Queue:        cfg.Queues.Jobs,
		Prefetch:     cfg.Concurrency * 4,
		Workers:      cfg.Concurrency,
		DrainTimeout: cfg.Ops.ShutdownTimeout,
	}, log, svc.Handle, pub)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	health.Set("rabbitmq", consumer.Health)
	health.Set("rabbitmq_publisher", pub.Health)

	if names := cfg.Fetch.Proxies.Names(); len(names) > 0 {
		// Names only: a proxy URL may carry credentials.
		log.Info("pages may be fetched through proxies", "proxies", names)
	}
	if cfg.Fetch.AllowPrivate {
		log.Warn("PORTALWATCH_ALLOW_PRIVATE=true: the crawler may connect to loopback and private addresses")
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pub.Connect(ctx); return nil }) //nolint:errcheck // only ends early when stopping
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error {
		log.Info("crawling", "queue", cfg.Queues.Jobs, "concurrency", cfg.Concurrency)
		return consumer.Run(ctx)
	})
	return g.Wait()
}

// sealArchive seals the archive's current file when the program stops;
// a file left open is sealed by a sweep after its grace.
func sealArchive(ctx context.Context, log *slog.Logger, closeArchive func(context.Context) error) {
	if err := closeArchive(context.WithoutCancel(ctx)); err != nil {
		log.Warn("archive file not sealed; the sweep seals it after its grace", "err", err)
	}
}

// Command renderer consumes the render queue: it checks the pages registered
// with --render in headless Chromium and hands the DOM their scripts built
// to the crawler's link walk, so a rendered check is a crawler check in
// every other way: same task, same options, same politeness budget, same
// discipline (task published with the broker's confirm, then the job
// acked). It needs RabbitMQ, Redis and Chromium (Debian's chromium), never
// PostgreSQL. It is configured from the environment (`renderer --help`
// lists the variables; README.md explains them); /healthz and /metrics are
// served on PORTALWATCH_HTTP_ADDR, 127.0.0.1:9106 by default.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/renderer"
	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "renderer", err))
}

// settings are every variable the renderer reads, each in the config of
// the component it sets.
type settings struct {
	Ops      ops.Config
	Listen   ops.Listen
	Broker   queue.Config
	Queues   queue.Names
	Redis    redisconn.Config
	Gate     hostgate.Config
	Fetch    fetch.Config
	Crawler  crawler.Config
	Renderer renderer.Config
	// Secrets opens the sealed secret headers of pages just before their
	// document is fetched.
	Secrets secrets.Config
	// Archive keeps the page's document as fetched and the DOM rendered
	// from it for the checks that find something, as the crawlers keep
	// the pages they fetch.
	Archive archive.Config
}

func defaults() settings {
	return settings{
		Ops:      ops.Config{}.WithDefaults(),
		Listen:   ops.Listen{Addr: "127.0.0.1:9106"},
		Broker:   queue.Config{}.WithDefaults(),
		Queues:   queue.Names{}.WithDefaults(),
		Redis:    redisconn.Config{}.WithDefaults(),
		Gate:     hostgate.Config{Prefix: redisconn.DefaultPrefix, MaxInFlight: hostgate.DefaultMaxInFlight}.WithDefaults(),
		Fetch:    fetch.Config{MaxRedirects: fetch.DefaultMaxRedirects, MinHostSpacing: fetch.DefaultMinHostSpacing}.WithDefaults(),
		Crawler:  crawler.Config{}.WithDefaults(),
		Renderer: renderer.Config{}.WithDefaults(),
		Archive:  archive.Defaults(),
	}
}

// run reads the settings from getenv and runs the renderer until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "renderer", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "renderer", os.Getpid())
	return ops.Stopped(log, serve(ctx, cfg, log))
}

// serve wires the program's adapters and service and runs them until ctx
// ends.
func serve(ctx context.Context, cfg settings, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()

	broker := cfg.Broker.Named("renderer")
	pub, err := queue.NewPublisher(broker, log, cfg.Queues.Tasks, cfg.Queues.Renders)
	if err != nil {
		return fmt.Errorf("publisher: %w", err)
	}
	defer pub.Close()
	// The document counts against its origin's budget like a crawler's
	// fetch (class watch.HomepageFetch, booked by the scheduler or here).
	gate, err := hostgate.Open(cfg.Redis.URL, cfg.Gate, log)
	if err != nil {
		return fmt.Errorf("host gate: %w", err)
	}
	defer gate.Close()
	fetchCfg := cfg.Fetch
	fetchCfg.Pacer = gate
	documents, err := fetch.New(fetchCfg)
	if err != nil {
		return err
	}
	renderCfg := cfg.Renderer
	renderCfg.AllowPrivate, renderCfg.UserAgent = cfg.Fetch.AllowPrivate, cfg.Fetch.UserAgent
	renderCfg.DialGuard = fetch.DialGuardAllowing
	// A page's subresources leave by the proxy its document came through.
	renderCfg.Proxies = func(name string) (renderer.Upstream, error) {
		up, err := documents.Upstream(name)
		if err != nil {
			return nil, err
		}
		return up, nil
	}
	rend, err := renderer.New(renderCfg, documents, log, reg)
	if err != nil {
		return err
	}
	crawlCfg := cfg.Crawler
	crawlCfg.TaskQueue, crawlCfg.Gate, crawlCfg.Budget = cfg.Queues.Tasks, gate, gate
	crawlCfg.HostSpacing, crawlCfg.MaxSlotWait = cfg.Fetch.MinHostSpacing, cfg.Fetch.MaxPoliteWait
	// A check is its document's fetch plus a render, tried twice when the
	// browser is lost under it.
	renderCfg = renderCfg.WithDefaults()
	crawlCfg.CheckTimeout = max(crawlCfg.CheckTimeout, crawlCfg.CheckTimeout+2*(renderCfg.PageTimeout+5*time.Second))
	if crawlCfg.Secrets, err = cfg.Secrets.Sealer(); err != nil {
		return err
	}
	if cfg.Archive.Enabled {
		writer, closeArchive, err := archive.Open(cfg.Archive, "portalwatch-rendered", "portalwatch renderer")
		if err != nil {
			return err
		}
		// Sealed after the consumer stopped (deferred calls run last
		// first), so no write of a check in flight is cut off.
		defer func() {
			if err := closeArchive(context.WithoutCancel(ctx)); err != nil {
				log.Warn("archive file not sealed; the sweep seals it after its grace", "err", err)
			}
		}()
		crawlCfg.Archive = writer
	}
	svc, err := crawler.New(crawlCfg, rend, pub, log, reg)
	if err != nil {
		return err
	}
	handle := func(ctx context.Context, d watch.Delivery) error {
		return svc.Handle(renderer.WithDeliveries(ctx, d.DeliveryCount), d)
	}
	consumer, err := queue.NewConsumer(queue.ConsumerConfig{
		Config:       broker,
		Queue:        cfg.Queues.Renders,
		Prefetch:     renderCfg.Tabs * 2,
		Workers:      renderCfg.Tabs,
		DrainTimeout: cfg.Ops.ShutdownTimeout,
		// A render outlasts a drain often enough, and a page may reach a
		// renderer only MaxDeliveries times: a stop must not count as one.
		HandBack: true,
	}, log, handle, pub)
	if err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	health.Set("rabbitmq", consumer.Health)
	health.Set("rabbitmq_publisher", pub.Health)
	health.Set("chromium", rend.Health)

	if cfg.Fetch.AllowPrivate {
		log.Warn("PORTALWATCH_ALLOW_PRIVATE=true: the renderer and its browser may connect to loopback and private addresses")
	}
	if os.Geteuid() == 0 && renderCfg.NoSandbox && renderCfg.User == "" {
		log.Warn("Chromium runs as root without its sandbox: set PORTALWATCH_RENDER_USER to an unprivileged user")
	}
	// The browser outlives the consumer's drain: the pages in flight
	// finish, then it is killed.
	rendCtx, stopRenderer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRenderer()
	rendDone := make(chan struct{})
	go func() { rend.Run(rendCtx); close(rendDone) }() //nolint:errcheck // Run ends only with its context
	defer func() { stopRenderer(); <-rendDone }()

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { pub.Connect(ctx); return nil }) //nolint:errcheck // only ends early when stopping
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error {
		log.Info("rendering", "queue", cfg.Queues.Renders, "tabs", renderCfg.Tabs)
		return consumer.Run(ctx)
	})
	return g.Wait()
}

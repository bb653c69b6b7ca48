// Command extractor reads the new links of the pages that ask for it as
// articles: it claims each link's work from PostgreSQL, fetches the link with
// the crawler's client and rules within the fleet's per-origin budget (after
// the pages' checks), and stores the article once per canonical URL. Run as
// many as the links call for. It needs PostgreSQL and Redis, never RabbitMQ.
// It is configured from the environment (`extractor --help` lists the
// variables; README.md explains them); /healthz and /metrics are served on
// PORTALWATCH_HTTP_ADDR, 127.0.0.1:9105 by default.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/extractor"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "extractor", err))
}

// settings are every variable the extractor reads, each in the config of
// the component it sets.
type settings struct {
	Ops    ops.Config
	Listen ops.Listen
	// Nice is the extractor's CPU niceness, 0 to 19: articles come after
	// the pages' checks for the CPU too, where both share a machine.
	Nice      int `env:"PORTALWATCH_EXTRACTOR_NICE"`
	Database  store.Config
	Redis     redisconn.Config
	Gate      hostgate.Config
	Fetch     fetch.Config
	Extractor extractor.Config
	// Archive keeps each article page as fetched, as the crawlers keep
	// homepages (PORTALWATCH_ARCHIVE=false: off).
	Archive archive.Config
}

func defaults() settings {
	return settings{
		Ops:      ops.Config{}.WithDefaults(),
		Listen:   ops.Listen{Addr: "127.0.0.1:9105"},
		Nice:     10,
		Database: store.Config{}.WithDefaults(),
		Redis:    redisconn.Config{}.WithDefaults(),
		Gate:     hostgate.Config{Prefix: redisconn.DefaultPrefix, MaxInFlight: hostgate.DefaultMaxInFlight}.WithDefaults(),
		Fetch: fetch.Config{
			MaxRedirects:   fetch.DefaultMaxRedirects,
			MinHostSpacing: fetch.DefaultMinHostSpacing,
		}.WithDefaults(),
		Extractor: extractor.Config{PerOriginDay: extractor.DefaultPerOriginDay}.WithDefaults(),
		Archive:   archive.Defaults(),
	}
}

// Validate checks what no one component can: a lease shorter than two
// fetches would let a second extractor take a link whose first fetch is
// still running, so every slow article would be fetched twice.
func (s settings) Validate() error {
	if err := config.Between("Nice", s.Nice, 0, 19); err != nil {
		return err
	}
	// A lease out of its own bounds is named by the extractor's config.
	if s.Extractor.Lease >= 10*time.Second && s.Extractor.Lease < 2*s.Fetch.Timeout {
		return config.Invalid("Extractor.Lease", s.Extractor.Lease,
			"want at least twice {Fetch.Timeout}: a link whose fetch outlives its lease is fetched again by another extractor")
	}
	return nil
}

// run reads the settings from getenv and runs the extractor until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "extractor", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "extractor", os.Getpid())
	// Trade memory for CPU where the environment does not say
	// otherwise, as the crawler does: each extraction builds a DOM that dies
	// right after. The soft limit keeps the extractor well under 200 MB.
	ops.TuneGC(getenv, log, 200, 150<<20)
	if err := lowerPriority(cfg.Nice); err != nil {
		log.Warn("could not lower the CPU priority; articles compete with the checks for the CPU", "nice", cfg.Nice, "err", err)
	}
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
	// The per-origin spacing, in-flight cap and daily cap hold for the
	// whole fleet in Redis, shared with the crawlers; article fetches take
	// only what the pages' checks leave (watch.ArticleFetch).
	gate, err := hostgate.Open(cfg.Redis.URL, cfg.Gate, log)
	if err != nil {
		return fmt.Errorf("host gate: %w", err)
	}
	defer gate.Close()
	fetchCfg := cfg.Fetch
	fetchCfg.Pacer = gate.PacerFor(watch.ArticleFetch)
	fetchCfg.Logger = log
	// A body the extraction would refuse is not worth holding: the
	// fetch stops reading past the extraction's cap.
	fetchCfg.MaxBodyBytes = min(fetchCfg.MaxBodyBytes, int64(cfg.Extractor.WithDefaults().MaxBytes))
	fetcher, err := fetch.New(fetchCfg)
	if err != nil {
		return err
	}
	extractCfg := cfg.Extractor
	if cfg.Archive.Enabled {
		writer, closeArchive, err := archive.Open(cfg.Archive, "portalwatch-articles", "portalwatch extractor")
		if err != nil {
			return err
		}
		// Sealed after the service stopped (deferred calls run last first).
		defer func() {
			if err := closeArchive(context.WithoutCancel(ctx)); err != nil {
				log.Warn("archive file not sealed; the sweep seals it after its grace", "err", err)
			}
		}()
		extractCfg.Archive = writer
	}
	svc, err := extractor.New(extractCfg, st, fetcher, gate, log, reg)
	if err != nil {
		return err
	}
	if names := cfg.Fetch.Proxies.Names(); len(names) > 0 {
		// Names only: a proxy URL may carry credentials.
		log.Info("pages may be fetched through proxies", "proxies", names)
	}
	if cfg.Fetch.AllowPrivate {
		log.Warn("PORTALWATCH_ALLOW_PRIVATE=true: the extractor may connect to loopback and private addresses")
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error {
		if err := st.WaitReady(ctx, store.Migrated, log, health.Track("postgres", st.HealthCheck)); err != nil {
			return nil // stopped while waiting
		}
		log.Info("extracting articles", "concurrency", cfg.Extractor.Concurrency)
		return svc.Run(ctx, cfg.Ops.ShutdownTimeout)
	})
	return g.Wait()
}

// lowerPriority sets every thread of the process to nice. Linux keeps
// niceness per thread, and a new thread takes its creator's: once the few
// threads the runtime started before main are lowered, every later one is
// too.
func lowerPriority(nice int) error {
	if nice == 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
			return fmt.Errorf("thread %d: %w", tid, err)
		}
	}
	return nil
}

// Command web serves portalwatch to people: the HTTP API (/api/v1), Atom,
// RSS and JSON feeds (/feeds), the web page, /healthz and /metrics, all on
// PORTALWATCH_WEB_ADDR (127.0.0.1:8080 by default). It needs PostgreSQL
// only (RabbitMQ is asked for dead-letter counts, and their absence is
// shown, not fatal), and never migrates the schema: its reads work with a
// read-only database role (see README.md). It is configured from the
// environment (`web --help` lists the variables); SIGTERM stops it
// gracefully within PORTALWATCH_SHUTDOWN_TIMEOUT.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/senders"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/web"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "web", err))
}

// settings are every variable the web program reads, each in the config of
// the component it sets.
type settings struct {
	Ops ops.Config
	// Addr is where the API, the feeds, the web page, /healthz and
	// /metrics are served: host:port.
	Addr string `env:"PORTALWATCH_WEB_ADDR"`
	// ReadURL is a read replica of the database the heavy reads (updates,
	// removals, feeds) go to; empty reads from Database. Pages, tokens
	// and every write stay on Database, so a page added through a form
	// shows at once.
	ReadURL string `env:"DATABASE_READ_URL"`
	// AllowPrivate lets pages and webhooks name loopback and private
	// addresses, as the crawler and the notifier would reach them.
	AllowPrivate bool `env:"PORTALWATCH_ALLOW_PRIVATE"`
	Database     store.Config
	// Broker and Queues are read for the dead-letter counts alone.
	Broker  queue.Config
	Queues  queue.Names
	Web     web.Config
	Senders senders.Config
	// Secrets seals the secret headers a page is given (Cookie,
	// Authorization) before they are stored.
	Secrets secrets.Config
	// Archive is where the pages as fetched are kept, which the API and
	// the page view serve as downloads.
	Archive archive.Config
	// Proxies are the crawlers' list: a page may name only one of them.
	// Unset, a page given a proxy is refused, with a message saying so.
	Proxies fetch.ProxyConfig
}

func defaults() settings {
	return settings{
		Ops:      ops.Config{}.WithDefaults(),
		Addr:     "127.0.0.1:8080",
		Database: store.Config{}.WithDefaults(),
		Broker:   queue.Config{}.WithDefaults(),
		Queues:   queue.Names{}.WithDefaults(),
		Senders:  senders.Config{Webhook: webhook.Config{UserAgent: fetch.DefaultUserAgent}}.WithDefaults(),
		Archive:  archive.Defaults(),
	}
}

// Validate checks the web program's own settings.
func (s settings) Validate() error {
	if err := config.HostPort("Addr", s.Addr); err != nil {
		return err
	}
	if s.ReadURL != "" {
		return store.ValidURL("ReadURL", s.ReadURL)
	}
	return nil
}

// run reads the settings from getenv and serves until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "web", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "web", os.Getpid())
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return ops.Stopped(log, fmt.Errorf("listen on %s (PORTALWATCH_WEB_ADDR): %w", cfg.Addr, err))
	}
	return ops.Stopped(log, serve(ctx, cfg, ln, log))
}

// serve is run on a listener the caller opened, so a test can start the
// program in-process on a free port. It closes ln.
func serve(ctx context.Context, cfg settings, ln net.Listener, log *slog.Logger) error {
	defer ln.Close() // already closed when served; this is for the errors before
	health, reg := ops.NewHealth(), ops.NewRegistry()
	sealer, err := cfg.Secrets.Sealer()
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.Database.URL, store.ApplicationName("portalwatch web"))
	if err != nil {
		return err
	}
	defer st.Close()
	if sealer != nil {
		st = st.WithSealer(sealer)
	}
	// The heavy reads (updates, removals, feeds, searches) have a pool of
	// their own, on a replica when there is one: however many of them run
	// at once, token checks, sign-ins and writes find a connection.
	readURL := cfg.ReadURL
	if readURL == "" {
		readURL = cfg.Database.URL
	}
	reads, err := store.Open(ctx, readURL, store.ApplicationName("portalwatch web reads"))
	if err != nil {
		return fmt.Errorf("the reads' database (DATABASE_READ_URL, else DATABASE_URL): %w", err)
	}
	defer reads.Close()
	if cfg.ReadURL != "" {
		health.Set("postgres_read", reads.HealthCheck)
	}
	dead, err := queue.NewDead(cfg.Broker.Named("web"))
	if err != nil {
		return fmt.Errorf("dead letters: %w", err)
	}
	// Test messages go out as the notifier's would: same senders, same
	// dial guard.
	senders, closeSenders, err := senders.New(cfg.Senders, fetch.DialGuard(cfg.AllowPrivate))
	if err != nil {
		return fmt.Errorf("notification senders: %w", err)
	}
	defer closeSenders()

	// Discovery fetches as the crawler does: the address guard at every
	// dial, robots.txt, one fetch a second per origin.
	client, err := fetch.New(fetch.Config{AllowPrivate: cfg.AllowPrivate, MaxRedirects: fetch.DefaultMaxRedirects,
		MinHostSpacing: fetch.DefaultMinHostSpacing})
	if err != nil {
		return fmt.Errorf("discovery fetch client: %w", err)
	}
	defer client.CloseIdleConnections()

	webCfg := cfg.Web
	webCfg.ListenAddr = ln.Addr().String()
	webCfg.Policy = registration.Policy{GuardURL: fetch.Guard(cfg.AllowPrivate, nil), Proxies: cfg.Proxies.Names()}
	// Anyone may ask the web program's /healthz: it names what it waits
	// for, and the log says why.
	webCfg.Health = health.Summary()
	webCfg.Metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	webCfg.Registerer = reg
	deps := web.Deps{
		Pages: st, Writer: st, Importer: st, Updates: reads, Reading: st, Tokens: st, Sessions: st, Removals: reads, Links: reads,
		Revisions: reads, Subscriptions: st, Tester: testSender(senders), Discoverer: discover.Discoverer{Fetcher: client, Limits: discover.DefaultLimits},
		Dead: newDeadLetters(dead, []string{cfg.Queues.Jobs, cfg.Queues.Tasks}), Sources: st, SourceEditor: st,
	}
	if cfg.Archive.Enabled {
		files, err := archive.NewFS(cfg.Archive.Directory())
		if err != nil {
			return err
		}
		deps.Snapshots, deps.SnapshotBodies = reads, archive.Bodies{Store: files, Max: cfg.Archive.ServeBytes}
	}
	srv, err := web.New(webCfg, deps, log)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		// The web program does not migrate (its role may be read-only):
		// until the schema it was built for is there, /healthz says what
		// it waits for and requests fail with 500 and a logged reason.
		st.WaitReady(gctx, store.Current, log, health.Track("postgres", st.HealthCheck)) //nolint:errcheck // ends with ctx
		return nil
	})
	g.Go(func() error { return web.ServeListener(gctx, ln, srv.Handler(), cfg.Ops.ShutdownTimeout, log) })
	return g.Wait()
}

// testSender sends test messages through the notifier's senders.
type testSender map[watch.Channel]notifier.Sender

func (t testSender) SendTest(ctx context.Context, sub watch.Subscription, sample watch.Batch) watch.SendResult {
	return notifier.SendTest(ctx, t, sub, sample)
}

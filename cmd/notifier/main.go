// Command notifier delivers new updates to their subscribers: signed
// webhooks and e-mail (see internal/notifier). It reads PostgreSQL only, never
// a queue; several notifiers may run at once. It is configured from the
// environment (`notifier --help` lists the variables; README.md explains
// them); /healthz and /metrics are served on PORTALWATCH_HTTP_ADDR,
// 127.0.0.1:9104 by default.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/senders"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	os.Exit(ops.ExitStatus(os.Stderr, "notifier", err))
}

// settings are every variable the notifier reads, each in the config of
// the component it sets.
type settings struct {
	Ops    ops.Config
	Listen ops.Listen
	// AllowPrivate lets webhooks go to loopback and private addresses, as
	// it lets the crawler fetch them.
	AllowPrivate bool `env:"PORTALWATCH_ALLOW_PRIVATE"`
	Database     store.Config
	Notifier     notifier.Config
	Senders      senders.Config
}

func defaults() settings {
	return settings{
		Ops:      ops.Config{}.WithDefaults(),
		Listen:   ops.Listen{Addr: "127.0.0.1:9104"},
		Database: store.Config{}.WithDefaults(),
		Notifier: notifier.Config{}.WithDefaults(),
		Senders:  senders.Config{Webhook: webhook.Config{UserAgent: fetch.DefaultUserAgent}}.WithDefaults(),
	}
}

// Validate checks the lease against the delivery timeouts. A delivery
// holds its lease through the send, which may take the whole timeout, and
// then through the record of its outcome, whose deadline starts only after
// the send: twice the longer timeout leaves a send that took all of it as
// long again to record (milliseconds, normally).
func (s settings) Validate() error {
	if longest := max(s.Senders.Webhook.Timeout, s.Senders.Email.Timeout); s.Notifier.Lease < 2*longest {
		return config.Invalid("Notifier.Lease", s.Notifier.Lease,
			"want at least twice the longer of {Senders.Webhook.Timeout} and {Senders.Email.Timeout}: "+
				"a send may take all of one and its outcome is recorded after it, or deliveries outlive their lease and go out twice")
	}
	return nil
}

// run reads the settings from getenv and runs the notifier until ctx ends.
func run(ctx context.Context, args []string, getenv config.Getenv, stdout io.Writer) error {
	cfg := defaults()
	if done, err := config.Read(getenv, args, stdout, "notifier", &cfg); done || err != nil {
		return err
	}
	log := cfg.Ops.Logger(stdout, "notifier", os.Getpid())
	return ops.Stopped(log, serve(ctx, cfg, log))
}

// serve wires the program's adapters and service and runs them until ctx
// ends.
func serve(ctx context.Context, cfg settings, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()
	senders, closeSenders, err := senders.New(cfg.Senders, fetch.DialGuard(cfg.AllowPrivate))
	if err != nil {
		return err
	}
	defer closeSenders()
	if _, ok := senders[watch.Email]; ok {
		log.Info("e-mail enabled", "smtp", config.RedactURL(cfg.Senders.Email.URL), "from", cfg.Senders.Email.From)
	} else {
		log.Info("e-mail disabled: PORTALWATCH_SMTP_URL is not set")
	}
	st, err := store.Open(ctx, cfg.Database.URL)
	if err != nil {
		return err
	}
	defer st.Close()
	service := cfg.Notifier
	service.DrainTimeout = cfg.Ops.ShutdownTimeout

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(ctx, cfg.Listen.Addr, health, reg, log) })
	g.Go(func() error {
		if err := st.WaitReady(ctx, store.Migrated, log, health.Track("postgres", st.HealthCheck)); err != nil {
			return nil // stopped while waiting
		}
		return notifier.New(service, st, senders, log, reg).Run(ctx)
	})
	return g.Wait()
}

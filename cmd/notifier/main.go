// Command notifier delivers new updates to their subscribers: signed
// webhooks and e-mail (see internal/notify). It reads PostgreSQL only, never
// a queue; several notifiers may run at once. It is configured from the
// environment (see README.md); /healthz and /metrics are served on
// PORTALWATCH_HTTP_ADDR, 127.0.0.1:9104 by default.
package main

import (
	"context"
	"log/slog"

	"golang.org/x/sync/errgroup"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/notify"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/proc"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func main() { proc.Main("notifier", run) }

// run wires the program's adapters and service and runs them until ctx ends.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	health, reg := ops.NewHealth(), ops.NewRegistry()
	senders, closeSenders, err := proc.NotifySenders(cfg)
	if err != nil {
		return err
	}
	defer closeSenders()
	if _, ok := senders[watch.Email]; ok {
		log.Info("e-mail enabled", "smtp", config.RedactURL(cfg.Notifier.SMTPURL), "from", cfg.Notifier.SMTPFrom)
	} else {
		log.Info("e-mail disabled: PORTALWATCH_SMTP_URL is not set")
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ops.Serve(ctx, cfg.HTTPAddrOr("127.0.0.1:9104"), health, reg, log) })
	g.Go(func() error {
		if err := proc.PrepareStore(ctx, st, health, log); err != nil {
			return nil // stopped while waiting
		}
		n := cfg.Notifier
		svc := notify.New(notify.Config{
			Concurrency:  n.Concurrency,
			PollInterval: n.PollInterval,
			Lease:        n.Lease,
			RetryMin:     n.RetryMin,
			RetryMax:     n.RetryMax,
			PauseAfter:   n.PauseAfter,
			DrainTimeout: cfg.ShutdownTimeout,
		}, st, senders, log, reg)
		return svc.Run(ctx)
	})
	return g.Wait()
}

// Package proc holds what every portalwatch program does the same way: a
// JSON logger for supervisord's log files, and waiting for PostgreSQL (then
// migrating it) without ever exiting because it is down, so supervisord never
// gives up on a program that is only waiting.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/store"
)

// Logger returns a JSON logger at level (debug, info, warn, error) whose
// records name the program and its pid.
func Logger(w io.Writer, level, program string, pid int) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("program", program, "pid", pid)
}

// QueueConfig returns the RabbitMQ settings of cfg for a program in role.
func QueueConfig(cfg config.Config, role string) queue.Config {
	return queue.Config{
		URL:           cfg.AMQPURL,
		Name:          fmt.Sprintf("portalwatch %s pid %d", role, os.Getpid()),
		DeliveryLimit: cfg.DeliveryLimit,
		Backoff:       backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second},
	}
}

// PrepareStore waits until PostgreSQL answers and the schema is migrated,
// retrying with backoff and reporting on health what it waits for. It returns
// only when the store is ready or ctx ends.
func PrepareStore(ctx context.Context, st *store.Store, health *ops.Health, log *slog.Logger) error {
	var waitingFor atomic.Pointer[error]
	connecting := errors.New("connecting")
	waitingFor.Store(&connecting)
	health.Set("postgres", func() error { return *waitingFor.Load() })
	policy := backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second}
	for attempt := 0; ; attempt++ {
		err := st.Ping(ctx)
		if err == nil {
			_, err = st.Migrate(ctx, log)
		}
		if err == nil {
			break
		}
		wait := fmt.Errorf("waiting for PostgreSQL: %w", err)
		waitingFor.Store(&wait)
		log.Warn("PostgreSQL not ready; retrying", "attempt", attempt+1, "err", err)
		if err := policy.Sleep(ctx, attempt); err != nil {
			return err
		}
	}
	health.Set("postgres", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return st.Ping(ctx)
	})
	return nil
}

// Retry calls f until it succeeds or ctx ends, logging each failure and
// waiting with backoff in between, so a process rides out a dependency that
// drops away between two steps of its start-up.
func Retry[T any](ctx context.Context, log *slog.Logger, what string, f func() (T, error)) (T, error) {
	policy := backoff.Policy{Min: 200 * time.Millisecond, Max: 10 * time.Second}
	for attempt := 0; ; attempt++ {
		v, err := f()
		if err == nil {
			return v, nil
		}
		log.Warn("retrying: could not "+what, "attempt", attempt+1, "err", err)
		if err := policy.Sleep(ctx, attempt); err != nil {
			var zero T
			return zero, err
		}
	}
}

// Main runs a long-lived program: it loads the configuration from the
// environment, makes a JSON logger on stdout, calls run with a context that
// SIGINT and SIGTERM cancel, and exits with status 0, 1 for a failure, or 2
// for a configuration error (one line per bad variable on stderr).
func Main(program string, run func(ctx context.Context, cfg config.Config, log *slog.Logger) error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(2)
	}
	log := Logger(os.Stdout, cfg.LogLevel, program, os.Getpid())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, log)
	stop()
	if err != nil {
		log.Error("exiting on error", "err", err)
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
		os.Exit(1)
	}
	log.Info("stopped")
}

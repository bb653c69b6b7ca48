package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/migrations"
)

// Config says where the database is.
type Config struct {
	// URL is the PostgreSQL connection string, postgres:// or
	// postgresql://. Default DefaultURL.
	URL string `env:"DATABASE_URL"`
}

// DefaultURL is the database of a fresh machine's `make up`.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/portalwatch?sslmode=disable"

// WithDefaults returns c with an unset URL given DefaultURL.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	return c
}

// Validate checks the URL's form; its error never shows the password.
func (c Config) Validate() error { return ValidURL("URL", c.URL) }

// ValidURL checks that field holds a PostgreSQL URL.
func ValidURL(field, url string) error { return config.URL(field, url, "postgres", "postgresql") }

// HealthCheck pings the database within a second, for /healthz.
func (s *Store) HealthCheck() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.Ping(ctx)
}

// Readiness is what WaitReady makes sure of.
type Readiness int

const (
	// Migrated: pending migrations are applied, as the pipeline programs
	// and `watchctl migrate` do.
	Migrated Readiness = iota
	// Current: the schema is at least the one this build expects; nothing
	// is changed, so a read-only role will do (the web program).
	Current
)

// WaitReady waits until PostgreSQL answers and the schema is ready as want
// says, retrying with backoff.Default and logging each wait; report gets
// what it waits for, then nil once ready (ops.Health.Track fits). It never
// gives up on a database that is down, so supervisord never gives up on a
// program that is only waiting; it returns ctx's error if ctx ends first.
func (s *Store) WaitReady(ctx context.Context, want Readiness, log *slog.Logger, report func(error)) error {
	for attempt := 0; ; attempt++ {
		err := s.ready(ctx, want, log)
		if err == nil {
			report(nil)
			return nil
		}
		wait := fmt.Errorf("waiting for PostgreSQL: %w", err)
		report(wait)
		log.Warn("database not ready; retrying", "attempt", attempt+1, "err", err)
		if err := backoff.Default.Sleep(ctx, attempt); err != nil {
			return err
		}
	}
}

func (s *Store) ready(ctx context.Context, want Readiness, log *slog.Logger) error {
	if want == Migrated {
		if err := s.Ping(ctx); err != nil {
			return err
		}
		_, err := s.Migrate(ctx, log)
		return err
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if latest := migrations.Latest(); v < latest {
		return fmt.Errorf("the database is at schema version %d, this program needs %d: run `watchctl migrate` (or start any pipeline program)", v, latest)
	}
	return nil
}

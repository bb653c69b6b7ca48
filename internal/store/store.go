// Package store is portalwatch's PostgreSQL adapter: the pages users watch,
// the durable seen-set of links and the updates table, one method per query.
// PostgreSQL is the truth: a link is new if and only if its insert into links
// succeeds. Callers never see pgx types or errors; they get the domain's.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/migrations"
)

// Store is a pool of connections to portalwatch's database. It is safe for
// concurrent use. The pool reconnects by itself after PostgreSQL restarts; a
// query that fails on a dead connection returns an error the caller retries.
type Store struct {
	pool *pgxpool.Pool
	// sealer seals the secret headers of pages as they are stored; nil
	// refuses them (watch.ErrNoSecretsKey).
	sealer watch.Sealer
}

// WithSealer returns a Store on the same pool that seals the secret
// headers of the pages it creates and edits with k. Closing either closes
// the pool.
func (s *Store) WithSealer(k watch.Sealer) *Store {
	c := *s
	c.sealer = k
	return &c
}

// DefaultConnectTimeout bounds the dial and startup of one database
// connection.
const DefaultConnectTimeout = 5 * time.Second

// Open connects to the database at dsn. It does not wait for the server: the
// first query does. MaxConns defaults to pgxpool's (4 or the CPU count), and
// each connection's dial to DefaultConnectTimeout.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	for _, o := range opts {
		o(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database pool: %w", err)
	}
	return &Store{pool: pool}, nil
}

// Option changes how Open's connections are made.
type Option func(*pgxpool.Config)

// ApplicationName names the pool's connections in pg_stat_activity, so an
// operator (and a test) tells a program's pools apart.
func ApplicationName(name string) Option {
	return func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["application_name"] = name
	}
}

// GenericPlans makes every connection keep one generic plan per statement
// (plan_cache_mode force_generic_plan), for the processor. Its check
// statement reads and writes links, which is partitioned by page: PostgreSQL
// would otherwise plan it anew at each check to prune the partitions at plan
// time, which costs milliseconds, where the generic plan prunes them at run
// time for microseconds. The processor's other statements are lookups by key
// that plan the same either way. Not for the web program, whose optional
// filters want plans made for their values.
func GenericPlans() Option {
	return func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	}
}

// Close closes every connection. It is safe to call more than once.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// Migrate applies every pending migration, each in its own transaction, under
// a session advisory lock so that processes starting together apply them once.
// It returns the versions it applied.
func (s *Store) Migrate(ctx context.Context, log *slog.Logger) ([]int64, error) {
	db := stdlib.OpenDBFromPool(s.pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	var applied []int64
	for _, r := range results {
		applied = append(applied, r.Source.Version)
		log.Info("migration applied", "version", r.Source.Version, "file", r.Source.Path, "elapsed_ms", r.Duration.Milliseconds())
	}
	return applied, nil
}

// SchemaVersion returns the newest migration applied, 0 for an empty database.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: never migrated
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Epoch returns the database's epoch, a short string that changes whenever the
// database is created anew. Caches keyed by it can never outlive their truth.
func (s *Store) Epoch(ctx context.Context) (string, error) {
	var epoch string
	if err := s.pool.QueryRow(ctx, `SELECT epoch FROM meta`).Scan(&epoch); err != nil {
		return "", fmt.Errorf("read database epoch: %w", err)
	}
	return epoch, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// interpretError translates a database error at the store's boundary: one
// that retrying the same statement cannot fix (bad data, such as a NUL byte
// in text, a violated constraint, or a statement PostgreSQL will never
// accept) is marked watch.ErrPermanent, so callers decide without importing
// pgx. Connection failures, restarts and timeouts stay as they are:
// transient.
func interpretError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code[:2] {
	case "22", // data exception
		"23", // integrity constraint violation
		"42": // syntax error or access rule violation: a bug, not a hiccup
		return watch.Permanent(err)
	}
	return err
}

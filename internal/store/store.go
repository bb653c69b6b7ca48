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

	"github.com/jackc/pgx/v5"
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

// NewPage describes a page to register.
type NewPage struct {
	URL      string
	Interval time.Duration // zero means watch.DefaultInterval
	Options  watch.LinkOptions
}

// AddPage registers a page, due at once. It returns watch.ErrDuplicatePage
// when the URL is already registered.
func (s *Store) AddPage(ctx context.Context, p NewPage) (watch.Page, error) {
	if p.Interval == 0 {
		p.Interval = watch.DefaultInterval
	}
	row := s.pool.QueryRow(ctx, `
		INSERT INTO pages (base_url, check_interval, same_site_only, ignore_patterns, `+optionColumns+`)
		VALUES ($1, $2 * interval '1 millisecond', $3, $4, $5, $6, $7, $8, $9, $10)
		RETURNING `+pageColumns,
		append([]any{p.URL, p.Interval.Milliseconds(), p.Options.SameSiteOnly, nonNil(p.Options.Ignore)}, optionArgs(p.Options)...)...)
	page, err := scanPage(row)
	if isUniqueViolation(err) {
		return watch.Page{}, fmt.Errorf("add %s: %w", p.URL, watch.ErrDuplicatePage)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("add %s: %w", p.URL, err)
	}
	return page, nil
}

// Page returns one page, or watch.ErrPageNotFound.
func (s *Store) Page(ctx context.Context, id int64) (watch.Page, error) {
	page, err := scanPage(s.pool.QueryRow(ctx, `SELECT `+pageColumns+` FROM pages WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("load page %d: %w", id, err)
	}
	return page, nil
}

// Pages returns every registered page in id order.
func (s *Store) Pages(ctx context.Context) ([]watch.Page, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+pageColumns+` FROM pages ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Page, error) { return scanPage(r) })
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	return pages, nil
}

// PageChange holds the settings SetPage changes; nil fields stay as they are.
type PageChange struct {
	Interval     *time.Duration
	Enabled      *bool
	SameSiteOnly *bool
	Ignore       *[]string
}

// SetPage changes a page's settings and returns the page as it now is, or
// watch.ErrPageNotFound.
func (s *Store) SetPage(ctx context.Context, id int64, c PageChange) (watch.Page, error) {
	var intervalMS *int64
	if c.Interval != nil {
		ms := c.Interval.Milliseconds()
		intervalMS = &ms
	}
	var ignore []string
	if c.Ignore != nil {
		ignore = nonNil(*c.Ignore)
	}
	row := s.pool.QueryRow(ctx, `
		UPDATE pages SET
			check_interval  = coalesce($2 * interval '1 millisecond', check_interval),
			enabled         = coalesce($3, enabled),
			same_site_only  = coalesce($4, same_site_only),
			ignore_patterns = coalesce($5, ignore_patterns)
		WHERE id = $1
		RETURNING `+pageColumns,
		id, intervalMS, c.Enabled, c.SameSiteOnly, ignore)
	page, err := scanPage(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("change page %d: %w", id, err)
	}
	return page, nil
}

// RemovePage deletes a page with its links and updates, or returns
// watch.ErrPageNotFound.
func (s *Store) RemovePage(ctx context.Context, id int64) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM pages WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("remove page %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	return nil
}

// UpdatesQuery selects updates, newest first.
type UpdatesQuery struct {
	PageID int64     // 0 means every page
	Since  time.Time // zero means all time
	Limit  int       // 0 means 100
}

// args returns q as the queries' parameters: NULL for every page and for
// all time, and the limit with its default.
func (q UpdatesQuery) args() (pageID *int64, since *time.Time, limit int) {
	if q.PageID != 0 {
		pageID = &q.PageID
	}
	if !q.Since.IsZero() {
		since = &q.Since
	}
	limit = q.Limit
	if limit <= 0 {
		limit = 100
	}
	return pageID, since, limit
}

// Updates returns the updates that match q, newest first.
func (s *Store) Updates(ctx context.Context, q UpdatesQuery) ([]watch.Update, error) {
	pageID, since, limit := q.args()
	rows, err := s.pool.Query(ctx, `
		SELECT id, page_id, url, text, code, discovered_at, summary, burst FROM updates
		WHERE ($1::bigint IS NULL OR page_id = $1) AND ($2::timestamptz IS NULL OR discovered_at >= $2)
		ORDER BY discovered_at DESC, id DESC
		LIMIT $3`, pageID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("query updates: %w", err)
	}
	updates, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Update, error) {
		var u watch.Update
		err := r.Scan(&u.ID, &u.PageID, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt, &u.Summary, &u.Burst)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("query updates: %w", err)
	}
	return updates, nil
}

const pageColumns = `id, base_url, (extract(epoch FROM check_interval) * 1000)::bigint, enabled, next_check_at,
	last_checked_at, coalesce(last_status, 0), coalesce(last_error, ''), consecutive_failures, baseline_at,
	same_site_only, ignore_patterns, created_at, last_truncated, last_cut, name, tags, coalesce(title, ''),
	within_selectors, exclude_selectors, include_text, exclude_text, include_url, exclude_url,
	rebaseline, burst_detection`

func scanPage(row pgx.Row) (watch.Page, error) {
	var (
		p          watch.Page
		intervalMS int64
		checked    *time.Time
		baseline   *time.Time
	)
	err := row.Scan(&p.ID, &p.BaseURL, &intervalMS, &p.Enabled, &p.NextCheckAt, &checked, &p.LastStatus,
		&p.LastError, &p.ConsecutiveFailures, &baseline, &p.Options.SameSiteOnly, &p.Options.Ignore, &p.CreatedAt,
		&p.LastTruncated, &p.LastCut, &p.Name, &p.Tags, &p.Title,
		&p.Options.Within, &p.Options.Exclude, &p.Options.IncludeText, &p.Options.ExcludeText,
		&p.Options.IncludeURL, &p.Options.ExcludeURL, &p.RebaselinePending, &p.BurstDetection)
	if err != nil {
		return watch.Page{}, err
	}
	p.Interval = time.Duration(intervalMS) * time.Millisecond
	if checked != nil {
		p.LastCheckedAt = *checked
	}
	if baseline != nil {
		p.BaselineAt = *baseline
	}
	return p, nil
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

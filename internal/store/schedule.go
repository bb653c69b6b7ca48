package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ClaimParams tunes one scheduling round.
type ClaimParams struct {
	// Limit is the most pages claimed in one round.
	Limit int
	// Lease is how long a claimed page is kept from being scheduled again
	// unless its task comes back first.
	Lease time.Duration
	// Jitter is the largest share of a page's interval added at random to its
	// next check.
	Jitter float64
}

// ClaimDue claims up to p.Limit pages that are due (enabled, next_check_at
// passed, no job in flight), hands their jobs to publish, and, if publish
// succeeds, moves each page's next check forward by its interval plus jitter
// and leases it. Rows are locked with FOR UPDATE SKIP LOCKED, so several
// schedulers never claim the same page; if publish fails, the transaction
// rolls back and the pages stay due. A page whose job was published but whose
// claim did not commit gets a second job later, which the processor absorbs.
// ClaimDue returns how many pages it claimed.
func (s *Store) ClaimDue(ctx context.Context, p ClaimParams, publish func(context.Context, []watch.Job) error) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("claim due pages: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	rows, err := tx.Query(ctx, `
		SELECT id, base_url, coalesce(etag, ''), coalesce(last_modified, ''), next_check_at,
		       same_site_only, ignore_patterns
		FROM pages
		WHERE enabled AND next_check_at <= now() AND (lease_until IS NULL OR lease_until <= now())
		ORDER BY next_check_at
		LIMIT $1
		FOR UPDATE SKIP LOCKED`, p.Limit)
	if err != nil {
		return 0, fmt.Errorf("claim due pages: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Job, error) {
		var (
			j       watch.Job
			opts    watch.LinkOptions
			ignores []string
		)
		err := r.Scan(&j.ID, &j.BaseURL, &j.ETag, &j.LastModified, &j.ScheduledAt, &opts.SameSiteOnly, &ignores)
		if len(ignores) > 0 {
			opts.Ignore = ignores
		}
		if opts.SameSiteOnly || len(opts.Ignore) > 0 {
			j.Options = &opts
		}
		return j, err
	})
	if err != nil {
		return 0, fmt.Errorf("claim due pages: %w", err)
	}
	if len(jobs) == 0 {
		return 0, nil
	}
	if err := publish(ctx, jobs); err != nil {
		return 0, fmt.Errorf("publish %d jobs: %w", len(jobs), err)
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	_, err = tx.Exec(ctx, `
		UPDATE pages SET
			next_check_at = now() + check_interval + check_interval * ($2::float8 * random()),
			lease_until   = now() + $3 * interval '1 millisecond'
		WHERE id = ANY($1)`, ids, p.Jitter, p.Lease.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("reschedule %d pages: %w", len(ids), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("claim due pages: commit: %w", err)
	}
	return len(jobs), nil
}

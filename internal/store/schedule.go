package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ClaimDue claims up to p.Limit pages that are due (enabled, next_check_at
// passed, no job in flight), moves each page's next check forward by its
// interval and leases it, records the removals that the pages' last checks
// made due, hands their jobs to dispatch, and commits if dispatch succeeds.
// The pages dispatch postpones (it published no job for them) are due again
// at their Until instead, unleased.
// Rows are locked with FOR UPDATE SKIP LOCKED, so several schedulers never
// claim the same page; if publish fails, the transaction rolls back and the
// pages stay due, their removals too. A page whose job was published but
// whose claim did not commit gets a second job later, which the processor
// absorbs. ClaimDue returns how many jobs were published, how many pages
// postponed and how many removals it recorded.
func (s *Store) ClaimDue(ctx context.Context, p watch.ClaimParams,
	dispatch func(context.Context, []watch.Job) ([]watch.Postponed, error),
) (watch.Claimed, error) {
	var claimed watch.Claimed
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return claimed, fmt.Errorf("claim due pages: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	// One statement claims and reschedules: the schedule stays anchored to
	// the page's own rhythm (next = previous + interval) so checks do not
	// drift by the pipeline's delay; a page that fell behind, or was never
	// checked, restarts from now with jitter, which spreads pages registered
	// together.
	rows, err := tx.Query(ctx, ClaimDueQuery, p.Limit, p.Jitter, p.Lease.Milliseconds())
	if err != nil {
		return claimed, fmt.Errorf("claim due pages: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Job, error) {
		var (
			j       watch.Job
			opts    watch.LinkOptions
			ignores []string
			f       watch.Followed
			removed int
		)
		err := r.Scan(append([]any{&removed, &j.ID, &j.BaseURL, &j.ETag, &j.LastModified, &j.ScheduledAt, &opts.SameSiteOnly, &ignores,
			&j.LinksDigest, &j.BodyDigest, &opts.Within, &opts.Exclude, &opts.IncludeText, &opts.ExcludeText, &opts.IncludeURL, &opts.ExcludeURL, &j.Headers, &j.Proxy,
			&j.Render, &j.WaitFor, &j.RenderAllow},
			append(followedDest(&f), &j.Snapshot)...)...)
		if len(j.Headers) == 0 {
			j.Headers = nil // no field in the job
		}
		if len(j.RenderAllow) == 0 {
			j.RenderAllow = nil
		}
		opts.Ignore = ignores
		j.Options = jobOptions(opts)
		j.Followed = &f
		claimed.Removals += removed
		return j, err
	})
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due pages: %w", err)
	}
	if len(jobs) == 0 {
		return watch.Claimed{}, nil
	}
	later, err := dispatch(ctx, jobs)
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("dispatch %d jobs: %w", len(jobs), err)
	}
	if len(later) > 0 {
		ids, until := make([]int64, len(later)), make([]time.Time, len(later))
		for i, l := range later {
			ids[i], until[i] = l.ID, l.Until
		}
		if _, err := tx.Exec(ctx, `
			UPDATE pages SET next_check_at = l.until, lease_until = NULL
			FROM unnest($1::bigint[], $2::timestamptz[]) AS l(id, until)
			WHERE pages.id = l.id`, ids, until); err != nil {
			return watch.Claimed{}, fmt.Errorf("claim due pages: postpone %d: %w", len(later), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due pages: commit: %w", err)
	}
	claimed.Jobs, claimed.Postponed = len(jobs)-len(later), len(later)
	return claimed, nil
}

// ClaimDueQuery is the statement ClaimDue runs: it claims up to $1 due pages
// FOR UPDATE SKIP LOCKED, reschedules each with up to $2 (a float, the share
// of its interval) of jitter, and leases it for $3 milliseconds. It is
// exported for the scheduler benchmark, which shows its plan (EXPLAIN) on a
// million due pages; run it only inside a transaction that is rolled back.
//
// It also moves each page's due_keys, the links its last check found absent
// for the removal count, into removals. The claim rewrites the page's row
// anyway and is one statement for a whole batch of pages, so a removal costs
// only its row here, where a statement of its own cost the row's rewrite
// and the statement's setup again (docs/benchmarks.md). due holds the row
// locked, so a check of the page that adds due keys meanwhile waits for the
// claim and adds them to the emptied array; each removal is so recorded
// once. A removal is recorded one interval after the check that made it
// due, when the page's next check is scheduled; the processors' sweep
// (store.RecordRemovals) records those of pages no claim reaches, such as
// paused ones. Readers take a removal's URL and text from links (00014).
// Each removal names the page's newest snapshot (newestSnapshot, 00028).
const ClaimDueQuery = `
		WITH due AS (
			SELECT id, next_check_at, due_keys FROM pages
			WHERE enabled AND deleted_at IS NULL AND next_check_at <= now() AND (lease_until IS NULL OR lease_until <= now())
			ORDER BY next_check_at
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), removed AS (
			INSERT INTO removals (page_id, link_key, snapshot_id)
			SELECT due.id, d.k, ` + newestSnapshot + ` FROM due CROSS JOIN unnest(due.due_keys) AS d(k)
		)
		UPDATE pages p SET
			due_keys = NULL,
			next_check_at = CASE
				WHEN p.baseline_at IS NOT NULL AND due.next_check_at + p.check_interval > now()
				THEN due.next_check_at + p.check_interval
				ELSE now() + p.check_interval * (1 + $2::float8 * random()) END,
			lease_until = now() + $3 * interval '1 millisecond'
		FROM due
		WHERE p.id = due.id
		RETURNING coalesce(cardinality(due.due_keys), 0), p.id, p.base_url, coalesce(p.etag, ''), coalesce(p.last_modified, ''), due.next_check_at,
		          p.same_site_only, p.ignore_patterns, coalesce(p.links_digest, ''), coalesce(p.body_digest, ''),
		          p.within_selectors, p.exclude_selectors, p.include_text, p.exclude_text, p.include_url, p.exclude_url,
		          coalesce(p.headers, '[]'), coalesce(p.proxy, ''), p.render, coalesce(p.wait_for, ''), p.render_allow, ` + followedColumns + `, p.snapshot_original`

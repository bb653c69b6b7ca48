package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// removalsDue is an SQL condition on a pages row as a check left it: a
// pending absence has reached the removal count (see TrackLinks).
const removalsDue = `(removal_due_at IS NOT NULL AND ok_checks >= removal_due_at)`

// recordTracked records a successful check with its removals
// (Check.Removals) as one pipelined batch: PostgreSQL runs the statements in
// one implicit transaction, so the check costs one round trip and one
// commit, as without removals. The set is compared first, before the check's
// own statement counts the check and clears a re-baseline; the removals that
// are due are recorded last (the statement records nothing when none is).
func (s *Store) recordTracked(ctx context.Context, c watch.Check, links []watch.NewLink) (watch.Recorded, error) {
	rec, err := s.sendTracked(ctx, c, links)
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("record check of page %d: %w", c.PageID, interpretError(err))
	}
	return rec, nil
}

func (s *Store) sendTracked(ctx context.Context, c watch.Check, links []watch.NewLink) (rec watch.Recorded, err error) {
	b := &pgx.Batch{}
	set := c.Removals.Set
	if set != nil {
		keys := make([]int64, len(set.Keys))
		for i, k := range set.Keys {
			keys[i] = int64(k)
		}
		b.Queue(trackLinksSQL, c.PageID, set.Digest, c.FetchedAt, keys, c.Removals.Checks, false, true)
	}
	var sql string
	var args []any
	if len(links) == 0 {
		sql, args = recordSuccessStatement(c)
	} else {
		sql, args = recordLinksStatement(c, links)
	}
	b.Queue(sql, args...)
	b.Queue(recordRemovalsSQL, c.PageID, c.Removals.Checks)

	br := s.pool.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			rec, err = watch.Recorded{}, cerr
		}
	}()
	if set != nil {
		if _, err := br.Exec(); err != nil {
			return watch.Recorded{}, fmt.Errorf("track the link set: %w", err)
		}
	}
	if len(links) == 0 {
		rec, err = scanRecordedSuccess(br.QueryRow(), c)
	} else {
		rows, qerr := br.Query()
		rec, err = scanRecordedLinks(rows, qerr, c, len(links))
	}
	if err != nil {
		return watch.Recorded{}, err
	}
	rows, err := br.Query()
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("record removals: %w", err)
	}
	if rec.Removed, err = pgx.CollectRows(rows, scanRemoval); err != nil {
		return watch.Recorded{}, fmt.Errorf("record removals: %w", err)
	}
	return rec, nil
}

// TrackLinks compares set with the set the page's previous whole check
// found and marks the links that left the page (absent since this check,
// counted in pages.ok_checks) and clears the marks of links that came back;
// a link present on both checks is not written. The comparison costs one
// statement that reads the stored set by the page's key; when the digest is
// the stored one, or set is older than the stored one (a late redelivery),
// nothing is written. A page's first tracked set is stored without
// comparison. removalChecks is the removal count K (at least 1): the page's
// removal_due_at moves to the check at which the earliest pending absence
// reaches it. TrackLinks reports whether that is this check: then call
// RecordRemovals.
func (s *Store) TrackLinks(ctx context.Context, set watch.LinkSet, removalChecks int) (due bool, err error) {
	return trackLinks(ctx, s.pool, set, removalChecks)
}

func trackLinks(ctx context.Context, q querier, set watch.LinkSet, removalChecks int) (due bool, err error) {
	keys := make([]int64, len(set.Keys))
	for i, k := range set.Keys {
		keys[i] = int64(k)
	}
	err = q.QueryRow(ctx, trackLinksSQL,
		set.PageID, set.Digest, set.FetchedAt, keys, removalChecks, set.Reset, false).Scan(&due)
	if err != nil {
		return false, fmt.Errorf("track the link set of page %d: %w", set.PageID, err)
	}
	return due, nil
}

// RecordRemovals records, once each, the links of the page that have been
// absent for removalChecks (K) successful checks: they go into removals
// with their URL and text and are marked removed in links, where they stay
// known (a link that comes back is not new). The page's removal_due_at
// moves to the next pending absence, so checks before it read no links. A
// repeated call records nothing twice. It returns the removals recorded.
func (s *Store) RecordRemovals(ctx context.Context, pageID int64, removalChecks int) ([]watch.Removal, error) {
	return recordRemovals(ctx, s.pool, pageID, removalChecks)
}

func recordRemovals(ctx context.Context, q querier, pageID int64, removalChecks int) ([]watch.Removal, error) {
	rows, err := q.Query(ctx, recordRemovalsSQL, pageID, removalChecks)
	if err != nil {
		return nil, fmt.Errorf("record removals of page %d: %w", pageID, err)
	}
	removals, err := pgx.CollectRows(rows, scanRemoval)
	if err != nil {
		return nil, fmt.Errorf("record removals of page %d: %w", pageID, err)
	}
	return removals, nil
}

// Removals returns the removals q selects (its PageID, Since and Limit),
// newest first.
func (s *Store) Removals(ctx context.Context, q UpdatesQuery) ([]watch.Removal, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	var pageID *int64
	if q.PageID != 0 {
		pageID = &q.PageID
	}
	var since *time.Time
	if !q.Since.IsZero() {
		since = &q.Since
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, page_id, url, text, removed_at FROM removals
		WHERE ($1::bigint IS NULL OR page_id = $1) AND ($2::timestamptz IS NULL OR removed_at >= $2)
		ORDER BY removed_at DESC, id DESC
		LIMIT $3`, pageID, since, q.Limit)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	removals, err := pgx.CollectRows(rows, scanRemoval)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	return removals, nil
}

func scanRemoval(r pgx.CollectableRow) (watch.Removal, error) {
	var m watch.Removal
	err := r.Scan(&m.ID, &m.PageID, &m.URL, &m.Text, &m.RemovedAt)
	return m, err
}

// QueryRemovals returns the removals of one page (pageID 0: every page),
// removed at or after since (zero: any time), at most limit (0: 100),
// newest first.
func (s *Store) QueryRemovals(ctx context.Context, pageID int64, since time.Time, limit int) ([]watch.Removal, error) {
	return s.Removals(ctx, UpdatesQuery{PageID: pageID, Since: since, Limit: limit})
}

// trackLinksSQL is TrackLinks' statement: $1 page, $2 digest, $3 fetched
// at, $4 keys, $5 removal count, $6 reset.
// trackLinksSQL is TrackLinks' statement: $1 page, $2 digest, $3 fetched
// at, $4 keys, $5 removal count, $6 reset, $7 before: the statement runs
// in the batch of its check ahead of the check's own statement, so the
// check is not yet counted in ok_checks, and a re-baseline is read from
// the page's rebaseline flag, which that statement clears.
const trackLinksSQL = `
		WITH opts AS (
			SELECT $6 OR ($7 AND coalesce((SELECT rebaseline FROM pages WHERE id = $1), false)) AS reset
		), prev AS (
			SELECT keys FROM link_sets
			WHERE page_id = $1 AND digest <> $2 AND fetched_at < $3 AND NOT (SELECT reset FROM opts)
			FOR UPDATE
		), diff AS (
			-- One pass over both sets: a key only in the stored set left
			-- the page, a key only in this check's came back (or is new).
			SELECT array_agg(k) FILTER (WHERE NOT now_here) AS gone,
			       array_agg(k) FILTER (WHERE NOT was_here) AS back
			FROM (
				SELECT coalesce(p.k, c.k) AS k, p.k IS NOT NULL AS was_here, c.k IS NOT NULL AS now_here
				FROM (SELECT unnest(keys) AS k FROM prev) p
				FULL JOIN (SELECT unnest($4::bigint[]) AS k WHERE EXISTS (SELECT 1 FROM prev)) c ON p.k = c.k
			) d
			WHERE NOT (was_here AND now_here)
		), left_page AS (
			-- Arrays, not joins, so that each side is a lookup of the
			-- links' primary key for the few keys that changed.
			UPDATE links SET absent_at = (SELECT ok_checks + CASE WHEN $7 THEN 1 ELSE 0 END FROM pages WHERE id = $1)
			WHERE links.page_id = $1 AND links.link_key = ANY ((SELECT gone FROM diff)::bigint[])
			  AND links.absent_at IS NULL AND links.removed_at IS NULL
			RETURNING links.absent_at
		), came_back AS (
			UPDATE links SET absent_at = NULL, removed_at = NULL
			WHERE links.page_id = $1 AND links.link_key = ANY ((SELECT back FROM diff)::bigint[])
			  AND (links.absent_at IS NOT NULL OR links.removed_at IS NOT NULL)
			RETURNING 1
		), forgotten AS (
			UPDATE links SET absent_at = NULL
			WHERE (SELECT reset FROM opts) AND links.page_id = $1 AND links.absent_at IS NOT NULL AND links.removed_at IS NULL
			RETURNING 1
		), stored AS (
			INSERT INTO link_sets (page_id, digest, keys, fetched_at)
			SELECT $1, $2, $4, $3 WHERE EXISTS (SELECT 1 FROM pages WHERE id = $1)
			ON CONFLICT (page_id) DO UPDATE SET digest = excluded.digest, keys = excluded.keys, fetched_at = excluded.fetched_at
			WHERE link_sets.fetched_at < excluded.fetched_at AND (link_sets.digest <> excluded.digest OR (SELECT reset FROM opts))
			RETURNING 1
		), due AS (
			UPDATE pages SET removal_due_at = CASE WHEN (SELECT reset FROM opts) THEN NULL
				ELSE least(removal_due_at, (SELECT min(absent_at) FROM left_page) + $5 - 1) END
			WHERE id = $1 AND ((SELECT reset FROM opts) OR EXISTS (SELECT 1 FROM left_page))
			RETURNING ` + removalsDue + ` AS due
		)
		SELECT coalesce((SELECT due FROM due), false)`

// recordRemovalsSQL is RecordRemovals' statement: $1 page, $2 removal
// count. It records nothing unless the page's removals are due.
const recordRemovalsSQL = `
		WITH page AS (
			SELECT ok_checks FROM pages WHERE id = $1 AND ` + removalsDue + ` FOR UPDATE
		), gone AS (
			UPDATE links SET removed_at = now() FROM page
			WHERE links.page_id = $1 AND links.absent_at IS NOT NULL AND links.removed_at IS NULL
			  AND links.absent_at <= page.ok_checks - $2 + 1
			RETURNING links.link_key, links.url, links.text
		), recorded AS (
			INSERT INTO removals (page_id, link_key, url, text)
			SELECT $1, link_key, url, text FROM gone
			RETURNING id, page_id, url, text, removed_at
		), next AS (
			UPDATE pages SET removal_due_at = (
				SELECT min(absent_at) + $2 - 1 FROM links
				WHERE page_id = $1 AND absent_at IS NOT NULL AND removed_at IS NULL
				  AND link_key NOT IN (SELECT link_key FROM gone))
			WHERE id = $1 AND EXISTS (SELECT 1 FROM page)
		)
		SELECT id, page_id, url, text, removed_at FROM recorded ORDER BY id`

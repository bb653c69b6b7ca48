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

// LinkSet is the whole link set of one successful, untruncated check of a
// page, for TrackLinks.
type LinkSet struct {
	PageID    int64
	FetchedAt time.Time
	Digest    string   // shortlink.KeySetDigest of Keys
	Keys      []uint64 // every link key of the check
	// Reset replaces the stored set without looking for links that left
	// or came back, and forgets pending absences: after a re-baseline the
	// links the new options leave out were not taken down from the page.
	Reset bool
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
func (s *Store) TrackLinks(ctx context.Context, set LinkSet, removalChecks int) (due bool, err error) {
	keys := make([]int64, len(set.Keys))
	for i, k := range set.Keys {
		keys[i] = int64(k)
	}
	err = s.pool.QueryRow(ctx, `
		WITH prev AS (
			SELECT keys FROM link_sets
			WHERE page_id = $1 AND digest <> $2 AND fetched_at < $3 AND NOT $6
			FOR UPDATE
		), gone AS (
			SELECT k FROM prev, unnest(prev.keys) k EXCEPT SELECT unnest($4::bigint[])
		), back AS (
			SELECT k FROM prev, unnest($4::bigint[]) k EXCEPT SELECT k FROM prev, unnest(prev.keys) k
		), page AS (
			SELECT ok_checks FROM pages WHERE id = $1
		), left_page AS (
			UPDATE links SET absent_at = page.ok_checks FROM page
			WHERE links.page_id = $1 AND links.link_key IN (SELECT k FROM gone)
			  AND links.absent_at IS NULL AND links.removed_at IS NULL
			RETURNING links.absent_at
		), came_back AS (
			UPDATE links SET absent_at = NULL, removed_at = NULL
			WHERE links.page_id = $1 AND (links.link_key IN (SELECT * FROM back)
			                              OR ($6 AND links.absent_at IS NOT NULL AND links.removed_at IS NULL))
			  AND (links.absent_at IS NOT NULL OR links.removed_at IS NOT NULL)
			RETURNING 1
		), stored AS (
			INSERT INTO link_sets (page_id, digest, keys, fetched_at) VALUES ($1, $2, $4, $3)
			ON CONFLICT (page_id) DO UPDATE SET digest = excluded.digest, keys = excluded.keys, fetched_at = excluded.fetched_at
			WHERE link_sets.fetched_at < excluded.fetched_at AND (link_sets.digest <> excluded.digest OR $6)
			RETURNING 1
		), due AS (
			UPDATE pages SET removal_due_at = CASE WHEN $6 THEN NULL
				ELSE least(removal_due_at, (SELECT min(absent_at) FROM left_page) + $5 - 1) END
			WHERE id = $1 AND ($6 OR EXISTS (SELECT 1 FROM left_page))
			RETURNING `+removalsDue+` AS due
		)
		SELECT coalesce((SELECT due FROM due), false)`,
		set.PageID, set.Digest, set.FetchedAt, keys, removalChecks, set.Reset).Scan(&due)
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
	rows, err := s.pool.Query(ctx, `
		WITH page AS (
			SELECT ok_checks FROM pages WHERE id = $1 FOR UPDATE
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
			WHERE id = $1
		)
		SELECT id, page_id, url, text, removed_at FROM recorded ORDER BY id`, pageID, removalChecks)
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

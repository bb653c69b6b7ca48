package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A check follows the links that leave its page inside its own statement
// (recordLinksStatement), so removals cost no extra round trip, statement or
// commit. The page's row holds the pending absences (pages.pending_keys and
// pending_since, sorted by key), and links_live indexes the page's links not
// removed. A check with the whole link set (watch.Removals.Keys) reads
// those index entries against its keys in the buckets of the key space
// whose digest differs from the page's last whole set's (pages.link_buckets):
// a live link the check lacks left the page (pending from this
// check on, unless it already was), a pending link the check has came back
// (dropped from the array: no link row is written), and a key the check has
// that is not live is looked up in links, where it may be a removed link
// that came back. Every successful check counts (pages.ok_checks); the one
// at which a pending absence has lasted K checks marks the link removed and
// records it in removals, once. A page not followed yet (pending_keys NULL)
// or being re-baselined starts from the check's set: its live links the
// check lacks are marked removed without a removal, since they left the
// watched part of the page through its options, not the page.
//
// trackingSQL is the part of the check statement that follows removals:
// columns of the page CTE, CTEs that follow it, the status update's SET
// entries and the final SELECT's columns of the removals recorded.
type trackingSQL struct{ columns, ctes, set, result string }

// tracking returns the check statement's part for removals on (the
// statement then takes $22, the check's keys or NULL without the whole set,
// $23, the removal count K, and $24, the keys' bucket digests) or off: a
// check that does not follow leaves the page not followed, and the
// statement carries nothing else for it.
func tracking(on bool) trackingSQL {
	if !on {
		return trackingSQL{
			set:    `pending_keys = NULL, pending_since = NULL, link_buckets = NULL`,
			result: `NULL::bigint[], NULL::text[], NULL::text[], NULL::timestamptz[]`,
		}
	}
	return trackingSQL{columns: trackingColumns, ctes: trackingCTEs, set: trackingSet, result: trackingResult}
}

// trackingColumns are the page CTE's columns for following. A stale or
// repeated check (not after the page's last) does not follow. Their names
// differ from the pages columns that the status update reads unqualified.
const trackingColumns = `,
				ok_checks + CASE WHEN last_checked_at IS NULL OR last_checked_at < $2 THEN 1 ELSE 0 END AS check_no,
				(last_checked_at IS NULL OR last_checked_at < $2) AS tracks,
				pending_keys IS NULL OR baseline_at IS NULL OR (rebaseline AND $8) AS reset,
				(last_checked_at IS NULL OR last_checked_at < $2) AND $22::bigint[] IS NOT NULL
					AND (pending_keys IS NULL OR baseline_at IS NULL OR (rebaseline AND $8) OR link_buckets IS DISTINCT FROM $24::bigint[]) AS compare,
				pending_keys AS pend_keys, pending_since AS pend_since, link_buckets AS old_buckets`

// trackingCTEs follow the page CTE. scope is the buckets of the key space
// (shortlink.BucketDigests) that the check compares key by key: those whose
// digest differs from the page's last whole set's, or all of them when the
// page starts being followed. A check that differs from the last one in a
// few links reads only those buckets' part of the page's live links: one
// index range scan per bucket (LATERAL with OFFSET 0, which the planner
// cannot flatten into a join that reads the page's whole part of the index
// once and filters it). diff is one pass over that part and the check's
// keys in those buckets (a hash full join): the live links the check lacks
// (gone) and the check's keys that are not live (maybe a removed link back,
// more often a new one).
// held is the page's pending absences after this check: those in buckets
// not compared, and the links gone (with the check count they first went
// missing at). marked writes the three kinds of mark in one update of
// links (one update of the partitioned table in the statement costs less to
// start than three): the removals that are due, the links a reset stops
// following, and removed links that are back. It takes its keys as one
// array, a few lookups of the primary key, and is skipped whole (a one-time
// filter) when there are none.
const trackingCTEs = `
		), scope AS (
			SELECT b, (b - CASE WHEN b >= 16 THEN 32 ELSE 0 END)::bigint * 576460752303423488 AS first
			FROM page, generate_series(0, 31) AS b
			WHERE page.compare AND (page.reset OR cardinality(page.old_buckets) IS DISTINCT FROM 32
				OR page.old_buckets[b + 1] IS DISTINCT FROM ($24::bigint[])[b + 1])
		), diff AS (
			SELECT coalesce(l.k, c.k) AS k, c.k IS NULL AS gone
			FROM (SELECT live.k FROM scope, LATERAL (
			        SELECT links.link_key AS k FROM links
			        WHERE links.page_id = $1 AND links.removed_at IS NULL
			          AND links.link_key BETWEEN scope.first AND scope.first + 576460752303423487 OFFSET 0) live) l
			FULL JOIN (SELECT k FROM unnest($22::bigint[]) AS k WHERE ((k >> 59) & 31)::int IN (SELECT b FROM scope)) c ON l.k = c.k
			WHERE l.k IS NULL OR c.k IS NULL
		), held AS (
			SELECT p.k, p.since FROM page, unnest(page.pend_keys, page.pend_since) AS p(k, since)
			WHERE page.tracks AND NOT page.reset AND ((p.k >> 59) & 31)::int NOT IN (SELECT b FROM scope)
			UNION ALL
			SELECT d.k, coalesce((SELECT p.since FROM unnest(page.pend_keys, page.pend_since) AS p(k, since) WHERE p.k = d.k), page.check_no)
			FROM page, diff d WHERE d.gone AND NOT page.reset
		), marks AS (
			SELECT due, unfollow, maybe_back, coalesce(due, '{}') || coalesce(unfollow, '{}') || coalesce(maybe_back, '{}') AS touched
			FROM (SELECT (SELECT array_agg(held.k) FROM held WHERE held.since <= page.check_no - $23::int + 1) AS due,
			             (SELECT array_agg(d.k) FROM diff d WHERE d.gone AND page.reset) AS unfollow,
			             (SELECT array_agg(d.k) FROM diff d WHERE NOT d.gone) AS maybe_back
			      FROM page) m
		), marked AS (
			UPDATE links SET removed_at = CASE WHEN links.link_key = ANY ((SELECT maybe_back FROM marks)::bigint[]) THEN NULL ELSE now() END
			WHERE (SELECT cardinality(touched) > 0 FROM marks) AND links.page_id = $1
			  AND links.link_key = ANY ((SELECT touched FROM marks)::bigint[])
			  AND (links.link_key = ANY ((SELECT due FROM marks)::bigint[])
			       OR (links.removed_at IS NULL AND links.link_key = ANY ((SELECT unfollow FROM marks)::bigint[]))
			       OR (links.removed_at IS NOT NULL AND links.link_key = ANY ((SELECT maybe_back FROM marks)::bigint[])))
			RETURNING links.link_key, links.url, links.text, links.link_key = ANY ((SELECT due FROM marks)::bigint[]) AS due
		), removal AS (
			INSERT INTO removals (page_id, link_key, url, text)
			SELECT $1, link_key, url, text FROM marked WHERE due
			RETURNING id, url, text, removed_at`

// trackingSet is the status update's SET entries for the pending absences
// and the bucket digests: a stale or repeated check leaves them alone, a
// check with the whole set stores its digests, and a re-baseline without
// the whole set leaves the start to the next check that has it.
const trackingSet = `
				pending_keys  = CASE WHEN NOT page.tracks THEN pending_keys WHEN page.reset AND NOT page.compare THEN NULL
				                     ELSE (SELECT coalesce(array_agg(held.k ORDER BY held.k), '{}') FROM held
				                           WHERE held.since > page.check_no - $23::int + 1) END,
				pending_since = CASE WHEN NOT page.tracks THEN pending_since WHEN page.reset AND NOT page.compare THEN NULL
				                     ELSE (SELECT coalesce(array_agg(held.since ORDER BY held.k), '{}') FROM held
				                           WHERE held.since > page.check_no - $23::int + 1) END,
				link_buckets  = CASE WHEN NOT page.tracks THEN link_buckets WHEN $22::bigint[] IS NOT NULL THEN $24::bigint[]
				                     WHEN page.reset THEN NULL ELSE link_buckets END`

// trackingResult is the final SELECT's columns of the removals recorded.
const trackingResult = `(SELECT array_agg(id ORDER BY id) FROM removal), (SELECT array_agg(url ORDER BY id) FROM removal),
			(SELECT array_agg(text ORDER BY id) FROM removal), (SELECT array_agg(removed_at ORDER BY id) FROM removal)`

// trackedKeys is the check's whole link set as the statement's $22 and the
// digests of its buckets as $24: NULL when the check lacks the set, an empty
// array when the page has no link.
func trackedKeys(r watch.Removals) (keys, buckets []int64) {
	if r.Keys == nil {
		return nil, nil
	}
	sorted := slices.Clone(r.Keys)
	buckets = shortlink.BucketDigests(sorted)
	keys = make([]int64, len(sorted))
	for i, k := range sorted {
		keys[i] = int64(k) // the bits, not the number, are the key
	}
	return keys, buckets
}

// removedColumns are the check statement's columns of the removals it
// recorded, NULL when there were none.
type removedColumns struct {
	ids   []int64
	urls  []string
	texts []string
	at    []time.Time
}

func (r removedColumns) removals(pageID int64) []watch.Removal {
	var out []watch.Removal
	for i, id := range r.ids {
		out = append(out, watch.Removal{ID: id, PageID: pageID, URL: r.urls[i], Text: r.texts[i], RemovedAt: r.at[i]})
	}
	return out
}

// PruneRemovals deletes up to limit removals recorded more than olderThan
// ago, oldest first, and returns how many it deleted.
func (s *Store) PruneRemovals(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM removals WHERE id IN (
			SELECT id FROM removals WHERE removed_at < now() - $1 * interval '1 millisecond'
			ORDER BY removed_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete removals older than %s: %w", olderThan, err)
	}
	return tag.RowsAffected(), nil
}

// Removals returns the removals q selects (its PageID, Since and Limit),
// newest first.
func (s *Store) Removals(ctx context.Context, q UpdatesQuery) ([]watch.Removal, error) {
	pageID, since, limit := q.args()
	rows, err := s.pool.Query(ctx, `
		SELECT id, page_id, url, text, removed_at FROM removals
		WHERE ($1::bigint IS NULL OR page_id = $1) AND ($2::timestamptz IS NULL OR removed_at >= $2)
		ORDER BY removed_at DESC, id DESC
		LIMIT $3`, pageID, since, limit)
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

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// PageLinks returns a page of the links list of page f.PageID, newest
// first, each with its time on the page (watch.DwellSeconds):
//
//   - current: the links of the followed set of the page (migration
//     00012), by first sighting and then key. The set is read from the row
//     of the page and its links from their links partition by primary key
//     (= ANY of the set: a join would read every link the page has had),
//     so a call costs the whole set, at most the link cap of the crawler
//     (5,000 by default), however deep its cursor;
//   - removed: each link whose latest removal stands (not followed again,
//     nor pending or due anew), by the time and id of that removal: the
//     walk of removals_page stops after Limit rows, and each row costs a
//     probe of the primary key of removals (a later removal of the link?)
//     and one of links (its URL, text and first sighting).
//
// It returns watch.ErrPageNotFound for a page that is not watched (or is
// in the trash), and watch.ErrPageNotFollowed for the current links of a
// page checked but not followed.
func (s *Store) PageLinks(ctx context.Context, f watch.LinkFilter) ([]watch.PageLink, error) {
	state := f.State
	if state == "" {
		state = watch.LinksCurrent
	}
	var (
		sql   string
		args  = []any{f.PageID, f.LimitOrDefault()}
		after string
	)
	if !f.After.IsZero() {
		args = append(args, f.After.At, f.After.ID)
	}
	switch state {
	case watch.LinksCurrent:
		if !f.After.IsZero() {
			after = `AND (l.first_seen_at, l.link_key) < ($3::timestamptz, $4::bigint)`
		}
		sql = `WITH page AS (
				SELECT follow_base, follow_added, follow_gone FROM pages WHERE id = $1 AND deleted_at IS NULL
			), followed AS (` + followedSetSQL + `)
			SELECT l.link_key, l.url, l.text, l.code, l.first_seen_at, l.last_seen_at, NULL::timestamptz, now()
			FROM links l
			WHERE l.page_id = $1 AND l.link_key = ANY (ARRAY(SELECT k FROM followed)) ` + after + `
			ORDER BY l.first_seen_at DESC, l.link_key DESC
			LIMIT $2`
	case watch.LinksRemoved:
		if !f.After.IsZero() {
			after = `AND (r.removed_at, r.id) < ($3::timestamptz, $4::bigint)`
		}
		// A link of the followed set is back on the page; a pending or due
		// one came back and left again, and its new removal is not
		// recorded yet: its latest recorded one no longer stands.
		//
		// The latest removal of a link is r.id >= its max, not = nor NOT
		// EXISTS a later one: PostgreSQL guesses an equality keeps 1 row in
		// 200, and so sorts every removal of the page after the cursor
		// rather than walk removals_page and stop after Limit; and its
		// generic plan of NOT EXISTS probed the later removals by page
		// alone (docs/design.md, Time on the front page).
		sql = `WITH page AS (
				SELECT follow_base, follow_added, follow_gone, pending_keys, due_keys FROM pages WHERE id = $1 AND deleted_at IS NULL
			), followed AS (` + followedSetSQL + `
				UNION SELECT unnest(pending_keys) FROM page
				UNION SELECT unnest(due_keys) FROM page)
			SELECT r.id, coalesce(r.url, l.url), coalesce(r.text, l.text), coalesce(l.code, ''), l.first_seen_at, l.last_seen_at, r.removed_at, now()
			FROM removals r LEFT JOIN links l ON l.page_id = r.page_id AND l.link_key = r.link_key
			WHERE r.page_id = $1 AND EXISTS (SELECT 1 FROM page) ` + after + `
				AND r.id >= (SELECT max(n.id) FROM removals n WHERE n.page_id = r.page_id AND n.link_key = r.link_key)
				AND r.link_key NOT IN (SELECT k FROM followed)
				AND (r.url IS NOT NULL OR l.url IS NOT NULL)
			ORDER BY r.removed_at DESC, r.id DESC
			LIMIT $2`
	default:
		return nil, fmt.Errorf("links of page %d: unknown state %q", f.PageID, state)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read the %s links of page %d: %w", state, f.PageID, err)
	}
	links, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.PageLink, error) {
		var (
			l   watch.PageLink
			id  int64
			now time.Time
		)
		if err := r.Scan(&id, &l.URL, &l.Text, &l.Code, &l.FirstSeenAt, &l.LastSeenAt, &l.RemovedAt, &now); err != nil {
			return l, err
		}
		end := now
		if l.RemovedAt != nil {
			end = *l.RemovedAt
			l.Cursor = watch.LinkCursor{At: end, ID: id}
		} else if l.FirstSeenAt != nil {
			l.Cursor = watch.LinkCursor{At: *l.FirstSeenAt, ID: id}
		}
		if l.FirstSeenAt != nil {
			l.DwellSeconds = watch.DwellSeconds(*l.FirstSeenAt, end)
		}
		return l, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the %s links of page %d: %w", state, f.PageID, err)
	}
	if len(links) > 0 {
		return links, nil
	}
	return links, s.whyNoLinks(ctx, f.PageID, state)
}

// followedSetSQL is the followed set of the page CTE, one key k a row:
// follow_base less follow_gone, plus follow_added (migration 00012).
const followedSetSQL = `
				SELECT k FROM page, follow_keys(page.follow_base) AS k WHERE k <> ALL (coalesce(page.follow_gone, '{}'))
				UNION SELECT unnest(follow_added) FROM page`

// whyNoLinks tells an empty list from a page that is not there, or whose
// current links are not known: a page checked successfully (baseline_at)
// whose followed set is not kept.
func (s *Store) whyNoLinks(ctx context.Context, pageID int64, state watch.LinkState) error {
	var unknown bool
	err := s.pool.QueryRow(ctx, `SELECT follow_base IS NULL AND baseline_at IS NOT NULL FROM pages WHERE id = $1 AND deleted_at IS NULL`,
		pageID).Scan(&unknown)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("page %d: %w", pageID, watch.ErrPageNotFound)
	case err != nil:
		return fmt.Errorf("read the %s links of page %d: %w", state, pageID, err)
	case unknown && state == watch.LinksCurrent:
		return fmt.Errorf("page %d: %w", pageID, watch.ErrPageNotFollowed)
	}
	return nil
}

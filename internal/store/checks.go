package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Check is the outcome of one check of a page, as a crawler reported it.
type Check struct {
	PageID       int64
	FetchedAt    time.Time
	Status       int
	Error        string // empty for a successful check
	ETag         string
	LastModified string
	// LinksDigest is the digest of the check's whole link set
	// (shortlink.KeySetDigest); empty keeps the page's digest.
	LinksDigest string
}

// NewLink is a link to record: its 64-bit key (internal/shortlink), URL, text
// and short code.
type NewLink struct {
	Key  uint64
	URL  string
	Text string
	Code string
}

// Recorded says what RecordCheck did.
type Recorded struct {
	// Baseline is true when this check was the page's first successful one:
	// its links were recorded as the page's starting point, not as updates.
	Baseline bool
	// Updates holds the links that were new and went into updates.
	Updates []watch.Update
	// Inserted counts links that were new to the seen-set, baseline included.
	Inserted int
}

// RecordCheck records one check of a page: the candidate links go into links
// (ON CONFLICT DO NOTHING), the ones that were really new go into updates
// unless this is the page's baseline, and the page's status is updated and
// its lease cleared, all in one transaction. A redelivered check changes
// nothing the first delivery did. It returns watch.ErrPageNotFound if the
// page was removed.
//
// links must hold every link of the check that the caller cannot prove is
// already recorded; for a failed check it is ignored. Without links, the
// check is one statement: the common case of a page with nothing new.
func (s *Store) RecordCheck(ctx context.Context, c Check, links []NewLink) (Recorded, error) {
	var (
		rec Recorded
		err error
	)
	switch {
	case c.Error != "":
		err = recordFailure(ctx, s.pool, c)
	case len(links) == 0:
		rec.Baseline, err = recordSuccess(ctx, s.pool, c)
	default:
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			// Locking the page row serialises checks of one page, so two
			// concurrent first checks cannot both believe they are the
			// baseline.
			var hasBaseline bool
			err := tx.QueryRow(ctx, `SELECT baseline_at IS NOT NULL FROM pages WHERE id = $1 FOR UPDATE`, c.PageID).
				Scan(&hasBaseline)
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
			}
			if err != nil {
				return err
			}
			rec.Inserted, rec.Updates, err = insertLinks(ctx, tx, c, links, !hasBaseline)
			if err != nil {
				return err
			}
			rec.Baseline, err = recordSuccess(ctx, tx, c)
			return err
		})
	}
	if err != nil {
		return Recorded{}, fmt.Errorf("record check of page %d: %w", c.PageID, err)
	}
	return rec, nil
}

// querier is what recordSuccess and recordFailure need: a pool for a
// statement of its own, or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func insertLinks(ctx context.Context, tx pgx.Tx, c Check, links []NewLink, baseline bool) (int, []watch.Update, error) {
	keys := make([]int64, len(links))
	urls := make([]string, len(links))
	texts := make([]string, len(links))
	codes := make([]string, len(links))
	for i, l := range links {
		keys[i] = int64(l.Key) // the bits, not the number, are the key
		urls[i], texts[i], codes[i] = l.URL, l.Text, l.Code
	}
	// One statement inserts the links and, for those that were new, the
	// updates: the RETURNING rows of links are exactly the new links.
	rows, err := tx.Query(ctx, `
		WITH fresh AS (
			INSERT INTO links (page_id, link_key, url, text, code)
			SELECT $1, k, u, t, c FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS l(k, u, t, c)
			ON CONFLICT DO NOTHING
			RETURNING link_key, url, text, code, first_seen_at
		), news AS (
			INSERT INTO updates (page_id, link_key, url, text, code, discovered_at)
			SELECT $1, link_key, url, text, code, first_seen_at FROM fresh WHERE NOT $6
			ON CONFLICT DO NOTHING
			RETURNING id, link_key
		)
		SELECT news.id, fresh.url, fresh.text, fresh.code, fresh.first_seen_at
		FROM fresh LEFT JOIN news USING (link_key)`,
		c.PageID, keys, urls, texts, codes, baseline)
	if err != nil {
		return 0, nil, fmt.Errorf("insert %d links: %w", len(links), err)
	}
	defer rows.Close()
	var (
		inserted int
		updates  []watch.Update
	)
	for rows.Next() {
		var (
			id *int64
			u  watch.Update
		)
		if err := rows.Scan(&id, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt); err != nil {
			return 0, nil, fmt.Errorf("insert links: %w", err)
		}
		inserted++
		if id != nil {
			u.ID, u.PageID = *id, c.PageID
			updates = append(updates, u)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("insert %d links: %w", len(links), err)
	}
	return inserted, updates, nil
}

// recordSuccess updates the page's status and reports whether this check
// set the page's baseline. A stale check (fetched before the page's last
// recorded one, as with a late redelivery) only clears the lease: it must not
// roll back newer validators. Every SET expression reads the row as it was
// before this statement, so the statement is consistent on its own.
func recordSuccess(ctx context.Context, q querier, c Check) (baseline bool, err error) {
	err = q.QueryRow(ctx, `
		UPDATE pages SET
			lease_until          = NULL,
			baseline_at          = coalesce(baseline_at, now()),
			last_checked_at      = CASE WHEN `+fresh+` THEN $2 ELSE last_checked_at END,
			last_status          = CASE WHEN `+fresh+` THEN $3 ELSE last_status END,
			last_error           = CASE WHEN `+fresh+` THEN NULL ELSE last_error END,
			consecutive_failures = CASE WHEN `+fresh+` THEN 0 ELSE consecutive_failures END,
			etag                 = CASE WHEN `+fresh+` AND $3 <> 304 THEN nullif($4, '') ELSE etag END,
			last_modified        = CASE WHEN `+fresh+` AND $3 <> 304 THEN nullif($5, '') ELSE last_modified END,
			links_digest         = CASE WHEN `+fresh+` AND $6 <> '' THEN $6 ELSE links_digest END
		WHERE id = $1
		RETURNING baseline_at = now()`, // now() is the transaction's start: equal only if set here
		c.PageID, c.FetchedAt, c.Status, c.ETag, c.LastModified, c.LinksDigest).Scan(&baseline)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("update page status: %w", err)
	}
	return baseline, nil
}

// fresh is true when the check being recorded is not older than the page's
// last recorded one.
const fresh = `(last_checked_at IS NULL OR last_checked_at <= $2)`

func recordFailure(ctx context.Context, q querier, c Check) error {
	var id int64
	err := q.QueryRow(ctx, `
		UPDATE pages SET
			lease_until          = NULL,
			last_checked_at      = greatest(last_checked_at, $2),
			last_status          = CASE WHEN `+fresh+` THEN $3 ELSE last_status END,
			last_error           = CASE WHEN `+fresh+` THEN $4 ELSE last_error END,
			consecutive_failures = consecutive_failures + 1
		WHERE id = $1
		RETURNING id`, c.PageID, c.FetchedAt, c.Status, c.Error).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return fmt.Errorf("record failure: %w", err)
	}
	return nil
}

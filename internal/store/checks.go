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
// its lease cleared, all in one statement, so in one transaction and one
// round trip. A redelivered check changes nothing the first delivery did. It
// returns watch.ErrPageNotFound if the page was removed.
//
// links must hold every link of the check that the caller cannot prove is
// already recorded; for a failed check it is ignored.
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
		rec, err = recordLinks(ctx, s.pool, c, links)
	}
	if err != nil {
		return Recorded{}, fmt.Errorf("record check of page %d: %w", c.PageID, err)
	}
	return rec, nil
}

// querier is what the recording statements need: a pool, or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// successSet is the SET list of a successful check: $1 page id, $2 fetched
// at, $3 status, $4 ETag, $5 Last-Modified, $6 links digest. A stale check
// (fetched before the page's last recorded one, as with a late redelivery)
// only clears the lease: it must not roll back newer validators. Every
// expression reads the row as it was before the statement, so the statement
// is consistent on its own. baseline_at = now() afterwards says this check
// set the baseline: now() is the transaction's start, so it equals only a
// value set here.
const successSet = `
	lease_until          = NULL,
	baseline_at          = coalesce(baseline_at, now()),
	last_checked_at      = CASE WHEN ` + fresh + ` THEN $2 ELSE last_checked_at END,
	last_status          = CASE WHEN ` + fresh + ` THEN $3 ELSE last_status END,
	last_error           = CASE WHEN ` + fresh + ` THEN NULL ELSE last_error END,
	consecutive_failures = CASE WHEN ` + fresh + ` THEN 0 ELSE consecutive_failures END,
	etag                 = CASE WHEN ` + fresh + ` AND $3 <> 304 THEN nullif($4, '') ELSE etag END,
	last_modified        = CASE WHEN ` + fresh + ` AND $3 <> 304 THEN nullif($5, '') ELSE last_modified END,
	links_digest         = CASE WHEN ` + fresh + ` AND $6 <> '' THEN $6 ELSE links_digest END`

// recordLinks records a successful check with candidate links in one
// statement. Locking the page row first (FOR UPDATE in the page CTE, which
// every other part reads) serialises checks of one page, so two concurrent
// first checks cannot both believe they are the baseline: the second waits,
// and then reads the row the first committed. The RETURNING rows of the links
// insert are exactly the new links; those become updates unless this check
// is the baseline. The result has one row per new link, or a single row
// without a link when none was new, and no row when the page is gone.
func recordLinks(ctx context.Context, q querier, c Check, links []NewLink) (Recorded, error) {
	keys := make([]int64, len(links))
	urls := make([]string, len(links))
	texts := make([]string, len(links))
	codes := make([]string, len(links))
	for i, l := range links {
		keys[i] = int64(l.Key) // the bits, not the number, are the key
		urls[i], texts[i], codes[i] = l.URL, l.Text, l.Code
	}
	rows, err := q.Query(ctx, `
		WITH page AS (
			SELECT id, baseline_at IS NULL AS is_first FROM pages WHERE id = $1 FOR UPDATE
		), fresh AS (
			INSERT INTO links (page_id, link_key, url, text, code)
			SELECT page.id, k, u, t, c
			FROM page, unnest($7::bigint[], $8::text[], $9::text[], $10::text[]) AS l(k, u, t, c)
			ON CONFLICT DO NOTHING
			RETURNING link_key, url, text, code, first_seen_at
		), news AS (
			INSERT INTO updates (page_id, link_key, url, text, code, discovered_at)
			SELECT page.id, link_key, url, text, code, first_seen_at FROM page, fresh WHERE NOT page.is_first
			ON CONFLICT DO NOTHING
			RETURNING id, link_key
		), status AS (
			UPDATE pages SET `+successSet+`
			FROM page WHERE pages.id = page.id
			RETURNING baseline_at = now() AS baseline
		)
		SELECT status.baseline, fresh.link_key IS NOT NULL, news.id,
			coalesce(fresh.url, ''), coalesce(fresh.text, ''), coalesce(fresh.code, ''), fresh.first_seen_at
		FROM status LEFT JOIN (fresh LEFT JOIN news USING (link_key)) ON true`,
		c.PageID, c.FetchedAt, c.Status, c.ETag, c.LastModified, c.LinksDigest, keys, urls, texts, codes)
	if err != nil {
		return Recorded{}, fmt.Errorf("insert %d links: %w", len(links), err)
	}
	defer rows.Close()
	var (
		rec   Recorded
		found bool
	)
	for rows.Next() {
		var (
			inserted bool
			id       *int64
			at       *time.Time
			u        watch.Update
		)
		if err := rows.Scan(&rec.Baseline, &inserted, &id, &u.URL, &u.Text, &u.Code, &at); err != nil {
			return Recorded{}, fmt.Errorf("insert %d links: %w", len(links), err)
		}
		found = true
		if !inserted {
			continue
		}
		rec.Inserted++
		if id != nil {
			u.ID, u.PageID, u.DiscoveredAt = *id, c.PageID, *at
			rec.Updates = append(rec.Updates, u)
		}
	}
	if err := rows.Err(); err != nil {
		return Recorded{}, fmt.Errorf("insert %d links: %w", len(links), err)
	}
	if !found {
		return Recorded{}, fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	return rec, nil
}

// recordSuccess updates the page's status after a check without candidate
// links and reports whether this check set the page's baseline.
func recordSuccess(ctx context.Context, q querier, c Check) (baseline bool, err error) {
	err = q.QueryRow(ctx, `UPDATE pages SET `+successSet+` WHERE id = $1 RETURNING baseline_at = now()`,
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

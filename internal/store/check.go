package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// budget returns a cap for SQL, where a huge number stands for none.
func budget(n int) int32 {
	if n <= 0 {
		return math.MaxInt32
	}
	return int32(min(n, math.MaxInt32))
}

// RecordCheck records one check of a page: the candidate links go into links
// (ON CONFLICT DO NOTHING), the ones that were really new go into updates
// unless this is the page's baseline, and the page's status is updated and
// its lease cleared, all in one statement. The same statement judges the
// page's watch health (health.go) and returns it with whether it changed
// (watch.Recorded.Health), brings the stored headlines of known links up
// to date (rewrites), and records the revisions and health turns as
// events. A check with links or a snapshot commits in a transaction with
// its snapshot's index row (recordWhole); a failure, or a check with
// nothing to compare, is its single statement. A redelivered check changes
// nothing the first delivery did. It returns watch.ErrPageNotFound if the
// page was removed.
//
// links must hold every link of the check that the caller cannot prove is
// already recorded; for a failed check it is ignored.
func (s *Store) RecordCheck(ctx context.Context, c watch.Check, links []watch.NewLink) (watch.Recorded, error) {
	return s.RecordCheckRetitling(ctx, c, links, nil)
}

// RecordCheckRetitling is RecordCheck calling retitling, unless nil, with
// the headlines the check replaced before its transaction commits.
func (s *Store) RecordCheckRetitling(ctx context.Context, c watch.Check, links []watch.NewLink, retitling watch.Retitling) (watch.Recorded, error) {
	var (
		rec watch.Recorded
		err error
	)
	switch {
	case c.Error != "":
		rec, err = recordFailure(ctx, s.pool, c)
	case c.Snapshot == nil && len(links) == 0 && c.Removals.Keys == nil:
		// Nothing to insert and no set to compare: an unchanged page, a 304,
		// or removals off. Absences age by the page's check count alone, so
		// such a check writes only the page's row, and replaces no headline.
		rec, err = recordSuccess(ctx, s.pool, c)
	default:
		rec, err = s.recordWhole(ctx, c, links, retitling)
	}
	if err == nil && c.RenderHint != nil {
		err = s.setRenderHint(ctx, c)
	}
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("record check of page %d: %w", c.PageID, interpretError(err))
	}
	return rec, nil
}

// setRenderHint records what the check c says of rendering its page, when
// c is the page's last recorded check (a stale redelivery changes nothing)
// and the hint changes: most checks write nothing here. It is a hint for
// people, not a fact of the watch, so it may follow the check's own
// statement instead of sharing it.
func (s *Store) setRenderHint(ctx context.Context, c watch.Check) error {
	_, err := s.pool.Exec(ctx, `UPDATE pages SET render_hint = $2
		WHERE id = $1 AND render_hint IS DISTINCT FROM $2 AND last_checked_at = $3`, c.PageID, *c.RenderHint, c.FetchedAt)
	return err
}

// querier is what the recording statements need: a pool, or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// successSet is the SET list of a successful check: $1 page id, $2 fetched
// at, $3 status, $4 ETag, $5 Last-Modified, $6 links digest, $7 links the
// crawler left out, $8 full link set, $9 refresh period in milliseconds, and
// the parameters named by title, the page's <title> (empty keeps the last),
// and body, the digest of the body the check read (see body_digest). A
// stale check (fetched before the page's last recorded one, as with a late
// redelivery) only clears the lease: it must not roll back newer validators.
// Every expression reads the row as it was before the statement, so the
// statement is consistent on its own. baseline_at = now() afterwards says
// this check set the baseline: now() is the transaction's start, so it
// equals only a value set here (the links statement reads it off the locked row
// instead: concurrent first checks, each waiting for the lock, can start in
// the same microsecond). When a link refresh is due and the check
// lacks the whole link set, the validators and the digest are cleared so the
// next check fetches and sends the whole page. cut is an SQL condition true
// when the check's caps cut links: then the digest is cleared too, since a
// digest promises that every link of its set is recorded, and the crawler
// would otherwise report the same page as unchanged and the cut links would
// never be recorded. The body digest follows the links digest, whose promise
// it extends to the body the links were read from: set with it, cleared
// with it, and moved to the body an unchanged check read while the page's
// links digest stands (that body's links are the recorded set, too).
func successSet(cut, title, body string) string {
	return `
	title                = CASE WHEN ` + fresh + ` AND ` + title + ` <> '' THEN ` + title + ` ELSE title END,
	lease_until          = NULL,
	baseline_at          = coalesce(baseline_at, now()),
	rebaseline           = rebaseline AND NOT ($8 AND ` + newer + `),
	ok_checks            = ok_checks + CASE WHEN last_checked_at IS NULL OR last_checked_at < $2 THEN 1 ELSE 0 END,
	last_checked_at      = CASE WHEN ` + fresh + ` THEN $2 ELSE last_checked_at END,
	last_status          = CASE WHEN ` + fresh + ` THEN $3 ELSE last_status END,
	last_error           = CASE WHEN ` + fresh + ` THEN NULL ELSE last_error END,
	consecutive_failures = CASE WHEN ` + fresh + ` THEN 0 ELSE consecutive_failures END,
	last_truncated       = CASE WHEN ` + fresh + ` THEN $7 ELSE last_truncated END,
	etag                 = CASE WHEN ` + fresh + ` AND ` + askWhole + ` THEN NULL
	                            WHEN ` + fresh + ` AND $3 <> 304 THEN nullif($4, '') ELSE etag END,
	last_modified        = CASE WHEN ` + fresh + ` AND ` + askWhole + ` THEN NULL
	                            WHEN ` + fresh + ` AND $3 <> 304 THEN nullif($5, '') ELSE last_modified END,
	links_digest         = CASE WHEN ` + fresh + ` AND (` + askWhole + ` OR ` + cut + `) THEN NULL
	                            WHEN ` + fresh + ` AND $6 <> '' THEN $6 ELSE links_digest END,
	body_digest          = CASE WHEN ` + fresh + ` AND (` + askWhole + ` OR ` + cut + `) THEN NULL
	                            WHEN ` + fresh + ` AND ` + body + ` <> '' AND ($6 <> '' OR links_digest IS NOT NULL) THEN ` + body + `
	                            ELSE body_digest END`
}

// refreshDue is true when the page's links' last-seen times are older than
// the refresh period $9 (zero: never).
const refreshDue = `($9::bigint > 0 AND (links_seen_at IS NULL OR links_seen_at < now() - $9::bigint * interval '1 millisecond'))`

// askWhole is true when a refresh is due but this check cannot do it.
const askWhole = `(NOT $8 AND ` + refreshDue + `)`

// today is the page's count of new links recorded on the current UTC day.
const today = `CASE WHEN new_links_day = (now() AT TIME ZONE 'UTC')::date THEN new_links_today ELSE 0 END`

// sendFollowing records a whole check with the link set keys, writing the
// following state computed from f: with the links statement, or, without
// a candidate link, with recordSuccess' status update, as a check with
// removals off would be.
func sendFollowing(ctx context.Context, q querier, c watch.Check, links []watch.NewLink, f watch.Followed, keys watch.Keys) (watch.Recorded, error) {
	w := nextFollow(f, keys, c.Removals.Checks)
	var (
		rec watch.Recorded
		err error
	)
	if len(links) == 0 {
		set, args := followSet(newer, stateMoved(11), f, w, 11)
		sql, all := recordSuccessStatement(c, set, args)
		rec, err = scanRecordedSuccess(q.QueryRow(ctx, sql, all...), c)
	} else {
		t, args := writingFollow(f, w, 22)
		rec, err = sendRecordLinks(ctx, q, c, links, t, args)
	}
	rec.Due = len(w.due)
	return rec, err
}

// sendRecordLinks sends the links statement of a successful check with
// candidate links (recordLinksStatement), with the following part t and
// its parameters (from $22), and reads its result. Locking the page row
// first (FOR UPDATE in the page CTE, which every other part reads)
// serialises checks of one page, so two concurrent first checks cannot
// both believe they are the baseline: the second waits, and then reads the
// row the first committed. When the page's budget (Caps; unlimited for the
// baseline) is below the number of candidates, the candidates not yet in
// links are numbered in page order and only the first ones within the
// budget are inserted; the rest are counted as cut. Within the budget, the
// usual case, no candidate costs an extra lookup. The lookup names the
// page by $1, not by page.id: PostgreSQL prunes links' partitions by a
// statement parameter when it starts the generic plan, where a column of
// another CTE left it setting up the scans of all 32 partitions at every
// check (a tenth of the database's CPU with nothing looked up). The
// RETURNING rows of the links insert are exactly the new links; those
// become updates unless this check is the baseline. The result has one
// row per new link, or a single row without a link when none was new, and
// no row when the page is gone.
//
// With removals on, a check with the page's whole link set is sent with
// the following state computed from the one its job carried (follow.go);
// should the page's state have moved since, that statement fails without a
// trace, and recordWhole computes the check again from the page's row,
// under its lock.
func sendRecordLinks(ctx context.Context, q querier, c watch.Check, links []watch.NewLink, t trackingSQL, args []any) (watch.Recorded, error) {
	sql, all := recordLinksStatement(c, links, t, args)
	rows, err := q.Query(ctx, sql, all...)
	return scanRecordedLinks(rows, err, c, len(links))
}

// knownArticle is true when a new link (news.url) already leads to an
// article that stands (watch.ArticleStatus Lasting): the update shows it
// from the start and needs no work, so a story on many portals costs the
// extractor one fetch and the others nothing. An error or a cap is tried
// again.
var knownArticle = `EXISTS (SELECT 1 FROM article_links l JOIN articles a ON a.id = l.article_id
	WHERE l.url = news.url AND a.status IN ('` + string(watch.ArticleOK) + `', '` + string(watch.ArticleNotArticle) + `', '` +
	string(watch.ArticlePaywall) + `'))`

// recordLinksStatement returns the links statement and its arguments,
// with the following part t and its parameters.
func recordLinksStatement(c watch.Check, links []watch.NewLink, track trackingSQL, trackArgs []any) (string, []any) {
	keys := make([]int64, len(links))
	urls := make([]string, len(links))
	texts := make([]string, len(links))
	codes := make([]string, len(links))
	summaries := make([]string, len(links))
	// A link's place travels as three more arrays; position 0 and an empty
	// landmark (not known) become NULL in the insert.
	positions := make([]int32, len(links))
	headings := make([]int16, len(links))
	landmarks := make([]string, len(links))
	for i, l := range links {
		keys[i] = int64(l.Key) // the bits, not the number, are the key
		urls[i], texts[i], codes[i], summaries[i] = l.URL, l.Text, l.Code, l.Summary
		positions[i], headings[i], landmarks[i] = int32(l.Place.Position), int16(l.Place.Heading), string(l.Place.Landmark)
	}
	burstMin, burstShare := burstSQL(c.Burst)
	args := []any{
		c.PageID, c.FetchedAt, c.Status, c.ETag, c.LastModified, c.LinksDigest, c.Truncated, c.FullSet,
		c.RefreshEvery.Milliseconds(), keys, urls, texts, codes, budget(c.Caps.PerCheck), budget(c.Caps.PerDay), len(links),
		summaries, burstMin, burstShare, c.Links, c.Title}
	// The body digest, the articles switch and the places go last, after
	// the following part's parameters, whose numbers are fixed.
	all := append(args, trackArgs...)
	kept, missed := healthArgs(c)
	all = append(all, c.BodyDigest, c.Articles, kept, missed, positions, headings, landmarks,
		int32(c.Revisions.PerCheck), int32(c.Revisions.PerLink))
	n := len(all)
	body, articles := param(n-8), param(n-7)+"::boolean"
	keptSQL, missedSQL := param(n-6)+"::int", param(n-5)+"::text"
	places := param(n-4) + "::int[], " + param(n-3) + "::smallint[], " + param(n-2) + "::text[]"
	perCheck, perLink := param(n-1)+"::int", param(n)+"::int"
	return `
		WITH page AS (
			SELECT id, baseline_at IS NULL AS is_first, baseline_at IS NULL OR (rebaseline AND $8) AS silent,
				burst_detection, articles, texts_known AS texts_were_known, ` + fresh + ` AS check_fresh, ` + healthColumns + `,
				CASE WHEN baseline_at IS NULL OR (rebaseline AND $8) THEN ` + fmt.Sprint(math.MaxInt32) + `
				     ELSE greatest(0, least($14, $15 - ` + today + `)) END AS budget` + track.columns + `
			FROM pages WHERE id = $1 FOR UPDATE
		), health AS (` + judge("page p", keptSQL, missedSQL) + `
		), candidate AS (
			SELECT l.k, l.u, l.t, l.c, l.s, l.p, l.h, l.m, row_number() OVER (ORDER BY l.n) AS n
			FROM page, unnest($10::bigint[], $11::text[], $12::text[], $13::text[], $17::text[], ` + places + `)
				WITH ORDINALITY AS l(k, u, t, c, s, p, h, m, n)
			WHERE page.budget >= $16 OR NOT EXISTS (SELECT 1 FROM links WHERE links.page_id = $1 AND links.link_key = l.k)
		), fresh AS (
			INSERT INTO links (page_id, link_key, url, text, code)
			SELECT page.id, k, u, t, c FROM page, candidate WHERE candidate.n <= page.budget
			ON CONFLICT DO NOTHING
			RETURNING link_key, url, text, code, first_seen_at
		), flood AS (
			SELECT page.burst_detection AND NOT page.silent AND count(*) >= $18 AND count(*) > $19::float8 * $20 AS burst
			FROM page, fresh GROUP BY page.burst_detection, page.silent
		), news AS (
			INSERT INTO updates (page_id, link_key, url, text, code, discovered_at, summary, burst,
				position, heading, landmark)
			SELECT page.id, fresh.link_key, fresh.url, fresh.text, fresh.code, fresh.first_seen_at, candidate.s, flood.burst,
				nullif(candidate.p, 0), CASE WHEN candidate.m <> '' THEN candidate.h END, nullif(candidate.m, '')
			FROM page, flood, fresh JOIN candidate ON candidate.k = fresh.link_key WHERE NOT page.silent
			ON CONFLICT DO NOTHING
			RETURNING id, link_key, summary, burst, url, discovered_at
		), work AS (
			INSERT INTO article_work (url, page_id, discovered_at)
			SELECT news.url, page.id, news.discovered_at FROM page, news
			WHERE page.articles AND ` + articles + ` AND NOT ` + knownArticle + `
			ON CONFLICT (url) DO NOTHING
		), ` + rewrites(perCheck, perLink) + `, status AS (
			UPDATE pages SET ` + successSet(`(SELECT count(*) > 0 FROM candidate WHERE n > page.budget)`, "$21", body) + `,
				last_cut        = CASE WHEN ` + fresh + ` THEN (SELECT count(*) FROM candidate WHERE n > page.budget) ELSE last_cut END,
				new_links_today = CASE WHEN page.silent THEN new_links_today
				                       ELSE ` + today + ` + (SELECT count(*) FROM fresh) END,
				new_links_day   = CASE WHEN page.silent THEN new_links_day ELSE (now() AT TIME ZONE 'UTC')::date END,
				texts_known     = texts_known OR (` + fresh + ` AND $16 = $20),
				` + track.set + `,` + healthSet("health", keptSQL) + `
			FROM page, health WHERE pages.id = page.id
			RETURNING page.is_first AS baseline, ` + fresh + ` AND ` + refreshDue + ` AS refresh,
				(SELECT count(*) FROM candidate WHERE n > page.budget) AS cut, page.silent AND NOT page.is_first AS rebaseline,
				NOT page.check_fresh AS stale, ` + healthReturning("health") + `
		), ` + healthEvent("status", afterNews) + `
		SELECT status.baseline, status.refresh, status.cut, status.rebaseline, status.stale, ` + healthSelected("status") + `,
			(SELECT count(*) FROM revised), (SELECT array_agg(link_key) FROM retitled), (SELECT array_agg(old_text) FROM retitled),
			fresh.link_key IS NOT NULL, news.id,
			coalesce(fresh.url, ''), coalesce(fresh.text, ''), coalesce(fresh.code, ''), fresh.first_seen_at,
			coalesce(news.summary, ''), coalesce(news.burst, false)
		FROM status LEFT JOIN (fresh LEFT JOIN news USING (link_key)) ON true`, all
}

// scanRecordedLinks reads the result of the links statement, or returns
// err, the error of sending it.
func scanRecordedLinks(rows pgx.Rows, err error, c watch.Check, n int) (watch.Recorded, error) {
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("insert %d links: %w", n, err)
	}
	defer rows.Close()
	var (
		rec      watch.Recorded
		found    bool
		oldKeys  []int64
		oldTexts []string
	)
	for rows.Next() {
		var (
			inserted  bool
			id        *int64
			at        *time.Time
			cut       int64
			revisions int64
			u         watch.Update
			health    healthScan
		)
		dest := append(append([]any{&rec.Baseline, &rec.RefreshDue, &cut, &rec.Rebaseline, &rec.Stale}, health.dest()...),
			&revisions, &oldKeys, &oldTexts, &inserted, &id, &u.URL, &u.Text, &u.Code, &at, &u.Summary, &u.Burst)
		if err := rows.Scan(dest...); err != nil {
			return watch.Recorded{}, fmt.Errorf("insert %d links: %w", n, err)
		}
		rec.Cut, rec.Revisions = int(cut), int(revisions)
		health.into(&rec)
		found = true
		if !inserted {
			continue
		}
		rec.Inserted++
		if id != nil {
			u.ID, u.PageID, u.DiscoveredAt = *id, c.PageID, *at
			rec.Updates = append(rec.Updates, u)
			rec.Burst = rec.Burst || u.Burst
		}
	}
	if err := rows.Err(); err != nil {
		return watch.Recorded{}, fmt.Errorf("insert %d links: %w", n, err)
	}
	if !found {
		return watch.Recorded{}, fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	for i, k := range oldKeys {
		rec.Retitled = append(rec.Retitled, watch.Retitled{Key: uint64(k), OldText: oldTexts[i]})
	}
	return rec, nil
}

// rewrites is the part of the links statement that brings the stored
// headlines of the check's known links up to date ($10 keys, $12 texts of
// the check's candidates), as CTEs: retitled, the known links whose text
// differs, with the text they had (the links row as the statement found
// it); retext, their update; revised, the revisions recorded as
// link.rewritten events. A stale check (older than the page's last) changes
// no text. A revision needs a page whose texts are known (texts_known,
// migration 00022) and a check that neither sets a baseline nor rewrites
// more than perCheck headlines (a redesign), and a link with fewer than
// perLink revisions; other rewrites only update the text. The links of the
// check that are new are not in retitled: the statement reads links as
// they were before its own insert. A link a feed or sitemap found first
// (links.source not homepage) holds that source's item title: the
// homepage's first sighting of it replaces the text and makes the link the
// homepage's, without a revision, since no headline was rewritten.
func rewrites(perCheck, perLink string) string {
	return `retitled AS (
			SELECT l.link_key, l.url, l.text AS old_text, g.t AS new_text, l.source = '` + watch.SourceHomepage + `' AS was_homepage
			FROM page CROSS JOIN unnest($10::bigint[], $12::text[]) AS g(k, t)
				JOIN links l ON l.page_id = $1 AND l.link_key = g.k
			WHERE page.check_fresh AND (l.text <> g.t OR l.source <> '` + watch.SourceHomepage + `')
		), retext AS (
			UPDATE links SET text = retitled.new_text, source = '` + watch.SourceHomepage + `' FROM retitled
			WHERE links.page_id = $1 AND links.link_key = retitled.link_key
		), revised AS (
			INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text)
			SELECT $1, '` + string(watch.LinkRewritten) + `', $2, r.link_key, r.url, r.old_text, r.new_text
			FROM page, retitled r
			WHERE page.texts_were_known AND NOT page.silent AND r.was_homepage AND r.old_text <> r.new_text
				AND (SELECT count(*) FROM retitled WHERE was_homepage) <= ` + perCheck + `
				AND ` + afterNews + `
				AND (SELECT count(*) FROM events e WHERE e.page_id = $1 AND e.link_key = r.link_key
				     AND e.kind = '` + string(watch.LinkRewritten) + `') < ` + perLink + `
			RETURNING 1
		)`
}

// afterNews is a condition, always true, that reads the news CTE of
// the links statement whole, as an initplan run before its CTE yields a
// row: the check's updates then draw their ids before its events do,
// whatever plan joins them. Ids order a subscription's stream, and a
// check's updates split by an event would go out as two messages.
const afterNews = `(SELECT count(*) FROM news) >= 0`

// healthEvent is a CTE that records the event of a check that moved its
// page between healthy and degraded (page.degraded, page.recovered), read
// off the relation r that returned healthReturning's columns, when after
// (an SQL condition) holds; $1 is the page, $2 when the check fetched it.
func healthEvent(r, after string) string {
	return `health_event AS (
			INSERT INTO events (page_id, kind, at, reason, detail)
			SELECT $1, CASE WHEN ` + r + `.h_reason IS NULL THEN '` + string(watch.PageRecovered) + `' ELSE '` + string(watch.PageDegraded) + `' END,
				$2, ` + r + `.h_reason, CASE WHEN ` + r + `.h_reason IS NOT NULL THEN nullif(` + r + `.h_detail, '') END
			FROM ` + r + ` WHERE (` + r + `.h_was IS NULL) <> (` + r + `.h_reason IS NULL) AND ` + after + `
		)`
}

// recordSuccess updates the page's status after a check without candidate
// links or a link set to compare, and reports whether this check set the
// page's baseline.
func recordSuccess(ctx context.Context, q querier, c watch.Check) (watch.Recorded, error) {
	sql, args := recordSuccessStatement(c, aging(`($11 = 0 OR (rebaseline AND $8 AND `+newer+`))`,
		`($11 > 0 AND follow_base IS NOT NULL AND `+newer+`)`, `$11`, `(ok_checks + 1)`, ""), []any{max(c.Removals.Checks, 0)})
	return scanRecordedSuccess(q.QueryRow(ctx, sql, args...), c)
}

// recordSuccessStatement returns the status update of a successful check
// without candidate links and its arguments, with the SET entries follow
// that follow removals and their parameters (from $11). recordSuccess
// passes the removal count K as $11 (0 with removals off): it ages the
// pending absences, whose checks ok_checks counts, and stops following the
// page when removals are off or it is re-baselined. A whole check without
// candidates writes the state computed for it (sendFollowing), as one with
// candidates does in the links statement.
func recordSuccessStatement(c watch.Check, follow string, followArgs []any) (string, []any) {
	kept, missed := healthArgs(c)
	args := append(append([]any{c.PageID, c.FetchedAt, c.Status, c.ETag, c.LastModified, c.LinksDigest, c.Truncated, c.FullSet,
		c.RefreshEvery.Milliseconds(), c.Title}, followArgs...), c.BodyDigest, kept, missed)
	n := len(args)
	keptSQL := param(n-1) + "::int"
	return `
		WITH status AS (
			UPDATE pages SET ` + successSet("false", "$10", param(n-2)) + `,
				last_cut = CASE WHEN ` + fresh + ` THEN 0 ELSE last_cut END,` + follow + `,` + healthSet("health", keptSQL) + `
			FROM (` + judge(lockedHealth, keptSQL, param(n)+"::text") + `) health
			WHERE id = $1
			RETURNING baseline_at = now() AS baseline, ` + fresh + ` AND ` + refreshDue + ` AS refresh, ` + healthReturning("health") + `
		), ` + healthEvent("status", "true") + `
		SELECT status.baseline, status.refresh, ` + healthSelected("status") + ` FROM status`, args
}

// lockedHealth is the page row ($1) with healthColumns, locked: the
// statement that updates it reads its state as the lock found it.
const lockedHealth = `(SELECT ` + healthColumns + ` FROM pages WHERE id = $1 FOR UPDATE) p`

// scanRecordedSuccess reads the result of recordSuccess' statement.
func scanRecordedSuccess(row pgx.Row, c watch.Check) (watch.Recorded, error) {
	var (
		rec    watch.Recorded
		health healthScan
	)
	err := row.Scan(append([]any{&rec.Baseline, &rec.RefreshDue}, health.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Recorded{}, fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("update page status: %w", err)
	}
	health.into(&rec)
	return rec, nil
}

// fresh is true when the check being recorded is not older than the page's
// last recorded one.
const fresh = `(last_checked_at IS NULL OR last_checked_at <= $2)`

// recordFailure records a failed check. A block (watch.BlockOf: 401, 403,
// 429, a challenge page) degrades the page, and forgets its validators and
// digests: the check after it then reads the whole page and judges its
// health afresh, where a 304 or an unchanged set would keep the block
// standing on a page that answers again. Any other failure leaves the
// health as it is: a timeout or a 500 says nothing of what the watch
// sees, and shows as the error of the page.
func recordFailure(ctx context.Context, q querier, c watch.Check) (watch.Recorded, error) {
	var (
		rec    watch.Recorded
		health healthScan
	)
	reason, detail := watch.BlockOf(c.Status, c.Challenge)
	const block = `(health.health_newer AND $5 <> '')`
	err := q.QueryRow(ctx, `
		WITH status AS (
			UPDATE pages SET
				lease_until          = NULL,
				last_checked_at      = greatest(last_checked_at, $2),
				last_status          = CASE WHEN `+fresh+` THEN $3 ELSE last_status END,
				last_error           = CASE WHEN `+fresh+` THEN $4 ELSE last_error END,
				consecutive_failures = consecutive_failures + 1,
				degraded             = CASE WHEN `+block+` THEN $5 ELSE degraded END,
				degraded_detail      = CASE WHEN `+block+` THEN $6 ELSE degraded_detail END,
				degraded_since       = CASE WHEN `+block+` THEN coalesce(degraded_since, $2) ELSE degraded_since END,
				etag                 = CASE WHEN `+block+` THEN NULL ELSE etag END,
				last_modified        = CASE WHEN `+block+` THEN NULL ELSE last_modified END,
				links_digest         = CASE WHEN `+block+` THEN NULL ELSE links_digest END,
				body_digest          = CASE WHEN `+block+` THEN NULL ELSE body_digest END
			FROM (SELECT `+healthColumns+` FROM pages WHERE id = $1 FOR UPDATE) health
			WHERE id = $1
			RETURNING `+healthReturning("health")+`
		), `+healthEvent("status", "true")+`
		SELECT `+healthSelected("status")+` FROM status`, c.PageID, c.FetchedAt, c.Status, c.Error, string(reason), detail).Scan(health.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Recorded{}, fmt.Errorf("page %d: %w", c.PageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("record failure: %w", err)
	}
	health.into(&rec)
	return rec, nil
}

// RefreshLinks marks every link of keys, the whole link set of a check of the
// page, as seen now, and records the refresh on the page along with the set's
// digest (empty keeps the page's). It costs one statement over the page's
// links, which the processor spends once per Check.RefreshEvery per page
// rather than on every check. A link whose last-seen time is older than its
// page's last refresh was absent from the page then; PruneLinks forgets such
// links once they are older than the retention period.
func (s *Store) RefreshLinks(ctx context.Context, pageID int64, keys []uint64, digest string) error {
	ks := make([]int64, len(keys))
	for i, k := range keys {
		ks[i] = int64(k)
	}
	_, err := s.pool.Exec(ctx, `
		WITH touched AS (
			UPDATE links SET last_seen_at = now()
			WHERE page_id = $1 AND link_key = ANY($2::bigint[]) AND last_seen_at < now()
		)
		UPDATE pages SET links_seen_at = now(), links_digest = coalesce(nullif($3, ''), links_digest)
		WHERE id = $1`, pageID, ks, digest)
	if err != nil {
		return fmt.Errorf("refresh last-seen times of %d links of page %d: %w", len(keys), pageID, interpretError(err))
	}
	return nil
}

// PruneLinks deletes up to limit links that were absent from their page at
// its last link refresh (RefreshLinks) and have not been seen for olderThan,
// oldest first, and returns how many it deleted. Such a link, should it come
// back, is reported as new again. Links of a page never refreshed are kept.
// A pruned link's removals, which name it by key, get a copy of its URL and
// text in the same statement (migration 00014).
func (s *Store) PruneLinks(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM links USING (
				SELECT l.page_id, l.link_key FROM links l JOIN pages p ON p.id = l.page_id
				WHERE l.last_seen_at < now() - $1 * interval '1 millisecond' AND l.last_seen_at < p.links_seen_at
				ORDER BY l.last_seen_at LIMIT $2 FOR UPDATE OF l SKIP LOCKED) old
			WHERE links.page_id = old.page_id AND links.link_key = old.link_key
			RETURNING links.page_id, links.link_key, links.url, links.text
		), named AS (
			UPDATE removals r SET url = gone.url, text = gone.text
			FROM gone WHERE r.page_id = gone.page_id AND r.link_key = gone.link_key AND r.url IS NULL
		)
		SELECT count(*) FROM gone`, olderThan.Milliseconds(), limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("delete links unseen for %s: %w", olderThan, err)
	}
	return n, nil
}

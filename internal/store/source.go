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

// ClaimDueSources claims, in one transaction, up to p.Limit feeds and news
// sitemaps that are due (enabled, of a kind their page chooses, their
// page watched and not paused, no check in flight) and, when discover is
// positive, up to discover pages whose sources are due to be discovered
// again (watch.SourceRediscovery); hands their jobs to dispatch, and
// commits if dispatch succeeds. A source's schedule is anchored like a
// page's (next = previous + its interval, its own or else its page's) and
// leased for p.Lease;
// a discovery is leased by moving the page's sources_discovered_at so that
// it is due again p.Lease later unless its task comes back first. The
// sources dispatch postpones (watch.Postponed.Source) are due again at
// their Until, unleased. Rows are locked with FOR UPDATE SKIP LOCKED, so
// several schedulers never claim the same one.
func (s *Store) ClaimDueSources(ctx context.Context, p watch.ClaimParams, discover int,
	dispatch func(context.Context, []watch.Job) ([]watch.Postponed, error),
) (watch.Claimed, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due sources: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	var jobs []watch.Job
	if discover > 0 {
		rows, err := tx.Query(ctx, `
			WITH due AS (
				SELECT id FROM pages
				WHERE enabled AND deleted_at IS NULL AND cardinality(sources) > 1
					AND (sources_discovered_at IS NULL OR sources_discovered_at <= now() - $2 * interval '1 millisecond')
				ORDER BY sources_discovered_at NULLS FIRST
				LIMIT $1
				FOR UPDATE SKIP LOCKED
			)
			UPDATE pages p SET sources_discovered_at = now() - $2 * interval '1 millisecond' + $3 * interval '1 millisecond'
			FROM due WHERE p.id = due.id
			RETURNING p.id, p.base_url, p.sources, coalesce(p.headers, '[]'), coalesce(p.proxy, '')`,
			discover, watch.SourceRediscovery.Milliseconds(), p.Lease.Milliseconds())
		if err != nil {
			return watch.Claimed{}, fmt.Errorf("claim due discoveries: %w", err)
		}
		found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Job, error) {
			j := watch.Job{Discover: true}
			err := r.Scan(&j.ID, &j.BaseURL, &j.Sources, &j.Headers, &j.Proxy)
			if len(j.Headers) == 0 {
				j.Headers = nil
			}
			return j, err
		})
		if err != nil {
			return watch.Claimed{}, fmt.Errorf("claim due discoveries: %w", err)
		}
		jobs = append(jobs, found...)
	}
	rows, err := tx.Query(ctx, `
		WITH due AS (
			SELECT s.id, s.next_check_at FROM sources s JOIN pages p ON p.id = s.page_id
			WHERE s.enabled AND NOT s.paused AND s.next_check_at <= now() AND (s.lease_until IS NULL OR s.lease_until <= now())
				AND p.enabled AND p.deleted_at IS NULL AND `+sourceChosen("s.kind", "p.sources")+`
			ORDER BY s.next_check_at
			LIMIT $1
			FOR UPDATE OF s SKIP LOCKED
		)
		UPDATE sources s SET
			next_check_at = CASE
				WHEN s.baseline_at IS NOT NULL AND due.next_check_at + coalesce(s.check_interval, p.check_interval) > now()
				THEN due.next_check_at + coalesce(s.check_interval, p.check_interval)
				ELSE now() + coalesce(s.check_interval, p.check_interval) * (1 + $2::float8 * random()) END,
			lease_until = now() + $3 * interval '1 millisecond'
		FROM due, pages p
		WHERE s.id = due.id AND p.id = s.page_id
		RETURNING s.page_id, s.id, s.kind, s.url, coalesce(s.etag, ''), coalesce(s.last_modified, ''), coalesce(s.items_digest, ''),
			due.next_check_at, p.same_site_only, p.ignore_patterns, p.include_text, p.exclude_text, p.include_url, p.exclude_url,
			coalesce(p.headers, '[]'), p.base_url, coalesce(p.proxy, '')`, p.Limit, p.Jitter, p.Lease.Milliseconds())
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due sources: %w", err)
	}
	checks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Job, error) {
		var (
			j    watch.Job
			src  watch.SourceRef
			opts watch.LinkOptions
		)
		err := r.Scan(&j.ID, &src.ID, &src.Kind, &src.URL, &j.ETag, &j.LastModified, &j.ItemsDigest, &j.ScheduledAt,
			&opts.SameSiteOnly, &opts.Ignore, &opts.IncludeText, &opts.ExcludeText, &opts.IncludeURL, &opts.ExcludeURL, &j.Headers, &j.PageURL, &j.Proxy)
		if len(j.Headers) == 0 {
			j.Headers = nil
		}
		// A source's items have no regions: only the page's URL and
		// keyword rules apply to them.
		j.BaseURL, j.Source, j.Options = src.URL, &src, jobOptions(opts)
		return j, err
	})
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due sources: %w", err)
	}
	jobs = append(jobs, checks...)
	if len(jobs) == 0 {
		return watch.Claimed{}, nil
	}
	later, err := dispatch(ctx, jobs)
	if err != nil {
		return watch.Claimed{}, fmt.Errorf("dispatch %d source jobs: %w", len(jobs), err)
	}
	var ids []int64
	var until []time.Time
	for _, l := range later {
		if l.Source > 0 {
			ids, until = append(ids, l.Source), append(until, l.Until)
		}
	}
	if len(ids) > 0 {
		if _, err := tx.Exec(ctx, `
			UPDATE sources SET next_check_at = l.until, lease_until = NULL
			FROM unnest($1::bigint[], $2::timestamptz[]) AS l(id, until)
			WHERE sources.id = l.id`, ids, until); err != nil {
			return watch.Claimed{}, fmt.Errorf("claim due sources: postpone %d: %w", len(ids), err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return watch.Claimed{}, fmt.Errorf("claim due sources: commit: %w", err)
	}
	return watch.Claimed{Jobs: len(jobs) - len(later), Postponed: len(later)}, nil
}

// RecordDiscovery records what a discovery of page pageID found: each
// feed and news sitemap is added as a source of the page (due now, its
// first check a silent baseline) or, when known, marked found again (and
// enabled again, re-baselined when it had been disabled); the page's
// sources not found for watch.SourceGoneAfter are disabled, kept with
// their updates. A failed discovery (failure not empty) records nothing
// but its time, so that it is tried again an hour later rather than a day,
// and its failure, shown with the page's sources until one works.
// It returns watch.ErrPageNotFound for a page deleted meanwhile.
func (s *Store) RecordDiscovery(ctx context.Context, pageID int64, found []watch.DiscoveredSource, failure string) error {
	if failure != "" {
		tag, err := s.pool.Exec(ctx, `
			UPDATE pages SET sources_discovered_at = now() - $2 * interval '1 millisecond' + interval '1 hour',
				sources_discovery_error = left($3, 1000)
			WHERE id = $1 AND deleted_at IS NULL`, pageID, watch.SourceRediscovery.Milliseconds(), failure)
		if err != nil {
			return fmt.Errorf("record failed discovery of page %d: %w", pageID, interpretError(err))
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("page %d: %w", pageID, watch.ErrPageNotFound)
		}
		return nil
	}
	kinds, urls, titles := make([]string, 0, len(found)), make([]string, 0, len(found)), make([]string, 0, len(found))
	for _, f := range found {
		if f.Kind != watch.SourceFeed && f.Kind != watch.SourceSitemap {
			continue
		}
		kinds, urls, titles = append(kinds, f.Kind), append(urls, f.URL), append(titles, f.Title)
	}
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH page AS (
			SELECT id FROM pages WHERE id = $1 AND deleted_at IS NULL FOR UPDATE
		), found AS (
			SELECT DISTINCT ON (u) k, u, left(t, 300) AS t FROM unnest($2::text[], $3::text[], $4::text[]) AS f(k, u, t)
			WHERE u ~* '^https?://'
		), upsert AS (
			INSERT INTO sources (page_id, kind, url, title)
			SELECT page.id, found.k, found.u, found.t FROM page, found
			ON CONFLICT (page_id, url) DO UPDATE SET
				found_at = now(), enabled = true,
				title = CASE WHEN excluded.title <> '' THEN excluded.title ELSE sources.title END,
				baseline_at = CASE WHEN sources.enabled THEN sources.baseline_at END,
				next_check_at = CASE WHEN sources.enabled THEN sources.next_check_at ELSE now() END
			RETURNING 1
		), gone AS (
			UPDATE sources SET enabled = false, lease_until = NULL
			FROM page
			WHERE sources.page_id = page.id AND sources.enabled AND sources.found_at < now() - $5 * interval '1 millisecond'
				AND sources.url <> ALL($3::text[])
		)
		UPDATE pages SET sources_discovered_at = now(), sources_discovery_error = NULL FROM page WHERE pages.id = page.id
		RETURNING (SELECT count(*) FROM upsert)`, pageID, kinds, urls, titles, watch.SourceGoneAfter.Milliseconds()).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("page %d: %w", pageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return fmt.Errorf("record discovery of page %d: %w", pageID, interpretError(err))
	}
	return nil
}

// DeferSource moves a due source's check to until and clears its lease:
// the crawler did not check it (its origin had no polite slot soon
// enough). Nothing else about the source changes.
func (s *Store) DeferSource(ctx context.Context, pageID, sourceID int64, until time.Time) error {
	if _, err := s.pool.Exec(ctx, `UPDATE sources SET next_check_at = $3, lease_until = NULL WHERE id = $2 AND page_id = $1`,
		pageID, sourceID, until); err != nil {
		return fmt.Errorf("defer source %d of page %d: %w", sourceID, pageID, interpretError(err))
	}
	return nil
}

// sourceFresh is true when the check of a sources row ($3 its fetch time)
// is not older than the source's last recorded one.
const sourceFresh = `(last_checked_at IS NULL OR last_checked_at <= $3)`

// RecordSourceCheck records one check of a feed or news sitemap of a page,
// in one statement: its items (links, each with its key, URL, title and
// code) go into the page's links (ON CONFLICT DO NOTHING, with
// links.source the source's kind), and those really new become the
// page's updates with their source and publication time, unless this is
// the source's first successful check (its baseline, silent). A story is
// so new once for its page, whichever of its homepage and sources saw it
// first. New links are capped per check and per day as the homepage's
// are (the page's count of the day is shared); the links past the cap
// are left for a later check, and the items digest is not recorded then.
// The page's status, health, removals and texts are left alone. It
// returns watch.ErrPageNotFound when the page or the source is gone.
func (s *Store) RecordSourceCheck(ctx context.Context, c watch.SourceCheck, links []watch.NewLink) (watch.SourceRecorded, error) {
	var (
		rec watch.SourceRecorded
		err error
	)
	switch {
	case c.Error != "":
		err = s.sourceStatus(ctx, c, `
			last_checked_at = greatest(last_checked_at, $3),
			last_status = CASE WHEN `+sourceFresh+` THEN $4 ELSE last_status END,
			last_error = CASE WHEN `+sourceFresh+` THEN $5 ELSE last_error END,
			consecutive_failures = consecutive_failures + 1`, c.Status, c.Error)
	case c.NotModified || len(links) == 0:
		// A 304, the same items again, or a source without items: it
		// answered, and it counts as its baseline when it was the first.
		err = s.sourceStatus(ctx, c, `
			baseline_at = coalesce(baseline_at, now()),
			last_checked_at = greatest(last_checked_at, $3),
			last_status = CASE WHEN `+sourceFresh+` THEN $4 ELSE last_status END,
			last_error = CASE WHEN `+sourceFresh+` THEN NULL ELSE last_error END,
			consecutive_failures = CASE WHEN `+sourceFresh+` THEN 0 ELSE consecutive_failures END,
			etag = CASE WHEN `+sourceFresh+` AND $4 <> 304 THEN nullif($5, '') ELSE etag END,
			last_modified = CASE WHEN `+sourceFresh+` AND $4 <> 304 THEN nullif($6, '') ELSE last_modified END,
			items_digest = CASE WHEN `+sourceFresh+` AND $7 <> '' THEN $7 ELSE items_digest END`,
			c.Status, c.ETag, c.LastModified, c.ItemsDigest)
	default:
		rec, err = recordSourceLinks(ctx, s.pool, c, links)
	}
	if err != nil {
		return watch.SourceRecorded{}, fmt.Errorf("record check of source %d of page %d: %w", c.Source.ID, c.PageID, interpretError(err))
	}
	return rec, nil
}

// sourceStatus updates the source's row with set, whose parameters are
// $1 page, $2 source, $3 fetched at and args from $4, and clears its lease.
func (s *Store) sourceStatus(ctx context.Context, c watch.SourceCheck, set string, args ...any) error {
	tag, err := s.pool.Exec(ctx, `UPDATE sources SET lease_until = NULL, `+set+` WHERE id = $2 AND page_id = $1`,
		append([]any{c.PageID, c.Source.ID, c.FetchedAt}, args...)...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("source %d of page %d: %w", c.Source.ID, c.PageID, watch.ErrPageNotFound)
	}
	return nil
}

// recordSourceLinks is RecordSourceCheck's statement for a check with
// items. It locks the page's row first, as a homepage check does, so the
// two never race for the page's count of the day, and the source's row.
// Items already among the page's links get their last-seen time
// refreshed (at most hourly), so that link retention does not prune a
// story a feed still lists and report it new again.
// A check that finds no new item leaves the page's row as it was: most
// checks of a busy portal's feed find its stories recorded already, and a
// new version of the page's wide row for a count unchanged would cost them
// about a tenth of their PostgreSQL time (BenchmarkHandleSource/known).
func recordSourceLinks(ctx context.Context, q querier, c watch.SourceCheck, links []watch.NewLink) (watch.SourceRecorded, error) {
	keys := make([]int64, len(links))
	urls := make([]string, len(links))
	texts := make([]string, len(links))
	codes := make([]string, len(links))
	published := make([]*time.Time, len(links))
	for i, l := range links {
		keys[i] = int64(l.Key)
		urls[i], texts[i], codes[i], published[i] = l.URL, l.Text, l.Code, l.PublishedAt
	}
	rows, err := q.Query(ctx, `
		WITH page AS (
			SELECT p.id, p.articles, s.id AS source_id, s.baseline_at IS NULL AS silent,
				CASE WHEN s.baseline_at IS NULL THEN `+fmt.Sprint(math.MaxInt32)+`
				     ELSE greatest(0, least($8, $9 - `+today+`)) END AS budget
			FROM pages p JOIN sources s ON s.page_id = p.id AND s.id = $2
			WHERE p.id = $1 AND p.deleted_at IS NULL
			FOR UPDATE OF p, s
		), candidate AS (
			SELECT l.k, l.u, l.t, l.c, l.pub, row_number() OVER (ORDER BY l.n) AS n
			FROM page, unnest($10::bigint[], $11::text[], $12::text[], $13::text[], $14::timestamptz[])
				WITH ORDINALITY AS l(k, u, t, c, pub, n)
			WHERE NOT EXISTS (SELECT 1 FROM links WHERE links.page_id = $1 AND links.link_key = l.k)
		), fresh AS (
			INSERT INTO links (page_id, link_key, url, text, code, source)
			SELECT page.id, k, u, t, c, $15 FROM page, candidate WHERE candidate.n <= page.budget
			ON CONFLICT DO NOTHING
			RETURNING link_key, url, text, code, first_seen_at
		), news AS (
			INSERT INTO updates (page_id, link_key, url, text, code, discovered_at, source, source_id, published_at)
			SELECT page.id, fresh.link_key, fresh.url, fresh.text, fresh.code, fresh.first_seen_at, $15, page.source_id, candidate.pub
			FROM page, fresh JOIN candidate ON candidate.k = fresh.link_key WHERE NOT page.silent
			ON CONFLICT DO NOTHING
			RETURNING id, link_key, url, discovered_at, published_at
		), work AS (
			INSERT INTO article_work (url, page_id, discovered_at)
			SELECT news.url, page.id, news.discovered_at FROM page, news
			WHERE page.articles AND $16::boolean AND NOT `+knownArticle+`
			ON CONFLICT (url) DO NOTHING
		), seen AS (
			UPDATE links SET last_seen_at = now()
			WHERE links.page_id = $1 AND links.link_key = ANY($10::bigint[]) AND links.last_seen_at < now() - interval '1 hour'
		), counted AS (
			UPDATE pages SET
				new_links_today = `+today+` + (SELECT count(*) FROM fresh),
				new_links_day   = (now() AT TIME ZONE 'UTC')::date
			FROM page WHERE pages.id = page.id AND NOT page.silent AND EXISTS (SELECT 1 FROM fresh)
		), status AS (
			UPDATE sources SET
				lease_until = NULL,
				baseline_at = coalesce(baseline_at, now()),
				last_checked_at = greatest(last_checked_at, $3),
				last_status = CASE WHEN `+sourceFresh+` THEN $4 ELSE last_status END,
				last_error = CASE WHEN `+sourceFresh+` THEN NULL ELSE last_error END,
				consecutive_failures = CASE WHEN `+sourceFresh+` THEN 0 ELSE consecutive_failures END,
				etag = CASE WHEN `+sourceFresh+` THEN nullif($5, '') ELSE etag END,
				last_modified = CASE WHEN `+sourceFresh+` THEN nullif($6, '') ELSE last_modified END,
				items_digest = CASE WHEN NOT `+sourceFresh+` THEN items_digest
				                    WHEN (SELECT count(*) FROM candidate WHERE n > page.budget) > 0 THEN NULL
				                    ELSE nullif($7, '') END
			FROM page WHERE sources.id = page.source_id
			RETURNING page.silent AS baseline, (SELECT count(*) FROM candidate WHERE n > page.budget) AS cut
		)
		SELECT status.baseline, status.cut, fresh.link_key IS NOT NULL, news.id, coalesce(fresh.url, ''), coalesce(fresh.text, ''),
			coalesce(fresh.code, ''), fresh.first_seen_at, news.published_at
		FROM status LEFT JOIN (fresh LEFT JOIN news USING (link_key)) ON true`,
		c.PageID, c.Source.ID, c.FetchedAt, c.Status, c.ETag, c.LastModified, c.ItemsDigest,
		budget(c.Caps.PerCheck), budget(c.Caps.PerDay), keys, urls, texts, codes, published, c.Source.Kind, c.Articles)
	if err != nil {
		return watch.SourceRecorded{}, fmt.Errorf("insert %d items: %w", len(links), err)
	}
	defer rows.Close()
	var (
		rec   watch.SourceRecorded
		found bool
	)
	for rows.Next() {
		var (
			inserted bool
			id       *int64
			at       *time.Time
			cut      int64
			u        watch.Update
		)
		if err := rows.Scan(&rec.Baseline, &cut, &inserted, &id, &u.URL, &u.Text, &u.Code, &at, &u.PublishedAt); err != nil {
			return watch.SourceRecorded{}, fmt.Errorf("insert %d items: %w", len(links), err)
		}
		found, rec.Cut = true, int(cut)
		if !inserted {
			continue
		}
		rec.Inserted++
		if id != nil {
			u.ID, u.PageID, u.DiscoveredAt, u.Source, u.SourceID = *id, c.PageID, *at, c.Source.Kind, c.Source.ID
			rec.Updates = append(rec.Updates, u)
		}
	}
	if err := rows.Err(); err != nil {
		return watch.SourceRecorded{}, fmt.Errorf("insert %d items: %w", len(links), err)
	}
	if !found {
		return watch.SourceRecorded{}, fmt.Errorf("source %d of page %d: %w", c.Source.ID, c.PageID, watch.ErrPageNotFound)
	}
	return rec, nil
}

// Sources lists the feeds and news sitemaps of page id, enabled ones
// first, then by kind and URL, or returns watch.ErrPageNotFound.
func (s *Store) Sources(ctx context.Context, id int64) ([]watch.Source, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pages WHERE id = $1 AND deleted_at IS NULL)`, id).Scan(&exists); err != nil {
		return nil, fmt.Errorf("list sources of page %d: %w", id, err)
	}
	if !exists {
		return nil, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+sourceColumns+`
		FROM sources s JOIN pages p ON p.id = s.page_id
		WHERE s.page_id = $1
		ORDER BY s.enabled DESC, s.kind, s.url`, id)
	if err != nil {
		return nil, fmt.Errorf("list sources of page %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, scanSource)
	if err != nil {
		return nil, fmt.Errorf("list sources of page %d: %w", id, err)
	}
	return out, nil
}

// Feeds lists the feeds found on the watched pages (those of tag, when
// tag is not empty) that are still listed there, by page then URL: what a
// feed reader imports to follow what the pages publish. A page that no
// longer chooses feeds keeps its feeds in the list, as its own list of
// sources shows them.
func (s *Store) Feeds(ctx context.Context, tag string) ([]watch.PageFeed, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.id, p.name, coalesce(p.title, ''), p.base_url, p.tags, s.title, s.url
		FROM sources s JOIN pages p ON p.id = s.page_id
		WHERE s.kind = '`+watch.SourceFeed+`' AND s.enabled AND p.deleted_at IS NULL
			AND ($1 = '' OR p.tags @> ARRAY[$1::text])
		ORDER BY p.id, s.url`, tag)
	if err != nil {
		return nil, fmt.Errorf("list the pages' feeds: %w", err)
	}
	feeds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.PageFeed, error) {
		var (
			f    watch.PageFeed
			page watch.Page
		)
		err := r.Scan(&f.PageID, &page.Name, &page.Title, &page.BaseURL, &f.Tags, &f.Title, &f.URL)
		f.PageName, f.PageURL = page.DisplayName(), page.BaseURL
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("list the pages' feeds: %w", err)
	}
	return feeds, nil
}

// sourceColumns are the columns scanSource reads, of sources s joined
// with its page p (the chosen column is sourceChosen's, spelled out to
// stay a constant).
const sourceColumns = `s.id, s.page_id, s.kind, s.url, s.title, s.enabled, s.next_check_at, s.last_checked_at, coalesce(s.last_status, 0),
	coalesce(s.last_error, ''), s.consecutive_failures, s.baseline_at, s.discovered_at, s.found_at,
	(CASE s.kind WHEN '` + watch.SourceFeed + `' THEN '` + watch.SourcesFeeds + `' ELSE '` + watch.SourcesSitemaps + `' END) = ANY(p.sources),
	coalesce((extract(epoch FROM s.check_interval) * 1000)::bigint, 0), (extract(epoch FROM p.check_interval) * 1000)::bigint, s.paused`

func scanSource(r pgx.CollectableRow) (watch.Source, error) {
	var (
		src           watch.Source
		ownMS, pageMS int64
	)
	err := r.Scan(&src.ID, &src.PageID, &src.Kind, &src.URL, &src.Title, &src.Enabled, &src.NextCheckAt, &src.LastCheckedAt,
		&src.LastStatus, &src.LastError, &src.ConsecutiveFailures, &src.BaselineAt, &src.DiscoveredAt, &src.FoundAt, &src.Chosen,
		&ownMS, &pageMS, &src.Paused)
	src.CheckInterval, src.PageInterval = time.Duration(ownMS)*time.Millisecond, time.Duration(pageMS)*time.Millisecond
	return src, err
}

// EditSource changes feed or news sitemap id of a watched page and
// returns it as stored. A new interval takes effect at once: a check
// due later than one interval from now is brought forward to then. It
// returns a *watch.RefusedError for an edit that fails
// SourceEdit.Validate and watch.ErrSourceNotFound for an id that names
// no source of a page out of the trash.
func (s *Store) EditSource(ctx context.Context, id int64, e watch.SourceEdit) (watch.Source, error) {
	if err := e.Validate(); err != nil {
		return watch.Source{}, err
	}
	var ms *int64
	if e.Interval != nil {
		v := e.Interval.Milliseconds()
		ms = &v
	}
	// resumed: the edit resumes a paused source, whose next check is then
	// a silent baseline read whole.
	const resumed = `$4 AND s.paused AND NOT $5`
	rows, err := s.pool.Query(ctx, `
		WITH edited AS (
			UPDATE sources s SET
				check_interval = CASE WHEN $2 THEN nullif($3::bigint, 0) * interval '1 millisecond' ELSE s.check_interval END,
				next_check_at = CASE WHEN `+resumed+` THEN now()
					WHEN $2 THEN least(s.next_check_at,
					now() + coalesce(nullif($3::bigint, 0) * interval '1 millisecond', p.check_interval)) ELSE s.next_check_at END,
				paused = CASE WHEN $4 THEN $5 ELSE s.paused END,
				-- Resumed: what the source listed meanwhile is its baseline,
				-- as for a source chosen anew.
				baseline_at = CASE WHEN `+resumed+` THEN NULL ELSE s.baseline_at END,
				items_digest = CASE WHEN `+resumed+` THEN NULL ELSE s.items_digest END,
				etag = CASE WHEN `+resumed+` THEN NULL ELSE s.etag END,
				last_modified = CASE WHEN `+resumed+` THEN NULL ELSE s.last_modified END,
				lease_until = CASE WHEN $4 AND $5 THEN NULL ELSE s.lease_until END
			FROM pages p
			WHERE s.id = $1 AND p.id = s.page_id AND p.deleted_at IS NULL
			RETURNING s.*
		)
		SELECT `+sourceColumns+` FROM edited s JOIN pages p ON p.id = s.page_id`, id, ms != nil, ms, e.Paused != nil, e.Paused != nil && *e.Paused)
	if err != nil {
		return watch.Source{}, fmt.Errorf("edit source %d: %w", id, interpretError(err))
	}
	src, err := pgx.CollectExactlyOneRow(rows, scanSource)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Source{}, fmt.Errorf("source %d: %w", id, watch.ErrSourceNotFound)
	}
	if err != nil {
		return watch.Source{}, fmt.Errorf("edit source %d: %w", id, interpretError(err))
	}
	return src, nil
}

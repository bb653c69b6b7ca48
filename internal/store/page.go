package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// CreatePage registers a page with its name and tags, due at once. p must
// have passed registration.Policy.CheckPage. It returns
// watch.ErrDuplicatePage when the URL is already registered. A URL in the
// trash is restored, with p's settings and its history (Page.Restored).
func (s *Store) CreatePage(ctx context.Context, p watch.PageSpec) (watch.Page, error) {
	var page watch.Page
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		page, err = s.createPage(ctx, tx, p)
		return err
	})
	if err != nil {
		return watch.Page{}, fmt.Errorf("add %s: %w", p.URL, err)
	}
	return page, nil
}

// CreatePages registers every page of ps in one transaction: all of them or,
// on any error, none. A URL already registered, or given twice, yields an
// error wrapping watch.ErrDuplicatePage that names its position in ps
// (from 1).
func (s *Store) CreatePages(ctx context.Context, ps []watch.PageSpec) ([]watch.Page, error) {
	var pages []watch.Page
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		pages = make([]watch.Page, 0, len(ps))
		for i, p := range ps {
			page, err := s.createPage(ctx, tx, p)
			if err != nil {
				return fmt.Errorf("row %d: %s: %w", i+1, p.URL, err)
			}
			pages = append(pages, page)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import pages: %w", err)
	}
	return pages, nil
}

// ImportPages registers the pages yields in one transaction, as
// CreatePages does: all of them or, on any error, none; a URL already
// registered, or given twice, yields an error wrapping
// watch.ErrDuplicatePage that names its position (from 1). It takes the
// pages one at a time and keeps only their ids, so that an import of
// thousands of pages with their lists is never held whole; read them back
// with EachPage. It returns the new pages' ids in order.
func (s *Store) ImportPages(ctx context.Context, pages iter.Seq[watch.PageSpec]) ([]int64, error) {
	var ids []int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids = ids[:0]
		for p := range pages {
			page, err := s.createPage(ctx, tx, p)
			if err != nil {
				return fmt.Errorf("row %d: %s: %w", len(ids)+1, p.URL, err)
			}
			ids = append(ids, page.ID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import pages: %w", err)
	}
	return ids, nil
}

// watchedBatch is how many URLs WatchedAmong asks about in one query, and
// pageBatch how many pages EachPage reads in one.
const (
	watchedBatch = 200
	pageBatch    = 100
)

// WatchedAmong returns those of urls (normalised) that are watched already
// (not in the trash: adding one of those restores it), asking watchedBatch at a time, so that an import is checked
// against the pages it names, never against every page.
func (s *Store) WatchedAmong(ctx context.Context, urls []string) ([]string, error) {
	var watched []string
	for batch := range slices.Chunk(urls, watchedBatch) {
		rows, err := s.pool.Query(ctx, `SELECT base_url FROM pages WHERE base_url = ANY($1) AND deleted_at IS NULL`, batch)
		if err != nil {
			return nil, fmt.Errorf("find watched pages: %w", err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, fmt.Errorf("find watched pages: %w", err)
		}
		watched = append(watched, got...)
	}
	return watched, nil
}

// EachPage calls fn with each page of ids that exists, in id order. It
// reads pageBatch pages at a time and calls fn between reads, so that
// neither every page nor a connection is held while fn runs (fn may be
// writing to a slow client). An error of fn ends it and is returned as is.
func (s *Store) EachPage(ctx context.Context, ids []int64, fn func(watch.Page) error) error {
	for batch := range slices.Chunk(slices.Sorted(slices.Values(ids)), pageBatch) {
		rows, err := s.pool.Query(ctx, `SELECT `+pageColumns+` FROM pages WHERE id = ANY($1) ORDER BY id`, batch)
		if err != nil {
			return fmt.Errorf("read pages: %w", err)
		}
		pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Page, error) { return scanPage(r) })
		if err != nil {
			return fmt.Errorf("read pages: %w", err)
		}
		for _, p := range pages {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowQuerier is a pool or a transaction.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// createPage inserts or restores p, then seals its secret headers for the
// id it got; q must be a transaction, so that no claim sees the page
// without them.
func (s *Store) createPage(ctx context.Context, q rowQuerier, p watch.PageSpec) (watch.Page, error) {
	if p.Interval == 0 {
		p.Interval = watch.DefaultInterval
	}
	secrets := slices.ContainsFunc(p.Headers, watch.Header.Secret)
	if secrets && s.sealer == nil {
		return watch.Page{}, watch.Refused("headers", watch.ErrNoSecretsKey)
	}
	page, err := insertPage(ctx, q, p)
	if err == nil && (p.Render || p.WaitFor != "" || len(p.RenderAllow) > 0 || page.Restored) {
		restored := page.Restored
		allow := renderAllowArg(p.RenderAllow)
		page, err = setRender(ctx, q, page.ID, &p.Render, &p.WaitFor, &allow)
		page.Restored = restored
	}
	if err != nil || len(p.Headers) == 0 {
		return page, err
	}
	headers, err := s.seal(page.ID, p.Headers)
	if err != nil {
		return watch.Page{}, err
	}
	return s.setHeaders(ctx, q, page.ID, headers)
}

// seal returns hs with the values of secrets sealed for page id; the ones
// sealed already stay as they are.
func (s *Store) seal(id int64, hs []watch.Header) ([]watch.Header, error) {
	out := make([]watch.Header, len(hs))
	for i, h := range hs {
		out[i] = h
		if !h.Secret() || h.Value == "" {
			continue
		}
		if s.sealer == nil {
			return nil, watch.Refused("headers", watch.ErrNoSecretsKey)
		}
		sealed, err := s.sealer.Seal(id, h.Name, h.Value)
		if err != nil {
			return nil, err
		}
		out[i] = watch.Header{Name: h.Name, Sealed: sealed}
	}
	return out, nil
}

// setHeaders stores the headers of page id, secrets sealed; none is NULL.
func (s *Store) setHeaders(ctx context.Context, q rowQuerier, id int64, hs []watch.Header) (watch.Page, error) {
	arg, err := headersArg(hs)
	if err != nil {
		return watch.Page{}, err
	}
	return scanPage(q.QueryRow(ctx, `UPDATE pages SET headers = $2 WHERE id = $1 RETURNING `+pageColumns, id, arg))
}

// setRender sets whether page id is rendered, the selector its renderer
// waits for and the hosts it may load from beyond its site; nil keeps a
// setting, an empty selector is NULL, an empty list is '{}'. A
// page turned to rendering or back forgets its validators and digests: the
// DOM after scripts is another body than the page as fetched. It is also
// another set of links, so a page with a baseline re-baselines silently,
// as a change of options does: the links a script inserts were there all
// along, not news. A new selector or a new list of allowed hosts of a
// rendered page may read another state of its DOM, and re-baselines too.
func setRender(ctx context.Context, q rowQuerier, id int64, render *bool, waitFor *string, allow *[]string) (watch.Page, error) {
	var allowArg []string // NULL keeps the column
	if allow != nil {
		allowArg = renderAllowArg(*allow)
	}
	const (
		renderChanged = `render IS DISTINCT FROM coalesce($2, render)`
		newWaitFor    = `CASE WHEN $3::text IS NULL THEN wait_for ELSE nullif($3, '') END`
		newAllow      = `coalesce($4::text[], render_allow)`
		rebase        = `baseline_at IS NOT NULL AND (` + renderChanged + ` OR (coalesce($2, render) AND (wait_for IS DISTINCT FROM ` +
			newWaitFor + ` OR render_allow IS DISTINCT FROM ` + newAllow + `)))`
	)
	return scanPage(q.QueryRow(ctx, `
		UPDATE pages SET
			etag          = CASE WHEN `+renderChanged+` OR `+rebase+` THEN NULL ELSE etag END,
			last_modified = CASE WHEN `+renderChanged+` OR `+rebase+` THEN NULL ELSE last_modified END,
			body_digest   = CASE WHEN `+renderChanged+` OR `+rebase+` THEN NULL ELSE body_digest END,
			links_digest  = CASE WHEN `+rebase+` THEN NULL ELSE links_digest END,
			kept_counts   = CASE WHEN `+rebase+` THEN '{}' ELSE kept_counts END,
			rebaseline    = rebaseline OR (`+rebase+`),
			render        = coalesce($2, render),
			wait_for      = `+newWaitFor+`,
			render_allow  = `+newAllow+`
		WHERE id = $1 AND deleted_at IS NULL
		RETURNING `+pageColumns, id, render, waitFor, allowArg))
}

// renderAllowArg is the value of pages.render_allow for hosts: never NULL.
func renderAllowArg(hosts []string) []string {
	if hosts == nil {
		return []string{}
	}
	return hosts
}

// headersArg is the value of pages.headers for hs: NULL for none.
func headersArg(hs []watch.Header) (any, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	for _, h := range hs {
		if h.Secret() && h.Value != "" {
			// A bug, not an input: a secret never reaches the database in clear.
			return nil, fmt.Errorf("store header %s of a page: its value is not sealed", h.Name)
		}
	}
	return hs, nil
}

func insertPage(ctx context.Context, q rowQuerier, p watch.PageSpec) (watch.Page, error) {
	args := append(append([]any{p.URL, p.Interval.Milliseconds(), p.Options.SameSiteOnly, nonNil(p.Options.Ignore), p.Name, nonNil(p.Tags), p.Paused},
		optionArgs(p.Options)...), p.BurstDetectionOff, p.ArticlesOff, p.Proxy, sourcesArg(p.Sources))
	// A URL in the trash comes back with its history and the settings
	// given now; its next check re-baselines silently when they change
	// what it admits, or the proxy it is seen through, as an edit would
	// (EditPage).
	rebase := "baseline_at IS NOT NULL AND (" + admitsChanged(3, 4, 8, 9, 10, 11, 12, 13) + " OR " + proxyChanged(16) + ")"
	page, err := scanPage(q.QueryRow(ctx, `
		UPDATE pages SET
			deleted_at = NULL, check_interval = $2 * interval '1 millisecond', next_check_at = now(),
			same_site_only = $3, ignore_patterns = $4, name = $5, tags = $6, enabled = NOT $7,
			(`+optionColumns+`) = ($8, $9, $10, $11, $12, $13), burst_detection = NOT $14, articles = NOT $15,
			headers = NULL, proxy = nullif($16::text, ''),
			sources = $17, sources_discovered_at = NULL,
			rebaseline    = rebaseline OR (`+rebase+`),
			etag          = CASE WHEN `+rebase+` THEN NULL ELSE etag END,
			last_modified = CASE WHEN `+rebase+` THEN NULL ELSE last_modified END,
			links_digest  = CASE WHEN `+rebase+` THEN NULL ELSE links_digest END,
			body_digest   = CASE WHEN `+rebase+` THEN NULL ELSE body_digest END,
			kept_counts   = CASE WHEN `+rebase+` THEN '{}' ELSE kept_counts END,
			changed_at = now()
		WHERE base_url = $1 AND deleted_at IS NOT NULL
		RETURNING `+pageColumns, args...))
	if err == nil {
		page.Restored = true
		return page, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, err
	}
	// A URL already watched inserts no row, so it draws no id from the
	// sequence: refused adds leave no gaps in the ids people see. Two adds
	// of one URL at once still meet the unique key.
	page, err = scanPage(q.QueryRow(ctx, `
		INSERT INTO pages (base_url, check_interval, same_site_only, ignore_patterns, name, tags, enabled, `+optionColumns+`, burst_detection, articles, proxy,
			sources)
		SELECT $1, $2 * interval '1 millisecond', $3, $4, $5, $6, NOT $7, $8, $9, $10, $11, $12, $13, NOT $14, NOT $15, nullif($16::text, ''), $17
		WHERE NOT EXISTS (SELECT 1 FROM pages WHERE base_url = $1)
		RETURNING `+pageColumns, args...))
	if isUniqueViolation(err) || errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, watch.ErrDuplicatePage
	}
	return page, err
}

// EditPage changes a page's settings, name and tags and returns the page as
// it now is, or watch.ErrPageNotFound. e must have passed
// registration.CheckEdit. An edit that changes what the page's checks admit
// (same-site, ignore patterns, regions, keyword rules) on a page that has a
// baseline marks it for a silent re-baseline and clears its validators and
// links digest, so that its next check fetches the whole page and records
// the links the new options admit without updates (RebaselinePending), and
// forgets its kept counts: the new options may keep far fewer links, and
// that is no sign of a blind watch (watch.FewLinks). A
// shorter interval applies from the next claim: the next check moves to
// one interval after the last, or now, when that is before the check
// already scheduled.
func (s *Store) EditPage(ctx context.Context, id int64, e watch.PageEdit) (watch.Page, error) {
	var page watch.Page
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		page, err = s.editPage(ctx, tx, id, e)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("change page %d: %w", id, err)
	}
	return page, nil
}

// editPage is EditPage in tx. A change of headers merges them with those
// of the page (watch.MergeHeaders) under the lock of its row, seals the
// secrets it brings, and clears the validators and digests: another header may be
// answered with another page. A change of a header other than a secret
// re-baselines a page that has a baseline, as a change of options does (a
// new Accept-Language is the page in another language, not news); a new
// Cookie does not.
func (s *Store) editPage(ctx context.Context, tx pgx.Tx, id int64, e watch.PageEdit) (watch.Page, error) {
	var intervalMS *int64
	if e.Interval != nil {
		ms := e.Interval.Milliseconds()
		intervalMS = &ms
	}
	var ignore, tags []string
	if e.Ignore != nil {
		ignore = nonNil(*e.Ignore)
	}
	if e.Tags != nil {
		tags = nonNil(*e.Tags)
	}
	var (
		headers        any // NULL keeps the column
		headersTouched bool
		headersRebase  bool
	)
	if e.Headers != nil || e.ClearHeaders {
		var current []watch.Header
		err := tx.QueryRow(ctx, `SELECT coalesce(headers, '[]') FROM pages WHERE id = $1 AND deleted_at IS NULL FOR UPDATE`, id).Scan(&current)
		if err != nil {
			return watch.Page{}, err
		}
		var changes []watch.Header
		if e.Headers != nil {
			changes = *e.Headers
		}
		merged, visible, err := watch.MergeHeaders(current, changes, e.ClearHeaders)
		if err != nil {
			return watch.Page{}, err
		}
		// A form sends every header back as shown: the same headers are
		// no change, and keep the validators.
		same := slices.Equal(merged, current)
		if merged, err = s.seal(id, merged); err != nil {
			return watch.Page{}, err
		}
		if headers, err = headersArg(merged); err != nil {
			return watch.Page{}, err
		}
		if headers == nil {
			headers = []watch.Header{} // stored as NULL below
		}
		headersTouched, headersRebase = !same, visible
	}
	if e.Render != nil || e.WaitFor != nil || e.RenderAllow != nil {
		if _, err := setRender(ctx, tx, id, e.Render, e.WaitFor, e.RenderAllow); err != nil {
			return watch.Page{}, err
		}
	}
	var sources []string // NULL keeps the column
	if e.Sources != nil {
		sources = sourcesArg(*e.Sources)
		if err := rebaselineChosen(ctx, tx, id, sources); err != nil {
			return watch.Page{}, err
		}
	}
	// Another proxy may be another exit, shown another edition of the
	// page: like a header in clear, its change re-baselines.
	rebase := "baseline_at IS NOT NULL AND (" + admitsChanged(4, 5, 8, 9, 10, 11, 12, 13) + " OR $18 OR " + proxyChanged(19) + ")"
	refetch := "(" + rebase + ") OR $17"
	return scanPage(tx.QueryRow(ctx, `
		UPDATE pages SET
			check_interval  = coalesce($2 * interval '1 millisecond', check_interval),
			next_check_at   = CASE WHEN $2 IS NULL THEN next_check_at ELSE least(next_check_at,
				greatest(now(), coalesce(last_checked_at, now()) + $2 * interval '1 millisecond')) END,
			enabled         = coalesce($3, enabled),
			same_site_only  = coalesce($4, same_site_only),
			ignore_patterns = coalesce($5, ignore_patterns),
			name            = coalesce($6, name),
			tags            = coalesce($7, tags),
			within_selectors  = coalesce($8, within_selectors),
			exclude_selectors = coalesce($9, exclude_selectors),
			include_text      = coalesce($10, include_text),
			exclude_text      = coalesce($11, exclude_text),
			include_url       = coalesce($12, include_url),
			exclude_url       = coalesce($13, exclude_url),
			burst_detection   = coalesce($14, burst_detection),
			articles          = coalesce($15, articles),
			headers           = CASE WHEN $17 THEN nullif($16::jsonb, '[]') ELSE headers END,
			proxy             = CASE WHEN $19::text IS NULL THEN proxy ELSE nullif($19::text, '') END,
			sources           = coalesce($20::text[], sources),
			sources_discovered_at = CASE WHEN $20::text[] IS NULL OR $20::text[] <@ sources THEN sources_discovered_at ELSE NULL END,
			rebaseline        = rebaseline OR (`+rebase+`),
			etag              = CASE WHEN `+refetch+` THEN NULL ELSE etag END,
			last_modified     = CASE WHEN `+refetch+` THEN NULL ELSE last_modified END,
			links_digest      = CASE WHEN `+refetch+` THEN NULL ELSE links_digest END,
			body_digest       = CASE WHEN `+refetch+` THEN NULL ELSE body_digest END,
			kept_counts       = CASE WHEN `+rebase+` THEN '{}' ELSE kept_counts END,
			changed_at      = now()
		WHERE id = $1 AND deleted_at IS NULL
		RETURNING `+pageColumns,
		append(append(append([]any{id, intervalMS, e.Enabled, e.SameSiteOnly, ignore, e.Name, tags}, optionEditArgs(e)...), e.BurstDetection, e.Articles),
			headers, headersTouched, headersRebase, e.Proxy, sources)...))
}

// sourcesArg is the value of pages.sources for a normalised choice;
// none is the default.
func sourcesArg(sources []string) []string {
	if len(sources) == 0 {
		return watch.DefaultSources
	}
	return sources
}

// rebaselineChosen marks the feeds and sitemaps of page id whose kind
// sources chooses anew (the page did not choose it before) for a silent
// baseline, and makes them due: items a source listed while it was not
// watched are not news when it is chosen again.
func rebaselineChosen(ctx context.Context, tx pgx.Tx, id int64, sources []string) error {
	_, err := tx.Exec(ctx, `
		UPDATE sources s SET baseline_at = NULL, items_digest = NULL, etag = NULL, last_modified = NULL, next_check_at = now()
		FROM pages p
		WHERE p.id = $1 AND s.page_id = p.id AND `+sourceChosen("s.kind", "$2::text[]")+` AND NOT `+sourceChosen("s.kind", "p.sources"),
		id, sources)
	if err != nil {
		return fmt.Errorf("re-baseline the sources chosen anew: %w", err)
	}
	return nil
}

// sourceChosen is an SQL condition: the page's choice of sources (a
// text[] expression) includes the kind of a sources row.
func sourceChosen(kind, sources string) string {
	return `(CASE ` + kind + ` WHEN '` + watch.SourceFeed + `' THEN '` + watch.SourcesFeeds + `' ELSE '` + watch.SourcesSitemaps + `' END) = ANY(` + sources + `)`
}

// proxyChanged is the SQL condition that parameter n, a proxy name or NULL
// for no change (an empty name for direct), names another proxy than the
// row holds.
func proxyChanged(n int) string {
	return fmt.Sprintf("($%[1]d::text IS NOT NULL AND nullif($%[1]d::text, '') IS DISTINCT FROM proxy)", n)
}

// CheckNow makes the page due now, so that the next round of the scheduler
// claims it, and returns it, or watch.ErrPageNotFound. A check in flight
// is not doubled: the claim waits for its lease as for any due page. A
// paused page stays paused; ErrPagePaused says so.
func (s *Store) CheckNow(ctx context.Context, id int64) (watch.Page, error) {
	page, err := scanPage(s.pool.QueryRow(ctx, `
		UPDATE pages SET next_check_at = CASE WHEN enabled THEN least(next_check_at, now()) ELSE next_check_at END
		WHERE id = $1 AND deleted_at IS NULL
		RETURNING `+pageColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("check page %d now: %w", id, err)
	}
	if !page.Enabled {
		return page, fmt.Errorf("page %d: %w", id, watch.ErrPagePaused)
	}
	return page, nil
}

// Page returns one watched page, or watch.ErrPageNotFound (also for a
// page in the trash).
func (s *Store) Page(ctx context.Context, id int64) (watch.Page, error) {
	page, err := scanPage(s.pool.QueryRow(ctx, `SELECT `+pageColumns+` FROM pages WHERE id = $1 AND deleted_at IS NULL`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("load page %d: %w", id, err)
	}
	return page, nil
}

// Pages returns every watched page (none of the trash) in id order.
func (s *Store) Pages(ctx context.Context) ([]watch.Page, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+pageColumns+` FROM pages WHERE deleted_at IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Page, error) { return scanPage(r) })
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	return pages, nil
}

const pageColumns = `id, base_url, (extract(epoch FROM check_interval) * 1000)::bigint, enabled, next_check_at,
	last_checked_at, coalesce(last_status, 0), coalesce(last_error, ''), consecutive_failures, baseline_at,
	same_site_only, ignore_patterns, created_at, last_truncated, last_cut, name, tags, coalesce(title, ''),
	within_selectors, exclude_selectors, include_text, exclude_text, include_url, exclude_url,
	rebaseline, burst_detection, articles, deleted_at, coalesce(degraded, ''), coalesce(degraded_detail, ''), degraded_since,
	coalesce(headers, '[]'), coalesce(proxy, ''), render, coalesce(wait_for, ''), render_hint, sources, sources_discovered_at,
	coalesce(sources_discovery_error, ''), render_allow`

func scanPage(row pgx.Row) (watch.Page, error) {
	var (
		p          watch.Page
		intervalMS int64
		checked    *time.Time
		baseline   *time.Time
		deleted    *time.Time
		since      *time.Time
		discovered *time.Time
	)
	err := row.Scan(&p.ID, &p.BaseURL, &intervalMS, &p.Enabled, &p.NextCheckAt, &checked, &p.LastStatus,
		&p.LastError, &p.ConsecutiveFailures, &baseline, &p.Options.SameSiteOnly, &p.Options.Ignore, &p.CreatedAt,
		&p.LastTruncated, &p.LastCut, &p.Name, &p.Tags, &p.Title,
		&p.Options.Within, &p.Options.Exclude, &p.Options.IncludeText, &p.Options.ExcludeText,
		&p.Options.IncludeURL, &p.Options.ExcludeURL, &p.RebaselinePending, &p.BurstDetection, &p.Articles, &deleted,
		&p.Health.Reason, &p.Health.Detail, &since, &p.Headers, &p.Proxy, &p.Render, &p.WaitFor, &p.RenderHint, &p.Sources, &discovered,
		&p.SourcesDiscoveryError, &p.RenderAllow)
	if err != nil {
		return watch.Page{}, err
	}
	if len(p.Headers) == 0 {
		p.Headers = nil
	}
	if len(p.RenderAllow) == 0 {
		p.RenderAllow = nil
	}
	p.Interval = time.Duration(intervalMS) * time.Millisecond
	if checked != nil {
		p.LastCheckedAt = *checked
	}
	if baseline != nil {
		p.BaselineAt = *baseline
	}
	if deleted != nil {
		p.DeletedAt = *deleted
	}
	if since != nil {
		p.Health.Since = *since
	}
	if discovered != nil {
		p.SourcesDiscoveredAt = *discovered
	}
	return p, nil
}

// QueryPages returns the watched pages q selects, in id order, at most
// q.LimitOrDefault of them after q.After: the pages list reads a screenful,
// never every page.
func (s *Store) QueryPages(ctx context.Context, q watch.PageQuery) ([]watch.Page, error) {
	var (
		where = []string{"deleted_at IS NULL", "id > $1"}
		args  = []any{q.After}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Tag != "" {
		where = append(where, "tags @> ARRAY["+arg(q.Tag)+"::text]")
	}
	if q.Text != "" {
		p := arg("%" + escapeLike(q.Text) + "%")
		where = append(where, "(name ILIKE "+p+" OR title ILIKE "+p+" OR base_url ILIKE "+p+")")
	}
	switch q.Status {
	case "":
	case "failing":
		where = append(where, "enabled AND consecutive_failures > 0")
	case "paused":
		where = append(where, "NOT enabled")
	case "pending":
		where = append(where, "enabled AND last_checked_at IS NULL")
	case "degraded":
		where = append(where, "degraded IS NOT NULL")
	default:
		return nil, watch.Refused("status", fmt.Errorf("status %q: want one of %s", q.Status, strings.Join(watch.PageStatuses, ", ")))
	}
	rows, err := s.pool.Query(ctx, `SELECT `+pageColumns+` FROM pages WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id LIMIT `+arg(q.LimitOrDefault()), args...)
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Page, error) { return scanPage(r) })
	if err != nil {
		return nil, fmt.Errorf("list pages: %w", err)
	}
	return pages, nil
}

// CountPages sums the pages up for the head of the pages list.
func (s *Store) CountPages(ctx context.Context) (watch.PageCounts, error) {
	var c watch.PageCounts
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE deleted_at IS NULL),
			count(*) FILTER (WHERE deleted_at IS NULL AND enabled AND consecutive_failures > 0),
			count(*) FILTER (WHERE deleted_at IS NULL AND NOT enabled),
			count(*) FILTER (WHERE deleted_at IS NOT NULL),
			count(*) FILTER (WHERE deleted_at IS NULL AND degraded IS NOT NULL)
		FROM pages`).Scan(&c.Watched, &c.Failing, &c.Paused, &c.Trash, &c.Degraded)
	if err != nil {
		return watch.PageCounts{}, fmt.Errorf("count pages: %w", err)
	}
	return c, nil
}

// Tags returns the tags the watched pages have, sorted.
func (s *Store) Tags(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT t FROM pages, unnest(tags) AS t WHERE deleted_at IS NULL ORDER BY t`)
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	tags, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list tags: %w", err)
	}
	return tags, nil
}

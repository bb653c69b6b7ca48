package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// QueryUpdates returns the updates f selects, newest first by
// (discovered_at, id), each with its page's display name and, for a link
// since taken down, when (removals_link). Pages in the trash are left out. Paging is by
// keyset: f.After is the cursor of the last update of the previous call,
// so a page of results costs the same however deep it is. Limit is capped
// at watch.MaxUpdatesLimit; 0 means 100.
//
// The statement holds only the conditions f sets, so PostgreSQL plans each
// shape on its own: the newest-first walk of updates_newest (or of
// updates_page_since for one page) stops after Limit rows; a text filter
// that few rows match is answered from the trigram index instead; a tag's
// pages are looked up first (pages_tags) and, when they are few, read one
// by one (see tagPagesMerged).
func (s *Store) QueryUpdates(ctx context.Context, f watch.UpdateFilter) ([]watch.Update, error) {
	f.Limit = f.LimitOrDefault()
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var tagPages []int64
	if f.Tag != "" {
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(array_agg(id), '{}') FROM pages WHERE tags @> ARRAY[$1::text] AND deleted_at IS NULL`,
			f.Tag).Scan(&tagPages); err != nil {
			return nil, fmt.Errorf("query updates: pages of tag %q: %w", f.Tag, err)
		}
		if len(tagPages) == 0 {
			return []watch.Update{}, nil
		}
	}
	if f.PageID != 0 {
		where = append(where, "u.page_id = "+arg(f.PageID))
	}
	if !f.Since.IsZero() {
		where = append(where, "u.discovered_at >= "+arg(f.Since))
	}
	if !f.Until.IsZero() {
		where = append(where, "u.discovered_at < "+arg(f.Until))
	}
	if f.Text != "" {
		where = append(where, "u.text ILIKE "+arg("%"+escapeLike(f.Text)+"%"))
	}
	if !f.NewerThan.IsZero() {
		where = append(where, "(u.discovered_at, u.id) > ("+arg(f.NewerThan.DiscoveredAt)+"::timestamptz, "+arg(f.NewerThan.ID)+"::bigint)")
	}
	if !f.After.IsZero() {
		where = append(where, "(u.discovered_at, u.id) < ("+arg(f.After.DiscoveredAt)+"::timestamptz, "+arg(f.After.ID)+"::bigint)")
	}
	const updateColumns = `u.id, u.page_id, u.url, u.text, u.code, u.discovered_at, ` + displayNameSQL + `, u.summary, u.burst, ` + placeColumns + `,
		(SELECT max(r.removed_at) FROM removals r WHERE r.page_id = u.page_id AND r.link_key = u.link_key),
		(SELECT l.text FROM links l WHERE l.page_id = u.page_id AND l.link_key = u.link_key AND l.text <> u.text),
		` + articlePendingSQL + `, `
	columns := updateColumns + articleColumns(f.ArticleBody)
	const order = ` ORDER BY u.discovered_at DESC, u.id DESC LIMIT `
	var sql string
	switch {
	case len(tagPages) > 0 && len(tagPages) <= tagPagesMerged:
		// A tag of few pages: the newest rows of each page from
		// updates_page_since, merged. Walking the newest of all updates
		// for a rare tag's rows would read most of the table.
		where = append(where, "u.page_id = t.page_id")
		limit := arg(f.Limit)
		sql = `SELECT ` + columns + ` FROM unnest(` + arg(tagPages) + `::bigint[]) AS t(page_id)
			CROSS JOIN LATERAL (SELECT * FROM updates u WHERE ` + strings.Join(where, " AND ") + order + limit + `) u
			JOIN pages p ON p.id = u.page_id ` + articleJoinSQL + order + limit
	default:
		if len(tagPages) > 0 {
			where = append(where, "u.page_id = ANY("+arg(tagPages)+"::bigint[])")
		}
		// Updates of pages in the trash are left out; the trash is small
		// and short-lived, so the newest-first walk skips few rows.
		where = append(where, "p.deleted_at IS NULL")
		sql = `SELECT ` + columns + ` FROM updates u JOIN pages p ON p.id = u.page_id
			` + articleJoinSQL + ` WHERE ` + strings.Join(where, " AND ")
		sql += order + arg(f.Limit)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query updates: %w", err)
	}
	updates, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Update, error) {
		var (
			u       watch.Update
			current *string
			pending bool
			scan    articleScan
		)
		dest := append(append([]any{&u.ID, &u.PageID, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt, &u.PageName, &u.Summary, &u.Burst},
			placeDest(&u)...), &u.RemovedAt, &current, &pending)
		err := r.Scan(append(dest, scan.dest()...)...)
		if err != nil {
			return u, err
		}
		if current != nil {
			u.CurrentText = *current
		}
		u.Article, err = scan.articleOf(pending, u.URL)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("query updates: %w", err)
	}
	return updates, nil
}

// placeColumns are an update's place (watch.Place) over updates u: zero
// values where it is not known, as for updates recorded before places.
const placeColumns = `coalesce(u.position, 0), coalesce(u.heading, 0), coalesce(u.landmark, ''),
	u.source, coalesce(u.source_id, 0), u.published_at`

// placeDest is where placeColumns are scanned to: the update's place and
// its source (watch.Update.Source, SourceID, PublishedAt).
func placeDest(u *watch.Update) []any {
	return []any{&u.Position, &u.Heading, &u.Landmark, &u.Source, &u.SourceID, &u.PublishedAt}
}

// tagPagesMerged is the most pages a tag may have for its updates to be
// read page by page and merged; a tag on more pages is read from the
// newest-first walk of all updates, filtered by page.
const tagPagesMerged = 100

// displayNameSQL is watch.Page.DisplayName in SQL, over pages p.
const displayNameSQL = `coalesce(nullif(p.name, ''), nullif(p.title, ''),
	substring(p.base_url FROM '^[a-zA-Z]+://(?:[^@/]*@)?([^/?#]+)'), p.base_url)`

// escapeLike makes s match itself in a LIKE pattern.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// FeedStamp returns what identifies the content of scope's feed without
// reading the feed: the newest update comes from the top entry of an index
// (updates_newest, or updates_page_since per page of the scope, read
// index-only when the visibility map allows), the pages from pages, and,
// when scope.Entries is set, the articles of the newest scope.Entries
// updates (see articleStamp). A page scope that names no page yields
// watch.ErrPageNotFound.
func (s *Store) FeedStamp(ctx context.Context, scope watch.FeedScope) (watch.FeedStamp, error) {
	var (
		st     watch.FeedStamp
		newest *time.Time
		newID  *int64
		chg    *time.Time
	)
	var err error
	switch {
	case scope.PageID != 0:
		err = s.pool.QueryRow(ctx, `
			SELECT t.id, t.discovered_at, 1, p.id, p.changed_at
			FROM pages p LEFT JOIN LATERAL (
				SELECT id, discovered_at FROM updates WHERE page_id = p.id
				ORDER BY discovered_at DESC, id DESC LIMIT 1) t ON true
			WHERE p.id = $1 AND p.deleted_at IS NULL`, scope.PageID).Scan(&newID, &newest, &st.Pages, &st.PageSum, &chg)
		if err == pgx.ErrNoRows {
			return watch.FeedStamp{}, fmt.Errorf("page %d: %w", scope.PageID, watch.ErrPageNotFound)
		}
	case scope.Tag != "":
		err = s.pool.QueryRow(ctx, `
			WITH scoped AS (SELECT id, changed_at FROM pages WHERE tags @> ARRAY[$1::text] AND deleted_at IS NULL),
			tops AS (
				SELECT t.id, t.discovered_at FROM scoped p CROSS JOIN LATERAL (
					SELECT id, discovered_at FROM updates WHERE page_id = p.id
					ORDER BY discovered_at DESC, id DESC LIMIT 1) t
				ORDER BY t.discovered_at DESC, t.id DESC LIMIT 1)
			SELECT (SELECT id FROM tops), (SELECT discovered_at FROM tops),
				count(*), coalesce(sum(id), 0), max(changed_at) FROM scoped`,
			scope.Tag).Scan(&newID, &newest, &st.Pages, &st.PageSum, &chg)
	default:
		err = s.pool.QueryRow(ctx, `
			WITH top AS (SELECT id, discovered_at FROM updates ORDER BY discovered_at DESC, id DESC LIMIT 1)
			SELECT (SELECT id FROM top), (SELECT discovered_at FROM top),
				count(*), coalesce(sum(id), 0), max(changed_at) FROM pages WHERE deleted_at IS NULL`).Scan(&newID, &newest, &st.Pages, &st.PageSum, &chg)
	}
	if err != nil {
		return watch.FeedStamp{}, fmt.Errorf("read feed stamp: %w", err)
	}
	if newID != nil {
		st.NewestID, st.Newest = *newID, *newest
	}
	if chg != nil {
		st.Changed = *chg
	}
	if scope.Entries > 0 && st.NewestID != 0 {
		if err := s.articleStamp(ctx, scope, &st); err != nil {
			return watch.FeedStamp{}, err
		}
	}
	return st, nil
}

// articleStamp adds to st the articles of the newest scope.Entries updates
// of scope: how many of them point at an article, the sum of those ids and
// their latest fetch.
//
// Articles arrive after their updates (the extractor reads a link minutes
// after it was found), so a feed whose newest update stays the same still
// changes when its entries gain their headlines, leads and dates. The stamp
// looks at what the feed shows and nothing else: the latest article stored
// anywhere would change every feed at every article, and the scope's
// pending work (article_work, smaller still) gives no time for
// Last-Modified and misses an article stored again through another page.
// The cost is the walk a feed makes, without the rows' text: Entries index
// entries of updates_newest or updates_page_since, their rows for the
// URL, and as many primary-key lookups in article_links and articles; a tag of more
// than tagPagesMerged pages walks the newest of all updates filtered by
// page, as QueryUpdates does.
//
// A client that sends only If-Modified-Since misses one change: an update
// that links an article stored earlier (another page linked it first)
// leaves ArticleFetched where it was. The ETag changes all the same.
func (s *Store) articleStamp(ctx context.Context, scope watch.FeedScope, st *watch.FeedStamp) error {
	const sum = ` SELECT count(a.id), coalesce(sum(a.id), 0), max(a.fetched_at) FROM newest n
		JOIN pages p ON p.id = n.page_id AND p.articles JOIN article_links l ON l.url = n.url JOIN articles a ON a.id = l.article_id`
	const order = ` ORDER BY discovered_at DESC, id DESC LIMIT `
	var (
		sql  string
		args = []any{scope.Entries}
	)
	switch {
	case scope.PageID != 0:
		sql = `WITH newest AS (SELECT page_id, url FROM updates WHERE page_id = $2` + order + `$1)` + sum
		args = append(args, scope.PageID)
	case scope.Tag != "" && st.Pages <= tagPagesMerged:
		// The newest entries of each page, index-only, merged; then the
		// rows of the few that remain.
		sql = `WITH scoped AS (SELECT id FROM pages WHERE tags @> ARRAY[$2::text] AND deleted_at IS NULL),
			tops AS (SELECT t.id, t.discovered_at FROM scoped p CROSS JOIN LATERAL (
				SELECT id, discovered_at FROM updates WHERE page_id = p.id` + order + `$1) t
				ORDER BY t.discovered_at DESC, t.id DESC LIMIT $1),
			newest AS (SELECT u.page_id, u.url FROM tops JOIN updates u ON u.id = tops.id AND u.discovered_at = tops.discovered_at)` + sum
		args = append(args, scope.Tag)
	case scope.Tag != "":
		sql = `WITH newest AS (SELECT page_id, url FROM updates
			WHERE page_id = ANY(ARRAY(SELECT id FROM pages WHERE tags @> ARRAY[$2::text] AND deleted_at IS NULL))` + order + `$1)` + sum
		args = append(args, scope.Tag)
	default:
		sql = `WITH newest AS (SELECT page_id, url FROM updates` + order + `$1)` + sum
	}
	var fetched *time.Time
	if err := s.pool.QueryRow(ctx, sql, args...).Scan(&st.Articles, &st.ArticleSum, &fetched); err != nil {
		return fmt.Errorf("read feed stamp: articles: %w", err)
	}
	if fetched != nil {
		st.ArticleFetched = *fetched
	}
	return nil
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ClaimArticleWork takes up to n link URLs whose article is due, oldest
// due first, and moves each a lease ahead: work of an extractor that dies
// comes due again when its lease ends, and no other extractor takes it
// before. Rows another extractor is claiming at the same moment are
// skipped, not waited for. A URL that several pages link is one work, so
// its article is fetched once, through the proxy of the page that found
// it (ArticleWork.Proxy).
func (s *Store) ClaimArticleWork(ctx context.Context, n int, lease time.Duration) ([]watch.ArticleWork, error) {
	rows, err := s.pool.Query(ctx, `
		UPDATE article_work w SET due_at = now() + $2 * interval '1 millisecond', attempts = w.attempts + 1
		FROM (SELECT url FROM article_work WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) due
		WHERE w.url = due.url
		RETURNING w.url, w.page_id, w.discovered_at, w.attempts,
			coalesce((SELECT proxy FROM pages WHERE id = w.page_id), '')`, n, lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim article work: %w", err)
	}
	work, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.ArticleWork, error) {
		var w watch.ArticleWork
		err := r.Scan(&w.URL, &w.PageID, &w.DiscoveredAt, &w.Attempts, &w.Proxy)
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim article work: %w", err)
	}
	return work, nil
}

// ArticleWorkDue counts the link URLs waiting for their article and the age
// of the oldest that is due, for the extractor's metrics.
func (s *Store) ArticleWorkDue(ctx context.Context) (waiting int64, oldest time.Duration, err error) {
	var ms float64
	err = s.pool.QueryRow(ctx, `SELECT count(*),
		coalesce(extract(epoch FROM now() - min(discovered_at) FILTER (WHERE due_at <= now())) * 1000, 0)
		FROM article_work`).Scan(&waiting, &ms)
	if err != nil {
		return 0, 0, fmt.Errorf("count article work: %w", err)
	}
	return waiting, time.Duration(ms) * time.Millisecond, nil
}

// KnownArticle returns the id and status of the article a link URL is
// already known to lead to; ok is false when none is.
func (s *Store) KnownArticle(ctx context.Context, linkURL string) (id int64, status watch.ArticleStatus, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT a.id, a.status FROM article_links l JOIN articles a ON a.id = l.article_id
		WHERE l.url = $1`, linkURL).Scan(&id, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("look up the article of %s: %w", linkURL, err)
	}
	return id, status, true, nil
}

// RecordArticle stores o's article under its canonical URL (replacing
// what an earlier fetch stored there), remembers o.LinkURL as leading to
// it, which every update linking that URL shows from then on, and deletes
// w, in one transaction: the work is done exactly when its outcome is
// stored. A work already done (by another extractor, after this one's
// lease ran out) stores nothing and returns id 0.
func (s *Store) RecordArticle(ctx context.Context, w watch.ArticleWork, o watch.ArticleOutcome) (int64, error) {
	if err := o.Validate(); err != nil {
		return 0, err
	}
	a := o.Article
	sources, err := json.Marshal(nonNilMap(a.Sources))
	if err != nil {
		return 0, fmt.Errorf("article of %s: sources: %w", o.LinkURL, err)
	}
	var id int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if done, err := takeWork(ctx, tx, w); err != nil || done {
			return err
		}
		if err := tx.QueryRow(ctx, `
			INSERT INTO articles (url, status, detail, headline, description, body, date_published, date_modified,
				author, in_language, image, section, keywords, sources, fetched_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
			ON CONFLICT (url) DO UPDATE SET status = $2, detail = $3, headline = $4, description = $5, body = $6,
				date_published = $7, date_modified = $8, author = $9, in_language = $10, image = $11,
				section = $12, keywords = $13, sources = $14, fetched_at = $15
			RETURNING id`,
			a.URL, string(a.Status), a.Detail, a.Headline, a.Description, a.Body, a.DatePublished, a.DateModified,
			nonNil(a.Author), a.InLanguage, a.Image, a.Section, nonNil(a.Keywords), sources, a.FetchedAt).Scan(&id); err != nil {
			return fmt.Errorf("store the article of %s: %w", o.LinkURL, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO article_links (url, article_id) VALUES ($1, $2)
			ON CONFLICT (url) DO UPDATE SET article_id = $2`, o.LinkURL, id); err != nil {
			return fmt.Errorf("remember the article of %s: %w", o.LinkURL, err)
		}
		if o.Snapshot != nil {
			return indexArticleSnapshot(ctx, tx, id, o.Snapshot, a.FetchedAt)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// FinishArticleWork deletes w, whose URL the extractor found already
// leading to a stored article (KnownArticle): its updates show that one.
func (s *Store) FinishArticleWork(ctx context.Context, w watch.ArticleWork) error {
	_, err := takeWork(ctx, s.pool, w)
	return err
}

// takeWork deletes w's row, and reports done when it was gone already.
func takeWork(ctx context.Context, q execer, w watch.ArticleWork) (done bool, err error) {
	tag, err := q.Exec(ctx, `DELETE FROM article_work WHERE url = $1`, w.URL)
	if err != nil {
		return false, fmt.Errorf("finish the article work of %s: %w", w.URL, err)
	}
	return tag.RowsAffected() == 0, nil
}

// execer is what takeWork needs: a pool, or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// PostponeArticleWork makes w due again at until: its origin has no slot
// free now, or its fetch failed in a way that may pass. counted false
// takes back the attempt its claim counted, for a wait that is not the
// link's fault.
func (s *Store) PostponeArticleWork(ctx context.Context, w watch.ArticleWork, until time.Time, counted bool) error {
	_, err := s.pool.Exec(ctx, `UPDATE article_work SET due_at = $2, attempts = attempts - CASE WHEN $3 THEN 0 ELSE 1 END
		WHERE url = $1`, w.URL, until, counted)
	if err != nil {
		return fmt.Errorf("postpone the article work of %s: %w", w.URL, err)
	}
	return nil
}

// ReleaseArticleWork makes claimed work due at once, uncounted: an
// extractor that stops hands back what it has not started.
func (s *Store) ReleaseArticleWork(ctx context.Context, work []watch.ArticleWork) error {
	urls := make([]string, len(work))
	for i, w := range work {
		urls[i] = w.URL
	}
	_, err := s.pool.Exec(ctx, `UPDATE article_work SET due_at = now(), attempts = greatest(attempts - 1, 0)
		WHERE url = ANY($1)`, urls)
	if err != nil {
		return fmt.Errorf("release %d article works: %w", len(urls), err)
	}
	return nil
}

// Article returns the article id with every update that links it (through
// any link URL known to lead to it), newest first (at most
// watch.MaxUpdatesLimit), or watch.ErrArticleNotFound.
func (s *Store) Article(ctx context.Context, id int64) (watch.ArticleSightings, error) {
	var (
		as   watch.ArticleSightings
		scan articleScan
	)
	err := s.pool.QueryRow(ctx, `SELECT `+articleColumns(true)+` FROM articles a WHERE a.id = $1`, id).Scan(scan.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return as, fmt.Errorf("article %d: %w", id, watch.ErrArticleNotFound)
	}
	if err != nil {
		return as, fmt.Errorf("read article %d: %w", id, err)
	}
	a, err := scan.article()
	if err != nil {
		return as, err
	}
	as.Article = *a
	rows, err := s.pool.Query(ctx, `SELECT u.id, u.page_id, u.url, u.text, u.code, u.discovered_at, `+displayNameSQL+`,
		u.summary, u.burst, `+placeColumns+` FROM article_links l JOIN updates u ON u.url = l.url JOIN pages p ON p.id = u.page_id
		WHERE l.article_id = $1 AND p.deleted_at IS NULL ORDER BY u.discovered_at DESC, u.id DESC LIMIT $2`, id, watch.MaxUpdatesLimit)
	if err != nil {
		return as, fmt.Errorf("read the sightings of article %d: %w", id, err)
	}
	as.Sightings, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Update, error) {
		var u watch.Update
		err := r.Scan(append([]any{&u.ID, &u.PageID, &u.URL, &u.Text, &u.Code, &u.DiscoveredAt, &u.PageName, &u.Summary, &u.Burst},
			placeDest(&u)...)...)
		return u, err
	})
	if err != nil {
		return as, fmt.Errorf("read the sightings of article %d: %w", id, err)
	}
	return as, nil
}

// PruneArticles deletes up to limit articles no update links any more
// (their updates went with retention, or with their page), stored more than
// olderThan ago so that one just stored is never taken before the update
// that asked for it is visible, and the work of link URLs no update links
// any more. It returns how many articles it deleted.
func (s *Store) PruneArticles(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM articles WHERE id IN (
			SELECT a.id FROM articles a
			WHERE a.created_at < now() - $1 * interval '1 millisecond'
			  AND NOT EXISTS (SELECT 1 FROM article_links l JOIN updates u ON u.url = l.url WHERE l.article_id = a.id)
			LIMIT $2)`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune articles: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `
		DELETE FROM article_work w WHERE w.url IN (
			SELECT w.url FROM article_work w
			WHERE w.discovered_at < now() - $1 * interval '1 millisecond'
			  AND NOT EXISTS (SELECT 1 FROM updates u WHERE u.url = w.url)
			LIMIT $2)`, olderThan.Milliseconds(), limit); err != nil {
		return tag.RowsAffected(), fmt.Errorf("prune the article work of deleted updates: %w", err)
	}
	return tag.RowsAffected(), nil
}

// articleJoinSQL joins an update (updates u of pages p) to the article its
// link URL leads to, for a page that reads articles; articlePendingSQL is
// true while that URL waits for the extractor. A page that does not read
// articles shows none, even for a story another page had read.
const (
	articleJoinSQL    = `LEFT JOIN article_links al ON p.articles AND al.url = u.url LEFT JOIN articles a ON a.id = al.article_id`
	articlePendingSQL = `(p.articles AND EXISTS (SELECT 1 FROM article_work w WHERE w.url = u.url))`
)

// articleColumns are the columns scanArticle reads, from articles a (which
// a LEFT JOIN may leave NULL); the body only when asked for.
func articleColumns(body bool) string {
	b := `''`
	if body {
		b = `a.body`
	}
	return `a.id, a.status, a.detail, a.url, a.headline, a.description, ` + b + `, a.date_published, a.date_modified,
		a.author, a.in_language, a.image, a.section, a.keywords, a.sources, a.fetched_at`
}

// articleScan receives articleColumns, which a LEFT JOIN may leave NULL.
type articleScan struct {
	id                                        *int64
	status, detail, url, headline, desc, body *string
	published, modified, lang, image, section *string
	author, keywords                          []string
	sources                                   []byte
	fetched                                   *time.Time
}

func (s *articleScan) dest() []any {
	return []any{&s.id, &s.status, &s.detail, &s.url, &s.headline, &s.desc, &s.body, &s.published, &s.modified,
		&s.author, &s.lang, &s.image, &s.section, &s.keywords, &s.sources, &s.fetched}
}

// article returns what was scanned; nil when the row had no article.
func (s *articleScan) article() (*watch.Article, error) {
	if s.id == nil {
		return nil, nil
	}
	a := &watch.Article{ID: *s.id, Status: watch.ArticleStatus(*s.status), Detail: *s.detail, URL: *s.url,
		Headline: *s.headline, Description: *s.desc, Body: *s.body, DatePublished: *s.published,
		DateModified: *s.modified, Author: s.author, InLanguage: *s.lang, Image: *s.image, Section: *s.section,
		Keywords: s.keywords, FetchedAt: *s.fetched}
	if len(s.sources) > 0 {
		if err := json.Unmarshal(s.sources, &a.Sources); err != nil {
			return nil, fmt.Errorf("article %d: sources: %w", a.ID, err)
		}
	}
	if len(a.Sources) == 0 {
		a.Sources = nil
	}
	if len(a.Author) == 0 {
		a.Author = nil
	}
	if len(a.Keywords) == 0 {
		a.Keywords = nil
	}
	return a, nil
}

// articleOf returns an update's article: the stored one; else, when its
// work is still waiting (pending), one of status pending for its link
// linkURL; else nil, for a page that does not read articles.
func (s *articleScan) articleOf(pending bool, linkURL string) (*watch.Article, error) {
	a, err := s.article()
	if err == nil && a == nil && pending {
		a = &watch.Article{Status: watch.ArticlePending, URL: linkURL}
	}
	return a, err
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

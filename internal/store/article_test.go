package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestArticleWorkComesWithItsUpdate: a check that records updates of a
// page with articles on writes the work of each new URL in its
// transaction, once however many pages link it; the switch off
// (PORTALWATCH_ARTICLES=false) or the page's articles off write none. The
// work's outcome is one article per canonical URL, which every update
// linking the URL shows (a second page's later link without a fetch), and
// the article is pruned only once no update links it.
func TestArticleWorkComesWithItsUpdate(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	a, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://a.example/"})
	b, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://b.example/"})
	off, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://off.example/", ArticlesOff: true})
	if !a.Articles || off.Articles {
		t.Fatalf("articles: new page %v, page registered with them off %v", a.Articles, off.Articles)
	}
	at := time.Now()
	record := func(page int64, articles bool, urls ...string) watch.Recorded {
		t.Helper()
		at = at.Add(time.Second)
		c := ok(page, at)
		c.Articles = articles
		rec, err := st.RecordCheck(ctx, c, links(urls...))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, p := range []int64{a.ID, b.ID, off.ID} {
		record(p, true, "https://a.example/old")
	}
	record(a.ID, true, "https://a.example/old", "https://a.example/story")
	record(b.ID, false, "https://a.example/old", "https://a.example/switched-off")
	record(b.ID, true, "https://a.example/old", "https://a.example/switched-off", "https://a.example/story")
	record(off.ID, true, "https://a.example/old", "https://a.example/story")

	// One work per URL: the story both pages that read articles link is
	// claimed once, for the page that showed it first.
	work, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(work) != 1 || work[0].URL != "https://a.example/story" || work[0].Attempts != 1 || work[0].PageID != a.ID {
		t.Fatalf("claimed %+v, want the story, first shown by page %d", work, a.ID)
	}
	if again, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a second claim while the story is leased took %+v, %v", again, err)
	}
	article := func(page int64, url string) *watch.Article {
		t.Helper()
		ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: page})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups {
			if u.URL == url {
				return u.Article
			}
		}
		t.Fatalf("page %d has no update of %s", page, url)
		return nil
	}
	if a := article(b.ID, "https://a.example/story"); a == nil || a.Status != watch.ArticlePending {
		t.Fatalf("an update waiting for its article: %+v; want status pending", a)
	}
	if a := article(b.ID, "https://a.example/switched-off"); a != nil {
		t.Fatalf("a link recorded while articles were switched off: %+v, want no article", a)
	}

	stored := watch.Article{Status: watch.ArticleOK, URL: "https://a.example/story", Headline: "A story",
		Description: "Its lead.", Body: "Its text.", DatePublished: "2026-12-01", Author: []string{"Ada"},
		Sources: map[string]string{"headline": "json-ld"}, FetchedAt: at}
	id, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL, Article: stored})
	if err != nil || id == 0 {
		t.Fatalf("RecordArticle = %d, %v", id, err)
	}
	if again, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("after the story was read: claimed %+v, %v; want no work left", again, err)
	}
	for _, p := range []int64{a.ID, b.ID} {
		if a := article(p, "https://a.example/story"); a == nil || a.ID != id {
			t.Fatalf("the story on page %d: %+v; want article %d", p, a, id)
		}
	}
	if a := article(off.ID, "https://a.example/story"); a != nil {
		t.Fatalf("the story on a page that does not read articles: %+v, want none", a)
	}
	known, status, found, err := st.KnownArticle(ctx, work[0].URL)
	if err != nil || !found || known != id || status != watch.ArticleOK {
		t.Fatalf("KnownArticle = %d %q %v %v, want article %d", known, status, found, err, id)
	}
	// A link recorded after the story was read shows it at once, without
	// work for the extractor.
	c, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://c.example/"})
	record(c.ID, true, "https://a.example/old")
	record(c.ID, true, "https://a.example/old", "https://a.example/story")
	if a := article(c.ID, "https://a.example/story"); a == nil || a.ID != id {
		t.Fatalf("a later link to a read story: %+v; want article %d", a, id)
	}
	if w, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(w) != 0 {
		t.Fatalf("a later link to a read story left work: %+v, %v", w, err)
	}
	// A link whose check missed the story being stored in the same instant
	// gets work, which the extractor finishes on finding the article known.
	if _, err := pool.Exec(ctx, `DELETE FROM article_links`); err != nil {
		t.Fatal(err)
	}
	d, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://d.example/"})
	record(d.ID, true, "https://a.example/old")
	record(d.ID, true, "https://a.example/old", "https://a.example/story")
	if _, err := pool.Exec(ctx, `INSERT INTO article_links (url, article_id) VALUES ($1, $2)`, work[0].URL, id); err != nil {
		t.Fatal(err)
	}
	raced, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil || len(raced) != 1 || raced[0].PageID != d.ID {
		t.Fatalf("claimed %+v, %v; want the link of page %d", raced, err, d.ID)
	}
	if err := st.FinishArticleWork(ctx, raced[0]); err != nil {
		t.Fatal(err)
	}
	if a := article(d.ID, "https://a.example/story"); a == nil || a.ID != id {
		t.Fatalf("the raced link: %+v; want article %d", a, id)
	}
	// A late second outcome of a work already done stores nothing.
	if _, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL,
		Article: watch.Article{Status: watch.ArticleError, URL: work[0].URL, FetchedAt: at}}); err != nil {
		t.Fatal(err)
	}

	got, err := st.Article(ctx, id)
	if err != nil || got.Headline != "A story" || got.Body != "Its text." || got.Status != watch.ArticleOK || len(got.Sightings) != 5 {
		t.Fatalf("Article(%d) = %+v, %v; want the stored article with five sightings (four pages that read articles, one that does not)", id, got, err)
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: a.ID})
	if err != nil || ups[0].Article == nil || ups[0].Article.Headline != "A story" || ups[0].Article.Body != "" {
		t.Fatalf("an update of a read article: %+v, %v; want its headline and no body in a list", ups[0].Article, err)
	}
	ups, err = st.QueryUpdates(ctx, watch.UpdateFilter{PageID: a.ID, ArticleBody: true})
	if err != nil || ups[0].Article.Body != "Its text." {
		t.Fatalf("with ArticleBody: %+v, %v", ups[0].Article, err)
	}
	if _, err := st.Article(ctx, id+1000); !errors.Is(err, watch.ErrArticleNotFound) {
		t.Fatalf("an unknown article: %v", err)
	}

	if n, err := st.PruneArticles(ctx, 0, 100); err != nil || n != 0 {
		t.Fatalf("PruneArticles deleted %d articles updates point at (%v)", n, err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM updates WHERE url = $1`, work[0].URL); err != nil {
		t.Fatal(err)
	}
	if n, err := st.PruneArticles(ctx, time.Hour, 100); err != nil || n != 0 {
		t.Fatalf("PruneArticles deleted %d articles stored within the grace (%v)", n, err)
	}
	if n, err := st.PruneArticles(ctx, 0, 100); err != nil || n != 1 {
		t.Fatalf("PruneArticles deleted %d unlinked articles (%v), want 1", n, err)
	}
	if _, _, found, _ := st.KnownArticle(ctx, work[0].URL); found {
		t.Fatal("a pruned article is still known for its link")
	}
}

// TestArticleWorkLeaseAndRelease: a link whose extractor died comes due
// again when its lease ends; one handed back is due at once, its claim not
// counted; one postponed is not due before its time.
func TestArticleWorkLeaseAndRelease(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	p, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://a.example/"})
	at := time.Now()
	for _, urls := range [][]string{{"https://a.example/old"}, {"https://a.example/old", "https://a.example/new"}} {
		at = at.Add(time.Second)
		c := ok(p.ID, at)
		c.Articles = true
		if _, err := st.RecordCheck(ctx, c, links(urls...)); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() []watch.ArticleWork {
		t.Helper()
		w, err := st.ClaimArticleWork(ctx, 10, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := claim()
	if len(w) != 1 {
		t.Fatalf("claimed %+v, want the new link", w)
	}
	// The lease runs out: the extractor that took it died.
	if _, err := pool.Exec(ctx, `UPDATE article_work SET due_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	w = claim()
	if len(w) != 1 || w[0].Attempts != 2 {
		t.Fatalf("after the lease: %+v, want the link on its second attempt", w)
	}
	if err := st.ReleaseArticleWork(ctx, w); err != nil {
		t.Fatal(err)
	}
	w = claim()
	if len(w) != 1 || w[0].Attempts != 2 {
		t.Fatalf("after a release: %+v, want the link at once, its released claim not counted", w)
	}
	if err := st.PostponeArticleWork(ctx, w[0], time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("a postponed link was claimed before its time: %+v", got)
	}
	var attempts int
	if err := pool.QueryRow(ctx, `SELECT attempts FROM article_work`).Scan(&attempts); err != nil || attempts != 1 {
		t.Fatalf("attempts after an uncounted postponement = %d (%v), want 1", attempts, err)
	}
}

// TestArticlesMigrationLeavesOldPagesAsTheyWere: 00019 turns articles on
// for pages registered after it only; down and up again works.
func TestArticlesMigrationLeavesOldPagesAsTheyWere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	mig := migrator(t, dsn)
	if _, err := mig.UpTo(ctx, 18); err != nil {
		t.Fatalf("migrate to 00018: %v", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url) VALUES ('https://old.example/')`); err != nil {
		t.Fatal(err)
	}
	if _, err := mig.UpTo(ctx, 19); err != nil {
		t.Fatalf("migrate to 00019: %v", err)
	}
	// The store reads the columns of every later migration too.
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate to the last: %v", err)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pages, err := st.Pages(ctx)
	if err != nil || len(pages) != 1 || pages[0].Articles {
		t.Fatalf("the page of before: %+v, %v; want articles off", pages, err)
	}
	if p, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://new.example/"}); err != nil || !p.Articles {
		t.Fatalf("a page registered after: %+v, %v; want articles on", p, err)
	}
	if _, err := mig.DownTo(ctx, 18); err != nil {
		t.Fatalf("down to 00018: %v", err)
	}
	if _, err := mig.UpTo(ctx, 19); err != nil {
		t.Fatalf("up to 00019 again: %v", err)
	}
}

// TestArticlesByURLMigration: 00021 turns the work of each update into the
// work of each URL, and an update pointed at an article keeps showing it
// through its URL; down and up again works.
func TestArticlesByURLMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	mig := migrator(t, dsn)
	if _, err := mig.UpTo(ctx, 20); err != nil {
		t.Fatalf("migrate to 00020: %v", err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// Two pages link a story still waiting, one links a story read, the way
	// 00019 kept them: work per update, a pointer in the update.
	if _, err := pool.Exec(ctx, `
		INSERT INTO pages (id, base_url, articles) VALUES (1, 'https://a.example/', true), (2, 'https://b.example/', true);
		INSERT INTO articles (id, url, status, headline, fetched_at) OVERRIDING SYSTEM VALUE
			VALUES (7, 'https://news.example/read', 'ok', 'Read', now());
		INSERT INTO article_links (url, article_id) VALUES ('https://news.example/read', 7);
		INSERT INTO updates (id, page_id, link_key, url, text, code, discovered_at, article_id) VALUES
			(1, 1, 1, 'https://news.example/waiting', 'Waiting', 'w1', now() - interval '2 minutes', NULL),
			(2, 2, 1, 'https://news.example/waiting', 'Waiting', 'w2', now() - interval '1 minute', NULL),
			(3, 1, 2, 'https://news.example/read', 'Read', 'r1', now(), 7);
		INSERT INTO article_work (update_id, discovered_at, page_id, url)
			SELECT id, discovered_at, page_id, url FROM updates WHERE article_id IS NULL;`); err != nil {
		t.Fatal(err)
	}
	if _, err := mig.UpTo(ctx, 21); err != nil {
		t.Fatalf("migrate to 00021: %v", err)
	}
	// The store reads the schema of today (the claim reads pages.proxy).
	if _, err := mig.Up(ctx); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	work, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil || len(work) != 1 || work[0].URL != "https://news.example/waiting" || work[0].PageID != 1 {
		t.Fatalf("claimed %+v, %v; want the waiting story once, first shown by page 1", work, err)
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{})
	if err != nil || len(ups) != 3 {
		t.Fatalf("QueryUpdates = %d updates, %v", len(ups), err)
	}
	for _, u := range ups {
		want := watch.ArticlePending
		if u.ID == 3 {
			want = watch.ArticleOK
		}
		if u.Article == nil || u.Article.Status != want {
			t.Errorf("update %d after the migration: article %+v, want status %s", u.ID, u.Article, want)
		}
	}
	if _, err := mig.DownTo(ctx, 20); err != nil {
		t.Fatalf("down to 00020: %v", err)
	}
	var pointed, waiting int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM updates WHERE article_id = 7), (SELECT count(*) FROM article_work)`).
		Scan(&pointed, &waiting); err != nil || pointed != 1 || waiting != 2 {
		t.Fatalf("after down: %d updates pointed at the article, %d works (%v); want 1 and 2", pointed, waiting, err)
	}
	if _, err := mig.UpTo(ctx, 21); err != nil {
		t.Fatalf("up to 00021 again: %v", err)
	}
}

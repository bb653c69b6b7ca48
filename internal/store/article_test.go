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
// page with articles on writes one work row each, in its transaction; the
// switch off (PORTALWATCH_ARTICLES=false) or the page's articles off write
// none. The work's outcome points the update at one article per canonical
// URL, which a second page's link to it reuses without a fetch, and the
// article is pruned only once no update points at it.
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

	// One link of a URL at a time: the story both pages link is claimed
	// once, and its other link only once the first is done.
	work, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(work) != 1 || work[0].URL != "https://a.example/story" || work[0].Attempts != 1 {
		t.Fatalf("claimed %+v, want one link of the story", work)
	}
	if again, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a second claim while the story is leased took %+v, %v", again, err)
	}
	other := a.ID
	if work[0].PageID == a.ID {
		other = b.ID
	}
	ups, err := st.QueryUpdates(ctx, watch.UpdateFilter{PageID: other})
	if err != nil || len(ups) == 0 || ups[0].Article == nil || ups[0].Article.Status != watch.ArticlePending {
		t.Fatalf("an update waiting for its article: %+v, %v; want article status pending", ups, err)
	}

	stored := watch.Article{Status: watch.ArticleOK, URL: "https://a.example/story", Headline: "A story",
		Description: "Its lead.", Body: "Its text.", DatePublished: "2026-12-01", Author: []string{"Ada"},
		Sources: map[string]string{"headline": "json-ld"}, FetchedAt: at}
	id, _, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL, Article: stored})
	if err != nil || id == 0 {
		t.Fatalf("RecordArticle = %d, %v", id, err)
	}
	// Its other link, waiting for its turn, was finished in the same
	// transaction.
	if again, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("after the story was read: claimed %+v, %v; want no work left", again, err)
	}
	ups, err = st.QueryUpdates(ctx, watch.UpdateFilter{PageID: other})
	if err != nil || len(ups) == 0 || ups[0].Article == nil || ups[0].Article.ID != id {
		t.Fatalf("the waiting link of page %d: %+v, %v; want it pointing at article %d", other, ups, err, id)
	}
	known, status, found, err := st.KnownArticle(ctx, work[0].URL)
	if err != nil || !found || known != id || status != watch.ArticleOK {
		t.Fatalf("KnownArticle = %d %q %v %v, want article %d", known, status, found, err, id)
	}
	// A link recorded after the story was read points at it at once,
	// without work for the extractor.
	c, _ := st.CreatePage(ctx, watch.PageSpec{URL: "https://c.example/"})
	record(c.ID, true, "https://a.example/old")
	record(c.ID, true, "https://a.example/old", "https://a.example/story")
	ups, err = st.QueryUpdates(ctx, watch.UpdateFilter{PageID: c.ID})
	if err != nil || len(ups) != 1 || ups[0].Article == nil || ups[0].Article.ID != id {
		t.Fatalf("a later link to a read story: %+v, %v; want it pointing at article %d", ups, err, id)
	}
	if w, err := st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(w) != 0 {
		t.Fatalf("a later link to a read story left work: %+v, %v", w, err)
	}
	// A link whose check missed the story being stored in the same instant
	// gets work, and the extractor links it to the article it finds known.
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
	if err := st.LinkArticle(ctx, raced[0], id); err != nil {
		t.Fatal(err)
	}
	// A late second outcome of a work already done stores nothing.
	if _, _, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL,
		Article: watch.Article{Status: watch.ArticleError, URL: work[0].URL, FetchedAt: at}}); err != nil {
		t.Fatal(err)
	}

	got, err := st.Article(ctx, id)
	if err != nil || got.Headline != "A story" || got.Body != "Its text." || got.Status != watch.ArticleOK || len(got.Sightings) != 4 {
		t.Fatalf("Article(%d) = %+v, %v; want the stored article with four sightings", id, got, err)
	}
	ups, err = st.QueryUpdates(ctx, watch.UpdateFilter{PageID: a.ID})
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
	if _, err := pool.Exec(ctx, `UPDATE updates SET article_id = NULL`); err != nil {
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

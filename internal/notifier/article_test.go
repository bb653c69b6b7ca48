package notifier_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// holdingOutbox is the real store, counting the holds of each
// subscription.
type holdingOutbox struct {
	*store.Store
	mu    sync.Mutex
	holds map[int64]int
}

func (h *holdingOutbox) HoldDelivery(ctx context.Context, l watch.Lease, until time.Time) error {
	err := h.Store.HoldDelivery(ctx, l, until)
	if err == nil {
		h.mu.Lock()
		h.holds[l.Subscription.ID]++
		h.mu.Unlock()
	}
	return err
}

func (h *holdingOutbox) held(sub int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holds[sub]
}

// arrival is one update as a receiver got it, and when.
type arrival struct {
	update watch.Update
	at     time.Time
}

// inbox keeps every update each path of it was sent.
type inbox struct {
	mu  sync.Mutex
	got map[string][]arrival
}

func (in *inbox) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b webhook.Body
	if err := json.Unmarshal(body, &b); err != nil {
		w.WriteHeader(400)
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, u := range b.Updates {
		in.got[r.URL.Path] = append(in.got[r.URL.Path], arrival{u, time.Now()})
	}
}

func (in *inbox) of(path string) []arrival {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]arrival(nil), in.got[path]...)
}

// insertArticleUpdate writes one update of a page that reads articles, as
// its check does: with the work of its URL, in the same transaction.
// found is how long ago it was found.
func insertArticleUpdate(t *testing.T, pool *pgxpool.Pool, page int64, url string, found time.Duration) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `
		WITH news AS (
			INSERT INTO updates (page_id, url, text, code, link_key, discovered_at)
			VALUES ($1, $2, 'Fees', 'c', hashtext($2), now() - $3 * interval '1 millisecond')
			RETURNING id, discovered_at, page_id, url
		), work AS (
			INSERT INTO article_work (url, page_id, discovered_at) SELECT url, page_id, discovered_at FROM news
		)
		SELECT id FROM news`, page, url, found.Milliseconds()).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestServiceWaitsForArticles: of two subscriptions to one page, the one
// without a wait is sent a new update at once, its article pending; the
// one with a wait holds it back while the article is pending and sends it
// with the headline and lead once the extractor recorded them. An update
// whose wait runs out first goes out without its article, no earlier.
func TestServiceWaitsForArticles(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	in := &inbox{got: map[string][]arrival{}}
	srv := httptest.NewServer(in)
	defer srv.Close()
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://news.example/"})
	if err != nil {
		t.Fatal(err)
	}
	// The longest wait: on a server shared with other tests the snapshot
	// horizon may hold the update back for minutes (see openStore), and
	// the hold must outlast that for the test to see it.
	const wait = watch.MaxWaitArticle
	waiting, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + "/waiting",
		Secret: watch.NewWebhookSecret(), WaitArticle: wait})
	if err != nil {
		t.Fatal(err)
	}
	if waiting.WaitArticle != wait {
		t.Fatalf("stored wait %s, want %s", waiting.WaitArticle, wait)
	}
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + "/at-once",
		Secret: watch.NewWebhookSecret()}); err != nil {
		t.Fatal(err)
	}
	box := &holdingOutbox{Store: st, holds: map[int64]int{}}
	svc := notifier.New(notifier.Config{PollInterval: 20 * time.Millisecond}, box,
		map[watch.Channel]notifier.Sender{watch.Webhook: webhook.New(webhook.Config{Timeout: 2 * time.Second})},
		testsvc.Logger(t), prometheus.NewRegistry())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	first := insertArticleUpdate(t, pool, page.ID, "http://news.example/fees", 0)
	testsvc.Eventually(t, 3*time.Minute, "the update sent at once", func() (bool, error) { return len(in.of("/at-once")) == 1, nil })
	if a := in.of("/at-once")[0].update; a.ID != first || a.Article == nil || a.Article.Status != watch.ArticlePending {
		t.Fatalf("sent at once: %+v with article %+v; want update %d, its article pending", a, a.Article, first)
	}
	// Looked at and held several times, and still not sent.
	testsvc.Eventually(t, time.Minute, "the message held", func() (bool, error) { return box.held(waiting.ID) >= 3, nil })
	if got := in.of("/waiting"); len(got) != 0 {
		t.Fatalf("the waiting subscription was sent %+v while the article was pending", got[0].update)
	}

	// The extractor reads the article.
	work, err := st.ClaimArticleWork(ctx, 10, time.Minute)
	if err != nil || len(work) != 1 || work[0].URL != "http://news.example/fees" {
		t.Fatalf("ClaimArticleWork = %+v, %v", work, err)
	}
	if _, err := st.RecordArticle(ctx, work[0], watch.ArticleOutcome{LinkURL: work[0].URL, Article: watch.Article{
		Status: watch.ArticleOK, URL: work[0].URL, Headline: "Ministry cuts fees for permits", Description: "The lead.",
		Body: "The body.", DatePublished: "2026-12-01", Author: []string{"A. Writer"}, FetchedAt: time.Now(),
	}}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, time.Minute, "the held message sent", func() (bool, error) { return len(in.of("/waiting")) == 1, nil })
	if u := in.of("/waiting")[0].update; u.ID != first || u.Article == nil || u.Article.Status != watch.ArticleOK ||
		u.Article.Headline != "Ministry cuts fees for permits" || u.Article.Description != "The lead." || u.Article.Body != "" {
		t.Fatalf("sent after the wait: %+v with article %+v; want the headline and lead, no body", u, u.Article)
	}

	// An update found almost the whole wait ago: its article never comes,
	// and it goes out, pending, when the wait is over.
	const left = 2 * time.Second
	second := insertArticleUpdate(t, pool, page.ID, "http://news.example/slow", wait-left)
	var found time.Time
	if err := pool.QueryRow(ctx, `SELECT discovered_at FROM updates WHERE id = $1`, second).Scan(&found); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 3*time.Minute, "the update sent when its wait was over", func() (bool, error) { return len(in.of("/waiting")) == 2, nil })
	got := in.of("/waiting")[1]
	if got.update.ID != second || got.update.Article == nil || got.update.Article.Status != watch.ArticlePending {
		t.Fatalf("sent after the wait: %+v with article %+v; want update %d, its article pending", got.update, got.update.Article, second)
	}
	if end := found.Add(wait); got.at.Before(end) {
		t.Errorf("update %d sent at %s, %s before its wait ended", second, got.at, end.Sub(got.at))
	}
	if n := len(in.of("/at-once")); n != 2 {
		t.Errorf("the subscription without a wait was sent %d updates, want 2", n)
	}
}

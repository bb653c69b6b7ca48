package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/notify"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func openStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	dsn := testsvc.Postgres(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return st, pool
}

// receiver fails the first attempt of every message with 500 and records
// what it accepted.
type receiver struct {
	t        *testing.T
	secret   string
	mu       sync.Mutex
	attempts map[string]int
	got      map[int64]int
	status   int // when set, every answer
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !verify(rc.secret, r.Header, body) {
		rc.t.Errorf("a request's signature did not verify")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	id := r.Header.Get("webhook-id")
	rc.attempts[id]++
	if rc.status != 0 {
		w.WriteHeader(rc.status)
		return
	}
	if rc.attempts[id] == 1 {
		w.WriteHeader(500)
		return
	}
	var b notify.Body
	json.Unmarshal(body, &b)
	for _, u := range b.Updates {
		rc.got[u.ID]++
	}
}

func (rc *receiver) received() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func startService(t *testing.T, st *store.Store, cfg notify.Config) (stop func()) {
	t.Helper()
	svc := notify.New(cfg, st, map[watch.Channel]notify.Sender{
		watch.Webhook: notify.NewWebhookSender(notify.WebhookConfig{AllowPrivate: true, Timeout: 2 * time.Second}),
	}, testsvc.Logger(t), prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func TestServiceDeliversEveryUpdateAfterFailures(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	rc := &receiver{t: t, secret: notify.NewSecret(), attempts: map[string]int{}, got: map[int64]int{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var pages []int64
	for _, u := range []string{"http://a.example/", "http://b.example/", "http://c.example/"} {
		p, err := st.AddPage(ctx, store.NewPage{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p.ID)
	}
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: rc.secret}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: rc.secret, PageID: pages[0]}); err != nil {
		t.Fatal(err)
	}
	stop := startService(t, st, notify.Config{Concurrency: 3, PollInterval: 20 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	defer stop()
	const checks = 12
	for i := range checks {
		if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key)
			SELECT $1, 'http://x.example/' || $2 || '/' || g, 't', 'c', hashtext($2 || '/' || g) FROM generate_series(1, 3) g`,
			pages[i%3], fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.Eventually(t, 30*time.Second, "every update received", func() (bool, error) { return rc.received() == checks*3, nil })
	stop = func() {}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	// 12 checks for the all-pages subscription, 4 for page a's, each
	// failed once first.
	if len(rc.attempts) != checks+checks/3 {
		t.Errorf("%d distinct messages, want %d (one per check and subscription)", len(rc.attempts), checks+checks/3)
	}
	for id, n := range rc.attempts {
		if n < 2 {
			t.Errorf("message %s was accepted at attempt %d, but every first attempt failed", id, n)
		}
	}
}

func TestServicePausesAGoneTargetAndLogsIt(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	rc := &receiver{t: t, secret: notify.NewSecret(), attempts: map[string]int{}, got: map[int64]int{}, status: http.StatusGone}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	p, err := st.AddPage(ctx, store.NewPage{URL: "http://a.example/"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: rc.secret})
	if err != nil {
		t.Fatal(err)
	}
	stop := startService(t, st, notify.Config{PollInterval: 20 * time.Millisecond})
	defer stop()
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, 'http://a.example/x', 't', 'c', 1)`, p.ID); err != nil {
		t.Fatal(err)
	}
	var got watch.SubscriptionStatus
	testsvc.Eventually(t, 30*time.Second, "subscription paused", func() (bool, error) {
		list, err := st.Subscriptions(ctx)
		if err != nil || len(list) != 1 {
			return false, err
		}
		got = list[0]
		return !got.PausedAt.IsZero(), nil
	})
	if got.ID != sub.ID || got.Last.Status != watch.Paused || got.Last.ResponseCode != 410 || got.PausedReason != "HTTP 410: Gone" {
		t.Fatalf("paused subscription: %+v", got)
	}
}

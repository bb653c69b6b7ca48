package notifier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// openStore returns a migrated store of the test's own. Deliveries wait
// for the snapshot horizon, which any write transaction open on the shared
// server holds back: the waits below allow for minutes of that.
func openStore(t testing.TB) (*store.Store, *pgxpool.Pool) { return systest.Store(t) }

// receiver fails the first attempt of every message with 500 and records
// what it accepted: the ids of updates and events, and per path the order
// they first came in.
type receiver struct {
	t        *testing.T
	secret   string
	mu       sync.Mutex
	attempts map[string]int
	got      map[int64]int
	order    map[string][]int64
	status   int // when set, every answer
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := webhook.Verify(rc.secret, r.Header, body, time.Now()); err != nil {
		rc.t.Errorf("a request did not verify: %v", err)
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
	var b webhook.Body
	json.Unmarshal(body, &b)
	ids := make([]int64, 0, len(b.Updates)+1)
	for _, u := range b.Updates {
		ids = append(ids, u.ID)
	}
	if b.Event != nil {
		if b.Type != string(b.Event.Kind) {
			rc.t.Errorf("a message of type %s carries a %s event", b.Type, b.Event.Kind)
		}
		ids = append(ids, b.Event.ID)
	}
	for _, id := range ids {
		rc.got[id]++
		if rc.order != nil && !slices.Contains(rc.order[r.URL.Path], id) {
			rc.order[r.URL.Path] = append(rc.order[r.URL.Path], id)
		}
	}
}

// insertEvent is the SQL of one event of page $1 of kind $2, with the
// fields its kind needs, as a check writes it.
const insertEvent = `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text, reason, detail)
	SELECT $1, $2, now(),
		CASE WHEN $2 = 'link.rewritten' THEN 42 END,
		CASE WHEN $2 = 'link.rewritten' THEN 'http://x.example/story' END,
		CASE WHEN $2 = 'link.rewritten' THEN 'Fees up' END,
		CASE WHEN $2 = 'link.rewritten' THEN 'Fees cut' END,
		CASE WHEN $2 = 'page.degraded' THEN 'blocked' END,
		CASE WHEN $2 = 'page.degraded' THEN 'the page answered 403 Forbidden' END`

// truth returns the ids of the updates and the events a subscription is
// sent, in (xact, id) order: of page (an id, or "" for every page), and
// the events of kinds (an array, or "" for every kind).
func truth(t *testing.T, pool *pgxpool.Pool, page, kinds string) []int64 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT id FROM (
			SELECT id, xact, page_id FROM updates
			UNION ALL
			SELECT id, xact, page_id FROM events WHERE $2 = '' OR kind = ANY ($2::text[])
		) s WHERE $1 = '' OR page_id = $1::bigint
		ORDER BY xact, id`, page, kinds)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func (rc *receiver) received() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

func startService(t *testing.T, st *store.Store, cfg notifier.Config) (stop func()) {
	t.Helper()
	svc := notifier.New(cfg, st, map[watch.Channel]notifier.Sender{
		watch.Webhook: webhook.New(webhook.Config{Timeout: 2 * time.Second}),
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

// TestServiceDeliversEveryUpdateAfterFailures: a receiver that fails the
// first attempt of every message is sent every update and every event of
// the kinds each subscription asked for, at least once and in the order
// their checks committed, one message per check and one per event.
func TestServiceDeliversEveryUpdateAfterFailures(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	rc := &receiver{t: t, secret: watch.NewWebhookSecret(), attempts: map[string]int{}, got: map[int64]int{}, order: map[string][]int64{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var pages []int64
	for _, u := range []string{"http://a.example/", "http://b.example/", "http://c.example/"} {
		p, err := st.CreatePage(ctx, watch.PageSpec{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, p.ID)
	}
	// Every page, with two kinds of event (not page.recovered); page a,
	// with every kind.
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + "/all", Secret: rc.secret,
		Events: []watch.EventKind{watch.LinkRewritten, watch.PageDegraded}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + "/page", Secret: rc.secret, PageID: pages[0],
		Events: watch.EventKinds}); err != nil {
		t.Fatal(err)
	}
	stop := startService(t, st, notifier.Config{Concurrency: 3, PollInterval: 20 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	defer stop()
	// Each check writes 3 updates and then an event, in one transaction;
	// the kinds take turns every 3 checks, so page a has one of each.
	const checks = 12
	for i := range checks {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key)
				SELECT $1, 'http://x.example/' || $2 || '/' || g, 't', 'c', hashtext($2 || '/' || g) FROM generate_series(1, 3) g`,
				pages[i%3], fmt.Sprint(i)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, insertEvent, pages[i%3], watch.EventKinds[(i/3)%3])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]int64{"/all": truth(t, pool, "", "{link.rewritten,page.degraded}"), "/page": truth(t, pool, fmt.Sprint(pages[0]), "")}
	if n := len(want["/all"]) + len(want["/page"]); n != checks*3+9+4*3+4 {
		t.Fatalf("the checks wrote %d updates and events in the two scopes", n)
	}
	testsvc.Eventually(t, 3*time.Minute, "every update and event received", func() (bool, error) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return len(rc.order["/all"]) >= len(want["/all"]) && len(rc.order["/page"]) >= len(want["/page"]), nil
	})
	stop = func() {}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for path, ids := range want {
		if !slices.Equal(rc.order[path], ids) {
			t.Errorf("%s received %v, want %v: each once at least, in the order of their checks", path, rc.order[path], ids)
		}
	}
	// 12 checks and 9 events for the all-pages subscription, 4 checks and
	// 4 events for page a's, each failed once first.
	if want := checks + 9 + checks/3 + 4; len(rc.attempts) != want {
		t.Errorf("%d distinct messages, want %d (one per check or event and subscription)", len(rc.attempts), want)
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
	rc := &receiver{t: t, secret: watch.NewWebhookSecret(), attempts: map[string]int{}, got: map[int64]int{}, status: http.StatusGone}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://a.example/"})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: rc.secret})
	if err != nil {
		t.Fatal(err)
	}
	stop := startService(t, st, notifier.Config{PollInterval: 20 * time.Millisecond})
	defer stop()
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, 'http://a.example/x', 't', 'c', 1)`, p.ID); err != nil {
		t.Fatal(err)
	}
	var got watch.SubscriptionStatus
	testsvc.Eventually(t, 3*time.Minute, "subscription paused", func() (bool, error) {
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

func TestServiceServesEverySubscriptionInTurn(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	var order []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order = append(order, r.URL.Path)
		mu.Unlock()
	}))
	defer srv.Close()
	busy, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://busy.example/"})
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://quiet.example/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		path string
		page int64
	}{{"/busy", busy.ID}, {"/quiet", quiet.ID}} {
		if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL + s.path, Secret: watch.NewWebhookSecret(), PageID: s.page}); err != nil {
			t.Fatal(err)
		}
	}
	// 30 checks of the busy page, then one of the quiet one.
	for i := range 30 {
		if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, $2, 't', 'c', $3)`,
			busy.ID, fmt.Sprintf("http://busy.example/%d", i), i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, 'http://quiet.example/1', 't', 'c', 1)`, quiet.ID); err != nil {
		t.Fatal(err)
	}
	// A notifier sees an update once every transaction older than it has
	// ended (the snapshot horizon). On a server shared with other tests the
	// busy page's rows could pass it one by one, ahead of the quiet one's:
	// start when all 31 are visible, so the order shows the claims only.
	testsvc.Eventually(t, 3*time.Minute, "the updates under the snapshot horizon", func() (bool, error) {
		var visible bool
		err := pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot()) > max(xact) FROM updates`).Scan(&visible)
		return visible, err
	})
	stop := startService(t, st, notifier.Config{Concurrency: 1, PollInterval: 20 * time.Millisecond})
	defer stop()
	testsvc.Eventually(t, 3*time.Minute, "all 31 messages", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 31, nil
	})
	mu.Lock()
	defer mu.Unlock()
	// One batch per claim, longest-waiting first: the quiet subscription
	// waits for at most one of the busy one's messages, not all 30.
	if i := slices.Index(order, "/quiet"); i < 0 || i > 2 {
		t.Fatalf("the quiet subscription was served at position %d of %v: starved", i, order)
	}
}

func TestServiceStopReleasesWhatItCannotFinish(t *testing.T) {
	t.Parallel()
	st, pool := openStore(t)
	ctx := context.Background()
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler
	p, err := st.CreatePage(ctx, watch.PageSpec{URL: "http://a.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: watch.NewWebhookSecret()}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, 'http://a.example/x', 't', 'c', 1)`, p.ID); err != nil {
		t.Fatal(err)
	}
	svc := notifier.New(notifier.Config{PollInterval: 20 * time.Millisecond, Lease: time.Hour, DrainTimeout: 200 * time.Millisecond}, st,
		map[watch.Channel]notifier.Sender{watch.Webhook: webhook.New(webhook.Config{Timeout: time.Minute})},
		testsvc.Logger(t), prometheus.NewRegistry())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	select {
	case <-entered:
	case <-time.After(3 * time.Minute): // the horizon may be held back (see openStore)
		t.Fatal("no delivery started")
	}
	stopped := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the drain timeout")
	}
	if took := time.Since(stopped); took > 5*time.Second {
		t.Errorf("stop took %s with a 200ms drain timeout", took)
	}
	// Released, not failed: claimable at once despite the hour-long
	// lease, with no attempt counted.
	leases, err := st.ClaimSubscriptions(ctx, 1, time.Minute)
	if err != nil || len(leases) != 1 || leases[0].Attempts != 0 {
		t.Fatalf("after the stop: leases %+v, %v; want the subscription free with no attempt", leases, err)
	}
}

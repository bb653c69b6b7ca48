package notifier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
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

// benchSubscriptions is how many page-scoped webhook subscriptions the
// benchmarks spread checks over: a subscription is served one message at a
// time, so throughput needs several.
const benchSubscriptions = 16

// latencyReceiver records, per update, the time from its discovered_at to
// its first arrival.
type latencyReceiver struct {
	mu   sync.Mutex
	lags []time.Duration
	seen map[int64]bool
}

func (rc *latencyReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	var msg webhook.Body
	json.Unmarshal(body, &msg)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, u := range msg.Updates {
		if !rc.seen[u.ID] {
			rc.seen[u.ID] = true
			rc.lags = append(rc.lags, now.Sub(u.DiscoveredAt))
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *latencyReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

type benchWorld struct {
	st    *store.Store
	pool  *pgxpool.Pool
	pages []int64
	rc    *latencyReceiver
	n     int
}

// newBenchWorld makes benchSubscriptions pages, each with a subscription
// to one loopback receiver.
//
// With PORTALWATCH_BENCH_PRIVATE_PG=true it runs on a PostgreSQL server of
// its own: on a shared one, other clients' open transactions hold the
// snapshot horizon, and so the delivery of every update, back.
func newBenchWorld(b *testing.B) *benchWorld {
	b.Helper()
	if os.Getenv("PORTALWATCH_BENCH_PRIVATE_PG") == "true" {
		b.Setenv("PORTALWATCH_TEST_POSTGRES", testsvc.StartPostgres(b).AdminURL())
	}
	st, pool := openStore(b)
	w := &benchWorld{st: st, pool: pool, rc: &latencyReceiver{seen: map[int64]bool{}}}
	srv := httptest.NewServer(w.rc)
	b.Cleanup(srv.Close)
	ctx := context.Background()
	for i := range benchSubscriptions {
		p, err := st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("http://portal%d.example/", i)})
		if err != nil {
			b.Fatal(err)
		}
		w.pages = append(w.pages, p.ID)
		if _, err := st.AddSubscription(ctx, watch.Subscription{Channel: watch.Webhook, Target: srv.URL, Secret: watch.NewWebhookSecret(), PageID: p.ID}); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// check commits one check of one update on the next page in turn.
func (w *benchWorld) check(b *testing.B) {
	w.n++
	if _, err := w.pool.Exec(context.Background(), `INSERT INTO updates (page_id, url, text, code, link_key) VALUES ($1, $2, 'story', 'c', $3)`,
		w.pages[w.n%len(w.pages)], "http://x.example/"+strconv.Itoa(w.n), w.n); err != nil {
		b.Fatal(err)
	}
}

func (w *benchWorld) run(b *testing.B) (stop func()) {
	svc := notifier.New(notifier.Config{Concurrency: 8, PollInterval: 20 * time.Millisecond}, w.st,
		map[watch.Channel]notifier.Sender{watch.Webhook: webhook.New(webhook.Config{})},
		quietLogger(), prometheus.NewRegistry())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { svc.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// BenchmarkNotifierDeliveries measures messages delivered per second to a
// loopback receiver: b.N checks of one update each, committed before the
// notifier starts, spread over 16 subscriptions, one notifier of
// concurrency 8.
func BenchmarkNotifierDeliveries(b *testing.B) {
	w := newBenchWorld(b)
	for range b.N {
		w.check(b)
	}
	b.ResetTimer()
	stop := w.run(b)
	testsvc.Eventually(b, 10*time.Minute, "every message delivered", func() (bool, error) { return w.rc.count() == b.N, nil })
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkNotifierLatency commits checks at PORTALWATCH_BENCH_RATE per
// second (default 100) for 20 s while the notifier runs, and reports the
// median and p99 time from an update's discovered_at to its arrival.
func BenchmarkNotifierLatency(b *testing.B) {
	rate := 100
	if v, err := strconv.Atoi(os.Getenv("PORTALWATCH_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	for range b.N {
		w := newBenchWorld(b)
		stop := w.run(b)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		end := time.Now().Add(20 * time.Second)
		sent := 0
		for time.Now().Before(end) {
			<-tick.C
			w.check(b)
			sent++
		}
		tick.Stop()
		testsvc.Eventually(b, time.Minute, "every message delivered", func() (bool, error) { return w.rc.count() == sent, nil })
		stop()
		w.rc.mu.Lock()
		lags := slices.Clone(w.rc.lags)
		w.rc.mu.Unlock()
		slices.Sort(lags)
		b.ReportMetric(float64(rate), "checks/s")
		b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "p50-ms")
		b.ReportMetric(float64(lags[len(lags)*99/100].Milliseconds()), "p99-ms")
	}
}

// quietLogger drops the benchmark's logs: a line per delivery would cost
// more than the delivery.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// frontier is a scheduler on its own database, job queue and Redis prefix,
// with the gate it books in.
type frontier struct {
	svc  *scheduler.Service
	gate *hostgate.Gate
	pool *pgxpool.Pool
	jobQ string
}

func newFrontier(t *testing.T, cfg scheduler.Config) *frontier {
	t.Helper()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	f := &frontier{}
	if f.pool, err = pgxpool.New(ctx, dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.pool.Close)
	f.jobQ, _ = testsvc.Queues(t)
	pub, err := queue.NewPublisher(queue.Config{URL: testsvc.AMQPURL()}, testsvc.Logger(t), f.jobQ)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	url, prefix := testsvc.Redis(t)
	if f.gate, err = hostgate.Open(url, hostgate.Config{Prefix: prefix}, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.gate.Close() })
	cfg.Queue = f.jobQ
	if f.svc, err = scheduler.New(cfg, st, f.gate, pub, testsvc.Logger(t), prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	return f
}

// jobs takes every job from the queue.
func (f *frontier) jobs(t *testing.T) []watch.Job {
	t.Helper()
	conn, err := amqp.Dial(testsvc.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []watch.Job
	for {
		d, ok, err := ch.Get(f.jobQ, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return jobs
		}
		j, err := watch.DecodeJob(d.Body)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
}

// Ten due pages of one origin with a 1 s spacing and a 2 s horizon: one
// round dispatches the three whose slots lie within the horizon (now, +1 s,
// +2 s), each carrying its slot, in slot order; the other seven stay
// undispatched and unleased, due again a spacing apart from when the
// origin's next free slot is within the horizon. Pages of other origins
// are dispatched at once, and an origin's Crawl-delay, learned by a
// crawler, spaces its slots.
func TestFrontierBooksSlotsAndPostponesTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFrontier(t, scheduler.Config{BatchSize: 100, HostSpacing: time.Second, Horizon: 2 * time.Second})
	const busy = "http://busy.example"
	// A crawler read a Crawl-delay of 3 s on slow.example.
	if _, booked := f.gate.Reserve(ctx, "http://slow.example", 3*time.Second, 3*time.Second, time.Minute); !booked {
		t.Fatal("the crawler's booking failed")
	}
	var urls []string
	for i := range 10 {
		urls = append(urls, fmt.Sprintf("%s/p%d", busy, i))
	}
	urls = append(urls, "http://a.example/", "http://b.example/", "http://slow.example/1", "http://slow.example/2")
	if _, err := f.pool.Exec(ctx, `INSERT INTO pages (base_url, check_interval, next_check_at)
		SELECT u, interval '1 hour', now() - interval '1 minute' + n * interval '1 ms' FROM unnest($1::text[]) WITH ORDINALITY AS x(u, n)`, urls); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	n, err := f.svc.Round(ctx)
	if err != nil || n != len(urls) {
		t.Fatalf("Round = %d, %v; want all %d claimed", n, err, len(urls))
	}
	jobs := f.jobs(t)
	var slots []time.Time
	others := map[string]bool{}
	for i, j := range jobs {
		if j.Slot == nil {
			t.Fatalf("job %d (%s) carries no slot", i, j.BaseURL)
		}
		if i > 0 && j.Slot.At.Before(jobs[i-1].Slot.At) {
			t.Errorf("job %d's slot %s is before its predecessor's: jobs must go out in slot order", i, j.Slot.At)
		}
		origin, _ := watch.Origin(j.BaseURL)
		switch origin {
		case busy:
			slots = append(slots, j.Slot.At)
			if j.Slot.Spacing != time.Second {
				t.Errorf("%s: spacing %s, want 1s", j.BaseURL, j.Slot.Spacing)
			}
		case "http://slow.example":
			t.Errorf("%s dispatched with slot %+v; its next slot is 3 s after the crawler's fetch, beyond the horizon", j.BaseURL, j.Slot)
		default:
			others[origin] = true
			if d := j.Slot.At.Sub(start); d > 500*time.Millisecond {
				t.Errorf("%s: slot %s from now, want at once", j.BaseURL, d)
			}
		}
	}
	if len(slots) != 3 || len(others) != 2 {
		t.Fatalf("dispatched %d jobs of the busy origin and %v others; want 3 and a.example and b.example", len(slots), others)
	}
	for i, s := range slots {
		// Redis's clock books; allow the round's own time around it.
		if d := s.Sub(start); d < time.Duration(i)*time.Second-200*time.Millisecond || d > time.Duration(i)*time.Second+500*time.Millisecond {
			t.Errorf("busy slot %d is %s from the round; want about %ds", i, d, i)
		}
	}

	// Each origin's next free slot is 3 s away; its first postponed page
	// is due when that slot is within the 2 s horizon, the others a
	// spacing apart: 1 s on busy.example, the 3 s Crawl-delay on
	// slow.example.
	for _, o := range []struct {
		origin  string
		n       int
		spacing time.Duration
	}{{busy, 7, time.Second}, {"http://slow.example", 2, 3 * time.Second}} {
		postponed := f.postponed(t, o.origin)
		if len(postponed) != o.n {
			t.Fatalf("%d of %s's pages are due within 30 minutes, want the %d postponed", len(postponed), o.origin, o.n)
		}
		for i, at := range postponed {
			want := time.Second + time.Duration(i)*o.spacing
			if d := at.Sub(start); d < want-300*time.Millisecond || d > want+700*time.Millisecond {
				t.Errorf("%s: postponed page %d is due %s after the round; want about %s", o.origin, i, d, want)
			}
		}
	}
}

// postponed returns when origin's pages that are due within 30 minutes are
// due, in order, and fails the test if one of them is leased: a postponed
// page must be free to be claimed at its time.
func (f *frontier) postponed(t *testing.T, origin string) []time.Time {
	t.Helper()
	rows, err := f.pool.Query(context.Background(), `SELECT next_check_at, lease_until IS NULL FROM pages
		WHERE base_url LIKE $1 AND next_check_at < now() + interval '30 minutes' ORDER BY next_check_at`, origin+"/%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var due []time.Time
	for rows.Next() {
		var at time.Time
		var unleased bool
		if err := rows.Scan(&at, &unleased); err != nil {
			t.Fatal(err)
		}
		if !unleased {
			t.Errorf("a postponed page of %s is leased", origin)
		}
		due = append(due, at)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return due
}

// Without a spacing the scheduler books nothing: jobs carry no slot, as
// before slots existed, and the crawlers pace on their own.
func TestNoSpacingBooksNoSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFrontier(t, scheduler.Config{BatchSize: 100})
	if _, err := f.pool.Exec(ctx, `INSERT INTO pages (base_url) SELECT 'http://one.example/p' || g FROM generate_series(1, 5) g`); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.Round(ctx); err != nil || n != 5 {
		t.Fatalf("Round = %d, %v; want 5", n, err)
	}
	jobs := f.jobs(t)
	if len(jobs) != 5 {
		t.Fatalf("%d jobs published, want 5", len(jobs))
	}
	for _, j := range jobs {
		if j.Slot != nil {
			t.Errorf("job of %s carries slot %+v; want none", j.BaseURL, j.Slot)
		}
	}
}

// A page and its feed on one origin: the homepage takes the origin's slot
// now and the next ones within the horizon; the feed, of the class below,
// takes only a slot free now, so it is postponed (unleased, due when the
// origin frees) rather than booked ahead of the homepage. A feed on an
// origin of its own goes out at once, with its slot.
func TestSourcesBookBelowTheHomepage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFrontier(t, scheduler.Config{BatchSize: 100, HostSpacing: time.Second, Horizon: 2 * time.Second})
	var page int64
	if err := f.pool.QueryRow(ctx, `INSERT INTO pages (base_url, sources) VALUES ('http://portal.example/', '{homepage,feeds}') RETURNING id`).Scan(&page); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE pages SET sources_discovered_at = now() WHERE id = $1`,
		`INSERT INTO sources (page_id, kind, url) VALUES ($1, 'feed', 'http://portal.example/rss'), ($1, 'feed', 'http://feeds.example/portal')`} {
		if _, err := f.pool.Exec(ctx, sql, page); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Round(ctx); err != nil {
		t.Fatal(err)
	}
	jobs := f.jobs(t)
	var home, elsewhere bool
	for _, j := range jobs {
		switch {
		case j.Source == nil && j.BaseURL == "http://portal.example/":
			home = j.Slot != nil
		case j.Source != nil && j.Source.URL == "http://feeds.example/portal":
			elsewhere = j.Slot != nil && j.PageURL == "http://portal.example/"
		default:
			t.Errorf("job %+v: the feed on the homepage's origin went out beside the homepage's check", j)
		}
	}
	if !home || !elsewhere {
		t.Fatalf("jobs %+v: want the homepage's check and the feed of the other origin, each with a slot", jobs)
	}
	var leased bool
	var due time.Time
	if err := f.pool.QueryRow(ctx, `SELECT lease_until IS NOT NULL, next_check_at FROM sources WHERE url = 'http://portal.example/rss'`).Scan(&leased, &due); err != nil {
		t.Fatal(err)
	}
	if leased || !due.After(time.Now().Add(-time.Second)) {
		t.Fatalf("the postponed feed: leased %t, due %v; want unleased and due when its origin frees", leased, due)
	}
}

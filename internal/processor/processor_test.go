package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type fixture struct {
	svc   *processor.Service
	st    *store.Store
	db    *pgxpool.Pool // for what watch.Page does not show
	rdb   *redis.Client
	pfx   string
	page  watch.Page
	clock time.Time
	reg   *prometheus.Registry // the service's metrics
}

func newFixture(t *testing.T, redisURL string) *fixture {
	t.Helper()
	return newFixtureWith(t, redisURL, processor.Config{})
}

func newFixtureWith(t *testing.T, redisURL string, cfg processor.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	st, err := store.Open(ctx, dsn, store.GenericPlans()) // as cmd/processor
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	liveURL, prefix := testsvc.Redis(t)
	if redisURL == "" {
		redisURL = liveURL
	}
	set, err := seen.Open(redisURL, seen.Config{Prefix: prefix, Epoch: "e", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	opts, _ := redis.ParseURL(liveURL)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	page, err := st.CreatePage(ctx, watch.PageSpec{URL: "https://portal.example/"})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	svc, err := processor.New(cfg, st, set, testsvc.Logger(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &fixture{svc: svc, st: st, db: pool, rdb: rdb, pfx: prefix, page: page, clock: time.Now(), reg: reg}
}

func (f *fixture) deliver(t *testing.T, task watch.Task) {
	t.Helper()
	f.clock = f.clock.Add(time.Second)
	if task.FetchedAt.IsZero() {
		task.FetchedAt = f.clock
	}
	body, _ := json.Marshal(task)
	if err := f.svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		t.Fatalf("Handle: %v", err)
	}
}

func (f *fixture) task(paths ...string) watch.Task {
	t := watch.Task{BaseURL: f.page.BaseURL, ID: f.page.ID, Status: 200}
	for _, p := range paths {
		t.Context = append(t.Context, watch.Link{URL: "https://portal.example" + p, Text: "Story " + p})
	}
	return t
}

func (f *fixture) updates(t *testing.T) []string {
	t.Helper()
	ups, err := f.st.QueryUpdates(context.Background(), watch.UpdateFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, u := range ups {
		urls = append(urls, u.URL)
	}
	return urls
}

func TestRedisFlushCausesNoFalseAndNoMissedUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a", "/b"))
	f.deliver(t, f.task("/a", "/b", "/c"))
	if err := f.rdb.Del(context.Background(), f.rdb.Keys(context.Background(), f.pfx+":*").Val()...).Err(); err != nil {
		t.Fatal(err)
	}
	f.deliver(t, f.task("/a", "/b", "/c", "/d"))
	f.deliver(t, f.task("/a", "/b", "/c", "/d"))
	if got := fmt.Sprint(f.updates(t)); got != "[https://portal.example/d https://portal.example/c]" {
		t.Fatalf("updates after a Redis flush = %s, want /d and /c once each", got)
	}
}

func TestWorksWithRedisDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "redis://127.0.0.1:1/0")
	f.deliver(t, f.task("/a"))
	f.deliver(t, f.task("/a", "/b"))
	f.deliver(t, f.task("/a", "/b"))
	if got := fmt.Sprint(f.updates(t)); got != "[https://portal.example/b]" {
		t.Fatalf("updates with Redis down = %s, want /b once", got)
	}
}

func TestRedeliveredTaskChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a"))
	again := f.task("/a", "/b")
	again.FetchedAt = f.clock.Add(time.Second)
	f.deliver(t, again)
	f.deliver(t, again)
	if got := fmt.Sprint(f.updates(t)); got != "[https://portal.example/b]" {
		t.Fatalf("updates after a redelivery = %s, want /b once", got)
	}
}

func TestFailedAndNotModifiedChecks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	failed := f.task()
	failed.Status, failed.Error = 0, "dial tcp: connection refused"
	f.deliver(t, failed)
	p, _ := f.st.Page(context.Background(), f.page.ID)
	if p.LastError != "dial tcp: connection refused" || !p.BaselineAt.IsZero() {
		t.Fatalf("page after a failed check = %+v", p)
	}
	f.deliver(t, f.task("/a"))
	notModified := f.task()
	notModified.Status = 304
	f.deliver(t, notModified)
	p, _ = f.st.Page(context.Background(), f.page.ID)
	if p.LastStatus != 304 || p.LastError != "" || len(f.updates(t)) != 0 {
		t.Fatalf("page after a 304 = %+v, updates %v", p, f.updates(t))
	}
}

func TestMalformedTaskIsPermanent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	for _, body := range []string{`not json`, `{"baseUrl":"https://x/"}`, `{"id":5}`, `{"id":-1,"baseUrl":"x"}`} {
		err := f.svc.Handle(context.Background(), watch.Delivery{Body: []byte(body)})
		if !watch.IsPermanent(err) {
			t.Errorf("Handle(%s) = %v, want a permanent error (dead letter)", body, err)
		}
	}
}

func TestTaskForRemovedPageIsAcked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	task := f.task("/a")
	task.ID = 999
	body, _ := json.Marshal(task)
	if err := f.svc.Handle(context.Background(), watch.Delivery{Body: body}); err != nil {
		t.Fatalf("Handle of a removed page's task = %v, want nil (acked)", err)
	}
}

func TestHostileTextIsStoredSafely(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a"))
	task := f.task("/a")
	task.Context = append(task.Context, watch.Link{URL: "https://portal.example/nul", Text: "bad\x00text\xff"})
	f.deliver(t, task)
	ups, _ := f.st.QueryUpdates(context.Background(), watch.UpdateFilter{})
	if len(ups) != 1 || ups[0].Text != "badtext\uFFFD" {
		t.Fatalf("updates = %+v, want the NUL removed and the invalid byte replaced", ups)
	}
}

func TestLinkSetDigestTravelsToTheNextJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	f.deliver(t, f.task("/a", "/b"))
	var jobs []watch.Job
	claim := func() watch.Job {
		t.Helper()
		jobs = nil
		_, err := f.st.ClaimDue(context.Background(), watch.ClaimParams{Limit: 10, Lease: time.Minute},
			func(_ context.Context, js []watch.Job) ([]watch.Postponed, error) {
				jobs = append(jobs, js...)
				return nil, nil
			})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("ClaimDue: %v, %d jobs", err, len(jobs))
		}
		return jobs[0]
	}
	job := claim()
	want := shortlink.SetDigest([]string{"https://portal.example/a", "https://portal.example/b"}, []string{"Story /a", "Story /b"})
	if job.LinksDigest != want {
		t.Fatalf("job digest %q, want the digest of the recorded link set %q", job.LinksDigest, want)
	}

	// The crawler found the same set: the check is recorded, nothing else.
	unchanged := f.task()
	unchanged.Unchanged = true
	f.deliver(t, unchanged)
	p, _ := f.st.Page(context.Background(), f.page.ID)
	if p.LastStatus != 200 || p.LastError != "" || len(f.updates(t)) != 0 {
		t.Fatalf("after an unchanged check: %+v, updates %v", p, f.updates(t))
	}
}

// allUpdates reads every update of the test's database, newest first, a
// page of results at a time.
func allUpdates(t *testing.T, st *store.Store) []watch.Update {
	t.Helper()
	var all []watch.Update
	f := watch.UpdateFilter{Limit: watch.MaxUpdatesLimit}
	for {
		page, err := st.QueryUpdates(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < f.Limit {
			return all
		}
		f.After = watch.CursorOf(page[len(page)-1])
	}
}

package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestRenderedPagesGoToTheRenderQueue: the job of a page with render set
// goes to the render queue, with its wait-for selector; the others to the
// job queue, as before.
func TestRenderedPagesGoToTheRenderQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testsvc.Postgres(t)
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	pool, _ := pgxpool.New(ctx, dsn)
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url, render, wait_for) VALUES
		('https://plain1.example/', false, NULL), ('https://scripted.example/', true, '#news a'), ('https://plain2.example/', false, NULL)`); err != nil {
		t.Fatal(err)
	}
	// The test's task queue name serves as its render queue: a name of
	// its own, removed after it.
	jobQ, renderQ := testsvc.Queues(t)
	pub, err := queue.NewPublisher(queue.Config{URL: testsvc.AMQPURL()}, testsvc.Logger(t), jobQ, renderQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	svc, err := scheduler.New(scheduler.Config{Queue: jobQ, RenderQueue: renderQ}, st, nil, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Round(ctx); err != nil || n != 3 {
		t.Fatalf("Round = %d, %v; want the 3 pages", n, err)
	}
	testsvc.WaitDepth(t, 10*time.Second, jobQ, 2)
	testsvc.WaitDepth(t, 10*time.Second, renderQ, 1)
	conn, err := amqp.Dial(testsvc.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	d, ok, err := ch.Get(renderQ, true)
	if err != nil || !ok {
		t.Fatalf("get the render job: %v", err)
	}
	job, err := watch.DecodeJob(d.Body)
	if err != nil || job.BaseURL != "https://scripted.example/" || !job.Render || job.WaitFor != "#news a" {
		t.Fatalf("render job %s: %v; want the scripted page's, with render and its selector", d.Body, err)
	}
	for range 2 {
		d, ok, err := ch.Get(jobQ, true)
		if err != nil || !ok {
			t.Fatalf("get a job: %v", err)
		}
		if job, err := watch.DecodeJob(d.Body); err != nil || job.Render || job.WaitFor != "" {
			t.Fatalf("job %s: %v; want a plain page's", d.Body, err)
		}
	}
}

package scheduler_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
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

func TestPlainSQLPagesArePublishedOnceWhileInFlight(t *testing.T) {
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
	if _, err := pool.Exec(ctx, `INSERT INTO pages (base_url) SELECT 'https://p' || g || '.example/' FROM generate_series(1, 1200) g`); err != nil {
		t.Fatal(err)
	}
	jobQ, _ := testsvc.Queues(t)
	pub, err := queue.NewPublisher(queue.Config{URL: testsvc.AMQPURL()}, testsvc.Logger(t), jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	claims := &countingClaimer{Claimer: st}
	svc, err := scheduler.New(scheduler.Config{Queue: jobQ, BatchSize: 500, PollInterval: 20 * time.Millisecond},
		claims, nil, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- svc.Run(runCtx) }()
	// All 1,200 are due; every one is published once, and as their jobs are
	// in flight (no task came back) none is published again, however many
	// rounds the scheduler runs over them.
	testsvc.WaitDepth(t, 30*time.Second, jobQ, 1200)
	if _, err := pool.Exec(ctx, `UPDATE pages SET next_check_at = now()`); err != nil { // due again, but leased
		t.Fatal(err)
	}
	// A round under way may have read the pages before the update: three
	// more make at least two that saw them due.
	after := claims.rounds.Load()
	testsvc.Eventually(t, 10*time.Second, "three scheduling rounds over the leased pages", func() (bool, error) {
		return claims.rounds.Load() >= after+3, nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := testsvc.QueueDepth(t, jobQ); n != 1200 {
		t.Fatalf("job queue holds %d jobs, want exactly 1200", n)
	}
	conn, _ := amqp.Dial(testsvc.AMQPURL())
	defer conn.Close()
	ch, _ := conn.Channel()
	d, ok, err := ch.Get(jobQ, true)
	if err != nil || !ok {
		t.Fatalf("get a job: %v", err)
	}
	job, err := watch.DecodeJob(d.Body)
	if err != nil || job.ScheduledAt.IsZero() || d.DeliveryMode != amqp.Persistent {
		t.Fatalf("job %s: %v; want a persistent, decodable job with scheduledAt", d.Body, err)
	}
	var raw map[string]any
	json.Unmarshal(d.Body, &raw)
	if _, ok := raw["baseUrl"]; !ok {
		t.Errorf("job %s lacks baseUrl", d.Body)
	}
}

// countingClaimer counts the scheduler's rounds: each round claims once.
type countingClaimer struct {
	scheduler.Claimer
	rounds atomic.Int64
}

func (c *countingClaimer) ClaimDue(ctx context.Context, p watch.ClaimParams,
	dispatch func(context.Context, []watch.Job) ([]watch.Postponed, error),
) (watch.Claimed, error) {
	c.rounds.Add(1)
	return c.Claimer.ClaimDue(ctx, p, dispatch)
}

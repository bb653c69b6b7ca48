package scheduler_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestPlainSQLPagesArePublishedOnceWhileInFlight(t *testing.T) {
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
	pub := queue.NewPublisher(queue.Config{URL: testsvc.AMQPURL()}, testsvc.Logger(t), jobQ)
	defer pub.Close()
	svc := scheduler.New(scheduler.Config{Queue: jobQ, BatchSize: 500, PollInterval: 20 * time.Millisecond},
		st, pub, testsvc.Logger(t), prometheus.NewRegistry())

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- svc.Run(runCtx) }()
	// All 1,200 are due; every one is published once, and as their jobs are
	// in flight (no task came back) none is published again, however long
	// the scheduler runs.
	deadline := time.Now().Add(30 * time.Second)
	for depth(t, jobQ) < 1200 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pool.Exec(ctx, `UPDATE pages SET next_check_at = now()`) // due again, but leased
	time.Sleep(300 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if n := depth(t, jobQ); n != 1200 {
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

func depth(t *testing.T, q string) int {
	t.Helper()
	conn, err := amqp.Dial(testsvc.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, _ := conn.Channel()
	info, err := ch.QueueDeclarePassive(q, true, false, false, false, nil)
	if err != nil {
		return 0
	}
	return info.Messages
}

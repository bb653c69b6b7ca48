//go:build chaos

package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// The negative controls wire one step in the wrong order, as the fault
// matrix's controls 3 and 5 do, crash at that step, and show that the very
// same farm and checker then find lost links. If they found none, the suite
// would have no teeth.

// TestNegativeControlRedisBeforeCommit marks links as seen in Redis before
// PostgreSQL commits them, then crashes in between for some tasks: the
// redelivered task finds every link "seen" and records nothing.
func TestNegativeControlRedisBeforeCommit(t *testing.T) {
	w := newWorld(t, servers{})
	farm := systest.NewFarm(t, 20)
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{"scheduler": "scheduler", "crawler": "crawler"}, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, w.sys.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	epoch, err := st.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	set, err := seen.Open(w.redis.URL(), seen.Config{Prefix: w.sys.Prefix, Epoch: epoch})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	log := testsvc.Logger(t)
	var crashes atomic.Int64
	// The processor's steps in the wrong order: Redis is told "seen" before
	// PostgreSQL commits.
	wrong := func(ctx context.Context, d watch.Delivery) error {
		task, err := watch.DecodeTask(d.Body)
		if err != nil {
			return watch.Permanent(err)
		}
		var (
			links []watch.NewLink
			codes []uint64
		)
		for _, l := range task.Context {
			key := shortlink.Key(l.URL)
			links = append(links, watch.NewLink{Key: key, URL: l.URL, Text: l.Text, Code: shortlink.Code(key, shortlink.DefaultLength)})
			codes = append(codes, shortlink.CodeValue(key, shortlink.DefaultLength))
		}
		known, err := set.Seen(ctx, task.ID, codes)
		if err != nil {
			return err
		}
		var candidates []watch.NewLink
		var fresh []uint64
		for i := range links {
			if !known[i] {
				candidates, fresh = append(candidates, links[i]), append(fresh, codes[i])
			}
		}
		if err := set.Add(ctx, task.ID, fresh); err != nil { // WRONG: before the commit
			return err
		}
		if rand.IntN(10) < 3 {
			crashes.Add(1)
			return errors.New("simulated crash between the Redis write and the PostgreSQL commit")
		}
		_, err = st.RecordCheck(ctx, watch.Check{PageID: task.ID, FetchedAt: task.FetchedAt, Status: task.Status, Error: task.Error}, candidates)
		return err
	}
	qcfg := queue.Config{URL: w.mq.URL()}
	pub, err := queue.NewPublisher(qcfg, log, w.sys.TaskQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	consumer, err := queue.NewConsumer(queue.ConsumerConfig{Config: qcfg, Queue: w.sys.TaskQ, Workers: 4}, log, wrong, pub)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { consumer.Run(ctx) })

	driveCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	if err := farm.Drive(driveCtx, w.sys, ids, 6, 500*time.Millisecond, 20*time.Second, t.Logf); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	v, err := farm.Check(context.Background(), w.sys)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("negative control (Redis before commit, %d simulated crashes): %s", crashes.Load(), v)
	if v.Missing == 0 {
		t.Fatalf("the wrong order lost nothing (%s): the checker cannot see losses", v)
	}
}

// TestNegativeControlAckBeforeConfirm acks each job as it arrives (auto-ack)
// and crashes before publishing the task for some: those checks vanish, the
// pages stay leased, and their transient links are never seen.
func TestNegativeControlAckBeforeConfirm(t *testing.T) {
	w := newWorld(t, servers{})
	farm := systest.NewFarm(t, 20)
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{"scheduler": "scheduler", "processor": "processor"}, nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := testsvc.Logger(t)
	pub, err := queue.NewPublisher(queue.Config{URL: w.mq.URL()}, log, w.sys.TaskQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := crawler.New(crawler.Config{TaskQueue: w.sys.TaskQ}, f, pub, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	var (
		conn       *amqp.Connection
		deliveries <-chan amqp.Delivery
	)
	// Until the scheduler has declared the queue, consuming it fails, and
	// the broker closes the channel. Each try dials a connection of its own:
	// a channel opened on the connection of a failed try has found it
	// closed (Exception 504, seen in CI).
	testsvc.Eventually(t, 30*time.Second, "the job queue to consume", func() (bool, error) {
		c, err := amqp.Dial(w.mq.URL())
		if err != nil {
			return false, err
		}
		ch, err := c.Channel()
		if err == nil {
			deliveries, err = ch.Consume(w.sys.JobQueue, "", true, false, false, false, nil) // WRONG: acked on arrival
		}
		if err != nil {
			c.Close()
			return false, nil
		}
		conn = c
		return true, nil
	})
	defer conn.Close()
	var dropped atomic.Int64
	go func() {
		for d := range deliveries {
			if rand.IntN(10) < 3 {
				dropped.Add(1) // simulated crash after the ack, before the task is confirmed
				continue
			}
			crawlerHandle(ctx, svc, pub, w.sys.TaskQ, d.Body)
		}
	}()

	driveCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
	defer stop()
	if err := farm.Drive(driveCtx, w.sys, ids, 6, 500*time.Millisecond, 5*time.Second, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	v, err := farm.Check(context.Background(), w.sys)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("negative control (ack before confirm, %d jobs dropped after their ack): %d rounds never checked; %s",
		dropped.Load(), farm.TimedOutRounds(), v)
	if v.Missing == 0 {
		t.Fatalf("acking before the confirm lost nothing (%s): the checker cannot see losses", v)
	}
}

func crawlerHandle(ctx context.Context, svc *crawler.Service, pub *queue.Publisher, taskQueue string, body []byte) {
	// The right path from here on: Handle fetches, publishes and waits for
	// the confirm; only the ack came too early.
	svc.Handle(ctx, watch.Delivery{Body: body})
}

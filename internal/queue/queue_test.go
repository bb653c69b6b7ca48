package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/portalwatch/portalwatch/internal/backoff"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func testConfig(limit int) queue.Config {
	return queue.Config{
		URL:           testsvc.AMQPURL(),
		Name:          "queue-test",
		DeliveryLimit: limit,
		Backoff:       backoff.Policy{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond},
	}
}

// collector records every body a handler saw.
type collector struct {
	mu     sync.Mutex
	bodies map[string]int
	seen   chan string
}

func newCollector() *collector {
	return &collector{bodies: map[string]int{}, seen: make(chan string, 10000)}
}

func (c *collector) add(body string) {
	c.mu.Lock()
	c.bodies[body]++
	c.mu.Unlock()
	c.seen <- body
}

func (c *collector) waitFor(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-c.seen:
		case <-timeout:
			t.Fatalf("handled %d of %d messages in 30s", i, n)
		}
	}
}

func runConsumer(t *testing.T, cfg queue.ConsumerConfig, h queue.Handler, dl *queue.Publisher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c, err := queue.NewConsumer(cfg, testsvc.Logger(t), h, dl)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("consumer Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("consumer did not stop within 30s")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestPublishConsumeEveryMessageOnce(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	log := testsvc.Logger(t)
	pub, err := queue.NewPublisher(testConfig(20), log, jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	const n = 500
	msgs := make([]watch.Message, n)
	for i := range msgs {
		msgs[i] = watch.Message{Body: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, jobQ, msgs...); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if err := pub.Health(); err != nil {
		t.Errorf("Health after a publish = %v, want nil", err)
	}

	got := newCollector()
	stop := runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 8, Prefetch: 32},
		func(_ context.Context, d watch.Delivery) error { got.add(string(d.Body)); return nil }, pub)
	got.waitFor(t, n)
	stop()
	for i := range n {
		if c := got.bodies[fmt.Sprintf(`{"n":%d}`, i)]; c != 1 {
			t.Errorf("message %d handled %d times, want 1", i, c)
		}
	}
	if ready := queueDepth(t, jobQ); ready != 0 {
		t.Errorf("%s holds %d messages after all were acked, want 0", jobQ, ready)
	}
}

func TestPermanentErrorGoesToDeadLetterQueueWithReason(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	log := testsvc.Logger(t)
	pub, err := queue.NewPublisher(testConfig(20), log, jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx := context.Background()
	if err := pub.Publish(ctx, jobQ, watch.Message{Body: []byte("not json")}, watch.Message{Body: []byte("good")}); err != nil {
		t.Fatal(err)
	}
	got := newCollector()
	runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 2},
		func(_ context.Context, d watch.Delivery) error {
			got.add(string(d.Body))
			if string(d.Body) == "not json" {
				return watch.Permanent(errors.New("job is not JSON"))
			}
			return nil
		}, pub)
	got.waitFor(t, 2)

	d := getOne(t, queue.DeadLetterQueue(jobQ))
	if string(d.Body) != "not json" {
		t.Fatalf("dead letter body = %q, want %q", d.Body, "not json")
	}
	if r := d.Headers[queue.HeaderReason]; r != "job is not JSON" {
		t.Errorf("dead letter reason = %v, want %q", r, "job is not JSON")
	}
	if got.bodies["not json"] != 1 {
		t.Errorf("malformed message handled %d times, want once: it must not be retried", got.bodies["not json"])
	}
}

func TestMessageThatAlwaysFailsIsDeadLetteredAfterTheLimit(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	const limit = 3
	pub, err := queue.NewPublisher(testConfig(limit), testsvc.Logger(t), jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx := context.Background()
	if err := pub.Publish(ctx, jobQ, watch.Message{Body: []byte("poison")}); err != nil {
		t.Fatal(err)
	}
	got := newCollector()
	runConsumer(t, queue.ConsumerConfig{Config: testConfig(limit), Queue: jobQ, Workers: 1},
		func(_ context.Context, d watch.Delivery) error {
			got.add(string(d.Body))
			if string(d.Body) == "poison" {
				panic("poison pill")
			}
			return nil
		}, pub)
	got.waitFor(t, limit+1)
	// The consumer keeps serving everything else.
	if err := pub.Publish(ctx, jobQ, watch.Message{Body: []byte("healthy")}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the poison message reaches the dead-letter queue", func() bool {
		return queueDepth(t, queue.DeadLetterQueue(jobQ)) == 1
	})
	waitUntil(t, "the healthy message is handled", func() bool {
		got.mu.Lock()
		defer got.mu.Unlock()
		return got.bodies["healthy"] == 1
	})
	if n := got.bodies["poison"]; n != limit+1 {
		t.Errorf("poison handled %d times, want %d (first delivery plus %d returns)", n, limit+1, limit)
	}
}

func TestPublishWaitsForBrokerThatIsNotThereYet(t *testing.T) {
	cfg := testConfig(20)
	cfg.URL = "amqp://guest:guest@127.0.0.1:1/" // nothing listens on port 1
	pub, err := queue.NewPublisher(cfg, testsvc.Logger(t), "nowhere")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = pub.Publish(ctx, "nowhere", watch.Message{Body: []byte("x")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Publish to an absent broker = %v, want a deadline error after retrying", err)
	}
	if pub.Health() == nil {
		t.Error("Health() = nil while the broker is unreachable")
	}
}

func queueDepth(t *testing.T, name string) int {
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
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", name, err)
	}
	return q.Messages
}

func getOne(t *testing.T, name string) amqp.Delivery {
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
	var d amqp.Delivery
	testsvc.Eventually(t, 10*time.Second, "a message in "+name, func() (ok bool, err error) {
		d, ok, err = ch.Get(name, true)
		return ok, err
	})
	return d
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsvc.Eventually(t, 30*time.Second, what, func() (bool, error) { return cond(), nil })
}

// Handlers finish out of order, some fail once and some permanently, while
// acks are coalesced: every message must end handled or dead-lettered, none
// acked before its handler finished, none left unacked after a stop.
func TestCoalescedAcksSettleEveryMessageExactlyOnce(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	log := testsvc.Logger(t)
	pub, err := queue.NewPublisher(testConfig(20), log, jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	const n = 400
	msgs := make([]watch.Message, n)
	for i := range msgs {
		msgs[i] = watch.Message{Body: fmt.Appendf(nil, "%d", i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, jobQ, msgs...); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	var (
		mu        sync.Mutex
		attempts  = map[int]int{}
		succeeded = map[int]int{}
	)
	done := make(chan struct{}, n)
	cfg := queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 8, Prefetch: 32, AckDelay: 20 * time.Millisecond}
	stop := runConsumer(t, cfg, func(_ context.Context, d watch.Delivery) error {
		var i int
		fmt.Sscan(string(d.Body), &i)
		mu.Lock()
		attempts[i]++
		first := attempts[i] == 1
		mu.Unlock()
		time.Sleep(time.Duration(i%7) * time.Millisecond) // finish out of order
		switch {
		case i%25 == 0:
			done <- struct{}{}
			return watch.Permanent(errors.New("never valid"))
		case i%10 == 3 && first:
			return errors.New("transient failure")
		}
		mu.Lock()
		succeeded[i]++
		mu.Unlock()
		done <- struct{}{}
		return nil
	}, pub)
	for range n {
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("not every message was settled within 30s")
		}
	}
	stop()

	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		wantOK, wantTries := 1, 1
		switch {
		case i%25 == 0:
			wantOK = 0
		case i%10 == 3:
			wantTries = 2
		}
		if succeeded[i] != wantOK || attempts[i] != wantTries {
			t.Errorf("message %d: handled %d times, succeeded %d; want %d and %d", i, attempts[i], succeeded[i], wantTries, wantOK)
		}
	}
	if ready := queueDepth(t, jobQ); ready != 0 {
		t.Errorf("%s holds %d messages after a graceful stop, want 0: acks were lost", jobQ, ready)
	}
	if dead := queueDepth(t, queue.DeadLetterQueue(jobQ)); dead != n/25 {
		t.Errorf("dead-letter queue holds %d messages, want %d", dead, n/25)
	}
}

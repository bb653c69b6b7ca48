package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// stopWhileBusy runs a consumer of q whose one worker is stuck on its first
// delivery until the stop's drain cancels it, with the rest of its prefetch
// waiting, and stops it gracefully. It returns the delivery the worker got.
func stopWhileBusy(t *testing.T, q string, limit int, handBack bool, pub *queue.Publisher) watch.Delivery {
	t.Helper()
	started := make(chan watch.Delivery, 16)
	stop := runConsumer(t, queue.ConsumerConfig{Config: testConfig(limit), Queue: q, Workers: 1, Prefetch: 3,
		DrainTimeout: 100 * time.Millisecond, HandBack: handBack},
		func(ctx context.Context, d watch.Delivery) error {
			started <- d
			<-ctx.Done()
			return ctx.Err()
		}, pub)
	var d watch.Delivery
	select {
	case d = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the handler within 30s")
	}
	// The other two reach the consumer's prefetch meanwhile.
	testsvc.WaitDepth(t, 10*time.Second, q, 0)
	stop()
	return d
}

// Stopping a program gracefully while it holds messages is not their
// failure: with HandBack, stops more than the delivery limit in a row count
// nothing, dead-letter nothing, and each message is then handled once. Without
// it (the control) RabbitMQ 3.x counts every stop in x-delivery-count.
func TestGracefulStopsHandBackDeliveriesUncounted(t *testing.T) {
	const limit = 2
	for _, handBack := range []bool{true, false} {
		q, _ := testsvc.Queues(t)
		pub, err := queue.NewPublisher(testConfig(limit), testsvc.Logger(t), q)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pub.Close() })
		publish(t, pub, q, "A", "B", "C")

		// The control stops only as often as the limit allows: past it
		// the broker dead-letters what the stops counted.
		stops := limit
		if handBack {
			stops = limit + 2
		}
		var last watch.Delivery
		for range stops {
			last = stopWhileBusy(t, q, limit, handBack, pub)
		}
		if !handBack {
			if last.DeliveryCount == 0 {
				t.Errorf("control: after %d stops the worker's delivery was counted 0 times: the broker no longer counts a stop, and the test shows nothing", stops)
			}
			continue
		}
		if last.DeliveryCount != 0 {
			t.Errorf("after %d graceful stops the delivery count is %d, want 0", limit+2, last.DeliveryCount)
		}
		testsvc.WaitDepth(t, 10*time.Second, q, 3)
		if n := testsvc.QueueDepth(t, queue.DeadLetterQueue(q)); n != 0 {
			t.Errorf("%d messages dead-lettered by graceful stops, want 0", n)
		}
		c := newCollector()
		counts := make(chan int64, 16)
		runConsumer(t, queue.ConsumerConfig{Config: testConfig(limit), Queue: q, Workers: 1, HandBack: true},
			func(_ context.Context, d watch.Delivery) error {
				counts <- d.DeliveryCount
				c.add(string(d.Body))
				return nil
			}, pub)
		c.waitFor(t, 3)
		for _, b := range []string{"A", "B", "C"} {
			c.mu.Lock()
			n := c.bodies[b]
			c.mu.Unlock()
			if n != 1 {
				t.Errorf("message %s handled %d times, want once", b, n)
			}
		}
		for range 3 {
			if n := <-counts; n != 0 {
				t.Errorf("a message reached its handler with delivery count %d, want 0", n)
			}
		}
	}
}

// A handed-back copy still meets the delivery limit: its count includes
// the deliveries before the copy, and past the limit the consumer
// dead-letters it without calling the handler.
func TestHandedBackCopyPastTheLimitIsDeadLettered(t *testing.T) {
	const limit = 3
	q, _ := testsvc.Queues(t)
	pub, err := queue.NewPublisher(testConfig(limit), testsvc.Logger(t), q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, q, watch.Message{Body: []byte("spent"), Headers: map[string]string{queue.HeaderDeliveries: "4"}},
		watch.Message{Body: []byte("fresh"), Headers: map[string]string{queue.HeaderDeliveries: "2"}}); err != nil {
		t.Fatal(err)
	}
	c := newCollector()
	runConsumer(t, queue.ConsumerConfig{Config: testConfig(limit), Queue: q, HandBack: true},
		func(_ context.Context, d watch.Delivery) error {
			if d.DeliveryCount != 2 {
				t.Errorf("message %s reached its handler counted %d times, want the 2 it carries", d.Body, d.DeliveryCount)
			}
			c.add(string(d.Body))
			return nil
		}, pub)
	c.waitFor(t, 1)
	testsvc.WaitDepth(t, 10*time.Second, queue.DeadLetterQueue(q), 1)
	d := getOne(t, queue.DeadLetterQueue(q))
	if string(d.Body) != "spent" || d.Headers[queue.HeaderReason] == nil {
		t.Errorf("dead letter %q with reason %v, want spent with a reason", d.Body, d.Headers[queue.HeaderReason])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bodies["spent"] != 0 {
		t.Error("the spent copy reached its handler")
	}
}

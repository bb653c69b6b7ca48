package queue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A node that refuses connections in the list costs nothing: publisher and
// consumer both connect to the live one, whichever node they start at.
func TestDeadNodeInTheListIsSkipped(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	cfg := testConfig(20)
	cfg.URL = "amqp://guest:guest@127.0.0.1:1/," + testsvc.AMQPURL() // nothing listens on port 1
	log := testsvc.Logger(t)
	for range 3 { // each publisher starts at a random node
		pub, err := queue.NewPublisher(cfg, log, jobQ)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = pub.Publish(ctx, jobQ, watch.Message{Body: []byte("x")})
		cancel()
		pub.Close()
		if err != nil {
			t.Fatalf("Publish with one dead node in the list: %v", err)
		}
	}
	got := newCollector()
	runConsumer(t, queue.ConsumerConfig{Config: cfg, Queue: jobQ}, func(_ context.Context, d watch.Delivery) error {
		got.add(string(d.Body))
		return nil
	}, nil)
	got.waitFor(t, 3)
}

// Two single-node brokers stand in for a cluster's nodes. They share no
// queue, so a message goes round only when publisher and consumer are on the
// same node: with one node up at a time, stopping the one they are on must
// move both to the other within seconds.
func TestPublisherAndConsumerMoveToAnotherNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two private RabbitMQ nodes")
	}
	var a, b *testsvc.PrivateRabbitMQ
	var wg sync.WaitGroup
	wg.Go(func() { a = testsvc.StartRabbitMQ(t) })
	wg.Go(func() { b = testsvc.StartRabbitMQ(t) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	jobQ := "failover_" + testsvc.ID(t)
	cfg := testConfig(20)
	cfg.URL = a.URL() + "," + b.URL()
	cfg.Heartbeat = 2 * time.Second
	log := testsvc.Logger(t)
	pub, err := queue.NewPublisher(cfg, log, jobQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	got := newCollector()
	runConsumer(t, queue.ConsumerConfig{Config: cfg, Queue: jobQ}, func(_ context.Context, d watch.Delivery) error {
		got.add(string(d.Body))
		return nil
	}, nil)

	// roundTrip publishes one message and waits until the consumer has it:
	// with two separate brokers that only happens once both are on the same
	// live node.
	roundTrip := func(step string) {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		body := fmt.Sprintf("after %s", step)
		if err := pub.Publish(ctx, jobQ, watch.Message{Body: []byte(body)}); err != nil {
			t.Fatalf("%s: publish: %v", step, err)
		}
		for {
			select {
			case seen := <-got.seen:
				if seen == body {
					t.Logf("%s: consumed again after %v", step, time.Since(start).Round(time.Millisecond))
					return
				}
			case <-ctx.Done():
				t.Fatalf("%s: message not consumed within 15s", step)
			}
		}
	}
	b.Stop()
	roundTrip("with node a alone")
	b.Start()
	a.Stop()
	roundTrip("stopping node a")
	a.Start()
	b.Stop()
	roundTrip("stopping node b")
}

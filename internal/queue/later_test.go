package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// call is one handler call, as the handler saw it.
type call struct {
	body  string
	at    time.Time // when the handler was called
	d     watch.Delivery
	until time.Time // the Later's At, when the handler returned one
}

// calls records handler calls for a test to take one by one.
type calls chan call

// next returns the next call, failing the test when none comes within 10s.
func (c calls) next(t *testing.T) call {
	t.Helper()
	select {
	case got := <-c:
		return got
	case <-time.After(10 * time.Second):
		t.Fatal("no handler call within 10s")
		return call{}
	}
}

// holdingHandler records each call in c and returns what later says for it:
// the Later's At (zero for none) and the error to return.
func holdingHandler(c calls, later func(call) (until time.Time, err error)) queue.Handler {
	return func(_ context.Context, d watch.Delivery) error {
		got := call{body: string(d.Body), at: time.Now(), d: d}
		var err error
		got.until, err = later(got)
		c <- got
		return err
	}
}

func newPublisher(t *testing.T, q string) *queue.Publisher {
	t.Helper()
	pub, err := queue.NewPublisher(testConfig(20), testsvc.Logger(t), q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	return pub
}

func publish(t *testing.T, pub *queue.Publisher, q string, bodies ...string) {
	t.Helper()
	msgs := make([]watch.Message, len(bodies))
	for i, b := range bodies {
		msgs[i] = watch.Message{Body: []byte(b)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, q, msgs...); err != nil {
		t.Fatalf("publish %q: %v", bodies, err)
	}
}

// A held delivery keeps no worker: with one worker, B is handled while A
// waits, and A comes back to the handler no earlier than asked, once held,
// never having left the consumer (not redelivered by the broker).
func TestHeldDeliveryLeavesItsWorkerFree(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	pub := newPublisher(t, jobQ)
	publish(t, pub, jobQ, "A", "B")
	const wait = 300 * time.Millisecond
	c := make(calls, 16)
	stop := runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 1, Prefetch: 2},
		holdingHandler(c, func(got call) (time.Time, error) {
			if got.body == "A" && got.d.Holds == 0 {
				at := got.at.Add(wait)
				return at, &watch.Later{At: at, Reason: "fetch slot booked"}
			}
			return time.Time{}, nil
		}), pub)

	a0, b, a1 := c.next(t), c.next(t), c.next(t)
	if a0.body != "A" || b.body != "B" || a1.body != "A" {
		t.Fatalf("handler calls = %s, %s, %s; want A (held), B, A", a0.body, b.body, a1.body)
	}
	if !b.at.Before(a0.until) {
		t.Errorf("B was handled %v after A was held, not within A's %v hold: the one worker was kept", b.at.Sub(a0.at), wait)
	}
	if a1.at.Before(a0.until) {
		t.Errorf("A came back %v after it was held, before its %v hold ended", a1.at.Sub(a0.at), wait)
	}
	if a1.d.Holds != 1 {
		t.Errorf("A's second call: Holds = %d, want 1", a1.d.Holds)
	}
	if hs := a1.d.HeldSince; hs.Before(a0.at) || hs.After(a1.at) {
		t.Errorf("A's second call: HeldSince = %v, want between its first call (%v) and its second (%v)", hs, a0.at, a1.at)
	}
	if a1.d.Redelivered || a1.d.DeliveryCount != 0 {
		t.Errorf("A's second call: Redelivered %v, DeliveryCount %d; want false and 0 (a hold is no return to the queue)",
			a1.d.Redelivered, a1.d.DeliveryCount)
	}
	if a0.d.Holds != 0 || !a0.d.HeldSince.IsZero() {
		t.Errorf("A's first call: Holds %d, HeldSince %v; want 0 and the zero time", a0.d.Holds, a0.d.HeldSince)
	}
	stop()
	if n := queueDepth(t, jobQ); n != 0 {
		t.Errorf("%s holds %d messages after both were handled and the consumer stopped, want 0", jobQ, n)
	}
	if n := queueDepth(t, queue.DeadLetterQueue(jobQ)); n != 0 {
		t.Errorf("dead-letter queue holds %d messages, want 0", n)
	}
}

// A stop does not wait for a held delivery: Run returns at once, leaving the
// delivery unsettled, and the broker puts it back in the queue.
func TestStopWhileHeldReturnsTheMessageToTheQueue(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	pub := newPublisher(t, jobQ)
	publish(t, pub, jobQ, "A")
	c := make(calls, 16)
	stop := runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 1, Prefetch: 2, DrainTimeout: 30 * time.Second},
		holdingHandler(c, func(got call) (time.Time, error) {
			if got.body == "A" {
				at := got.at.Add(time.Hour) // cut to the default MaxHold, a minute
				return at, &watch.Later{At: at, Reason: "origin busy"}
			}
			return time.Time{}, nil
		}), pub)
	if a := c.next(t); a.body != "A" {
		t.Fatalf("first call handled %q, want A", a.body)
	}
	// With one worker, B's call means the worker is done with A: A is held.
	publish(t, pub, jobQ, "B")
	if b := c.next(t); b.body != "B" {
		t.Fatalf("second call handled %q, want B", b.body)
	}

	start := time.Now()
	stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %v to return with a delivery held; want well under the hold's minute", took)
	}
	select {
	case got := <-c:
		t.Errorf("after the stop the handler was called again with %q (holds %d)", got.body, got.d.Holds)
	default:
	}
	testsvc.WaitDepth(t, 10*time.Second, jobQ, 1)
	d := getOne(t, jobQ)
	if string(d.Body) != "A" || !d.Redelivered {
		t.Errorf("queue gives back %q, redelivered %v; want A, redelivered", d.Body, d.Redelivered)
	}
}

// A Later wrapped in context holds the delivery as well, and holding it again
// counts on from the first hold: Holds grows, HeldSince stays. A Later in the
// past hands it back at once.
func TestWrappedLaterHoldsAndHoldsAgain(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	pub := newPublisher(t, jobQ)
	publish(t, pub, jobQ, "A")
	const wait = 100 * time.Millisecond
	c := make(calls, 16)
	stop := runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 1, Prefetch: 2},
		holdingHandler(c, func(got call) (time.Time, error) {
			switch got.d.Holds {
			case 0:
				at := got.at.Add(wait)
				return at, fmt.Errorf("check page 7: %w", &watch.Later{At: at, Reason: "origin busy", State: "slot 1"})
			case 1:
				at := got.at.Add(-time.Hour)
				return at, fmt.Errorf("check page 7: fetch: %w", &watch.Later{At: at, Reason: "slot passed"})
			}
			return time.Time{}, nil
		}), pub)

	c0, c1, c2 := c.next(t), c.next(t), c.next(t)
	if c1.at.Before(c0.until) {
		t.Errorf("second call %v after the first, before the %v hold ended", c1.at.Sub(c0.at), wait)
	}
	if c1.d.Holds != 1 || c2.d.Holds != 2 {
		t.Errorf("Holds = %d, %d on the second and third calls; want 1, 2", c1.d.Holds, c2.d.Holds)
	}
	// State comes back with the hold that set it, and only with it.
	if c0.d.State != nil || c1.d.State != "slot 1" || c2.d.State != nil {
		t.Errorf("State = %v, %v, %v on the three calls; want nil, the first hold's, nil", c0.d.State, c1.d.State, c2.d.State)
	}
	if c1.d.HeldSince.IsZero() || !c2.d.HeldSince.Equal(c1.d.HeldSince) {
		t.Errorf("HeldSince = %v, then %v; want the first hold's time both times", c1.d.HeldSince, c2.d.HeldSince)
	}
	if took := c2.at.Sub(c1.at); took > 2*time.Second {
		t.Errorf("a Later in the past held the delivery %v, want at once", took)
	}
	for i, got := range []call{c0, c1, c2} {
		if got.d.Redelivered || got.d.DeliveryCount != 0 {
			t.Errorf("call %d: Redelivered %v, DeliveryCount %d; want false, 0: a wrapped Later must not return the message to the queue",
				i, got.d.Redelivered, got.d.DeliveryCount)
		}
	}
	stop()
	if n := queueDepth(t, jobQ); n != 0 {
		t.Errorf("%s holds %d messages after A was handled, want 0", jobQ, n)
	}
	if n := queueDepth(t, queue.DeadLetterQueue(jobQ)); n != 0 {
		t.Errorf("dead-letter queue holds %d messages, want 0", n)
	}
}

// A Later further ahead than MaxHold is cut to it.
func TestHoldIsCutToMaxHold(t *testing.T) {
	jobQ, _ := testsvc.Queues(t)
	pub := newPublisher(t, jobQ)
	publish(t, pub, jobQ, "A")
	const maxHold = 200 * time.Millisecond
	c := make(calls, 16)
	runConsumer(t, queue.ConsumerConfig{Config: testConfig(20), Queue: jobQ, Workers: 1, Prefetch: 2, MaxHold: maxHold},
		holdingHandler(c, func(got call) (time.Time, error) {
			if got.d.Holds == 0 {
				at := got.at.Add(time.Hour)
				return at, &watch.Later{At: at, Reason: "far ahead"}
			}
			return time.Time{}, nil
		}), pub)
	c0, c1 := c.next(t), c.next(t)
	if took := c1.at.Sub(c0.at); took < maxHold || took > 5*time.Second {
		t.Errorf("held for %v; want MaxHold, %v, or a little more", took, maxHold)
	}
}

// A held delivery belongs to its channel: when the connection is lost it is
// dropped unsettled, the broker delivers the message again on the next
// session (redelivered, Holds 0), and the old delivery never reaches a worker
// there, not even once its hold is over.
func TestLostConnectionDropsHeldDeliveries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private RabbitMQ node")
	}
	node := testsvc.StartRabbitMQ(t)
	q := "hold_" + testsvc.ID(t)
	cfg := testConfig(20)
	cfg.URL = node.URL()
	pub, err := queue.NewPublisher(cfg, testsvc.Logger(t), q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	publish(t, pub, q, "A")

	// The first hold outlasts the break (rabbitmqctl takes a second or two);
	// the second ends after it, so an old delivery carried over would be
	// handed to a worker first.
	const firstHold = 4 * time.Second
	var firstUntil time.Time // set by the first call, read after it
	c := make(calls, 16)
	stop := runConsumer(t, queue.ConsumerConfig{Config: cfg, Queue: q, Workers: 1, Prefetch: 2},
		holdingHandler(c, func(got call) (time.Time, error) {
			switch {
			case got.body != "A", got.d.Holds > 0:
				return time.Time{}, nil
			case !got.d.Redelivered:
				firstUntil = got.at.Add(firstHold)
				return firstUntil, &watch.Later{At: firstUntil, Reason: "first session"}
			default:
				at := firstUntil.Add(300 * time.Millisecond)
				return at, &watch.Later{At: at, Reason: "second session"}
			}
		}), pub)
	if a := c.next(t); a.body != "A" || a.d.Redelivered {
		t.Fatalf("first call: %q, redelivered %v; want A, not redelivered", a.body, a.d.Redelivered)
	}
	publish(t, pub, q, "B") // B's call means the one worker is done with A: A is held
	if b := c.next(t); b.body != "B" {
		t.Fatalf("second call handled %q, want B", b.body)
	}
	if out, err := node.Ctl("close_all_connections", "--global", "test: break the session"); err != nil {
		t.Fatalf("rabbitmqctl close_all_connections: %v\n%s", err, out)
	}
	if time.Now().After(firstUntil) {
		t.Fatalf("breaking the session took past the first hold's end; raise firstHold (%v)", firstHold)
	}

	// After the break: A again from the broker, held, then handled; never
	// the old delivery.
	for {
		got := c.next(t)
		if got.body != "A" || !got.d.Redelivered {
			t.Fatalf("after the break the handler got %q, redelivered %v, holds %d: a delivery of the lost session was handed to a worker",
				got.body, got.d.Redelivered, got.d.Holds)
		}
		if got.d.Holds == 1 {
			if got.at.Before(firstUntil) {
				t.Errorf("the redelivered A came back before its hold ended")
			}
			break
		}
		if got.d.Holds != 0 {
			t.Fatalf("the redelivered A's first call has Holds %d, want 0: holds start afresh with a new delivery", got.d.Holds)
		}
	}
	stop()
	if n := testsvc.QueueDepthAt(t, node.URL(), q); n != 0 {
		t.Errorf("%s holds %d messages after A and B were handled, want 0", q, n)
	}
}

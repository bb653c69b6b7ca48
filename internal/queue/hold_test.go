package queue

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// The holder gives back the earliest due delivery first, those due at the
// same time in the order they were held, and says how long until the next.
func TestHolderOrdersByDueTimeThenByArrival(t *testing.T) {
	h := newHolder()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	if _, ok, wait := h.due(now); ok || wait >= 0 {
		t.Fatalf("an empty holder: due = %v, wait %v; want nothing and a negative wait", ok, wait)
	}
	held := func(tag uint64, at time.Duration) { h.hold(job{d: amqp.Delivery{DeliveryTag: tag}}, now.Add(at)) }
	held(1, 300*time.Millisecond)
	held(2, 100*time.Millisecond)
	held(3, 300*time.Millisecond)
	held(4, -time.Second) // in the past: due at once
	held(5, 100*time.Millisecond)
	select {
	case <-h.wake:
	default:
		t.Fatal("hold did not wake the feed loop")
	}
	select {
	case <-h.wake:
		t.Fatal("five holds left more than one wake signal")
	default:
	}

	take := func(at time.Time, want ...uint64) {
		t.Helper()
		for _, tag := range want {
			j, ok, _ := h.due(at)
			if !ok || j.d.DeliveryTag != tag {
				t.Fatalf("due(%s) = tag %d, %v; want tag %d", at.Sub(now), j.d.DeliveryTag, ok, tag)
			}
		}
	}
	take(now, 4)
	if _, ok, wait := h.due(now); ok || wait != 100*time.Millisecond {
		t.Fatalf("due(now) after the past one = %v, wait %v; want nothing for 100ms", ok, wait)
	}
	take(now.Add(100*time.Millisecond), 2, 5)
	if _, ok, wait := h.due(now.Add(250 * time.Millisecond)); ok || wait != 50*time.Millisecond {
		t.Fatalf("due(+250ms) = %v, wait %v; want nothing for 50ms", ok, wait)
	}
	take(now.Add(time.Second), 1, 3)
	if n := h.len(); n != 0 {
		t.Fatalf("holder keeps %d deliveries after all were taken", n)
	}
}

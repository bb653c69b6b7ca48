package watch

import (
	"fmt"
	"time"
)

// Later is the error a queue handler returns, as is or wrapped (test for it
// with errors.As), to be handed its delivery again at At rather than now. The
// consumer keeps the delivery unacknowledged, with no worker, until then, and
// then calls a handler with it again, its Delivery.Holds one higher.
//
// It exists for waits of milliseconds to seconds that sleeping in the handler
// would spend a worker on, starving the jobs of every other origin: a fetch
// slot the scheduler booked for the job a moment ahead, an origin with too
// many checks in flight right now. Longer waits belong in the queue or the
// database (a deferred check, a later next_check_at): a held delivery takes a
// prefetch slot while it waits, the consumer cuts a wait to its bound (the
// queue adapter's ConsumerConfig.MaxHold), and a stop or a lost connection
// returns the message to the queue, to be delivered afresh with Holds 0.
//
// The consumer does not limit how often one delivery is held: a handler that
// holds again looks at Delivery.Holds and Delivery.HeldSince and gives up in
// time. RabbitMQ closes the channel of a delivery left unacknowledged longer
// than its consumer_timeout (30 minutes by default).
type Later struct {
	// At is when the delivery is wanted again. A time in the past (or the
	// zero time) means at once, behind the deliveries already waiting for a
	// worker.
	At time.Time
	// Reason says why the handler waits, for logs: "fetch slot booked",
	// "origin busy".
	Reason string
	// State, when not nil, comes back with the delivery as Delivery.State:
	// what the handler decided before it waited (a fetch slot it booked),
	// so that it does not decide it again. It lives in the consumer's
	// memory only and is lost with the hold (a stop, a lost connection).
	State any
}

// Error says when the delivery is wanted again and why.
func (l *Later) Error() string {
	if l == nil {
		return "handle later"
	}
	at := "at once"
	if !l.At.IsZero() {
		at = "at " + l.At.Format(time.RFC3339Nano)
	}
	if l.Reason == "" {
		return "handle again " + at
	}
	return fmt.Sprintf("handle again %s: %s", at, l.Reason)
}

package queue

import (
	"sync"
	"time"
)

// acknowledger is the part of an AMQP channel an acker needs.
type acknowledger interface {
	Ack(tag uint64, multiple bool) error
}

// acker coalesces the acks of one channel's deliveries. RabbitMQ's cost of
// an ack is mostly per frame, not per message: every ack is a command through
// the queue's Raft log, and at a few hundred messages a second each one wakes
// the broker on its own. One ack with multiple=true settles a whole run of
// deliveries instead.
//
// multiple=true settles every outstanding delivery up to its tag, including
// ones another worker is still handling or has just nacked, so an ack may
// only cover a run of tags that are all settled: handled and waiting for
// their ack, or already nacked. Tags past a gap (a delivery still being
// handled) are acked one by one when the delay is up, so one slow handler
// never holds back the others' acks for longer than that.
//
// An ack still pending when the channel dies is lost with it; the broker
// then delivers the message again, which at-least-once delivery allows and
// the handlers' idempotence absorbs.
type acker struct {
	ch    acknowledger
	batch int           // pending acks that trigger a flush
	delay time.Duration // the longest an ack waits
	onErr func(error)

	mu       sync.Mutex
	next     uint64              // lowest tag not known to be settled; tags start at 1
	pending  map[uint64]struct{} // handled, ack not yet sent
	released map[uint64]struct{} // settled otherwise (nacked), above next
	timer    *time.Timer
}

func newAcker(ch acknowledger, batch int, delay time.Duration, onErr func(error)) *acker {
	return &acker{
		ch: ch, batch: max(batch, 1), delay: delay, onErr: onErr,
		next: 1, pending: make(map[uint64]struct{}), released: make(map[uint64]struct{}),
	}
}

// Ack records that tag's delivery was handled and sends the acks that are
// due. With no delay configured it acks at once.
func (a *acker) Ack(tag uint64) {
	if a.delay <= 0 {
		if err := a.ch.Ack(tag, false); err != nil {
			a.onErr(err)
		}
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[tag] = struct{}{}
	if len(a.pending) >= a.batch {
		a.flushRun()
	}
	if len(a.pending) > 0 && a.timer == nil {
		a.timer = time.AfterFunc(a.delay, a.Flush)
	}
}

// Released records that tag's delivery was settled without this acker (a
// nack that the channel has already sent), so that a run of acks may cover
// it. It must be called only after the nack was sent: an ack with
// multiple=true sent before it would settle the message as acked.
func (a *acker) Released(tag uint64) {
	if a.delay <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released[tag] = struct{}{}
}

// Flush sends every pending ack now.
func (a *acker) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.flushRun()
	for tag := range a.pending {
		delete(a.pending, tag)
		if err := a.ch.Ack(tag, false); err != nil {
			a.onErr(err)
		}
		a.released[tag] = struct{}{} // settled now: a later run may pass it
	}
}

// flushRun acks, in one frame, the run of settled tags that starts at next.
// Called with mu held.
func (a *acker) flushRun() {
	var last uint64 // the highest pending tag of the run
	for {
		if _, ok := a.pending[a.next]; ok {
			delete(a.pending, a.next)
			last = a.next
		} else if _, ok := a.released[a.next]; ok {
			delete(a.released, a.next)
		} else {
			break
		}
		a.next++
	}
	if last == 0 {
		return
	}
	if err := a.ch.Ack(last, true); err != nil {
		a.onErr(err)
	}
}

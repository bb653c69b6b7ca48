package queue

import (
	"container/heap"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// job is a delivery on its way to a worker, with what the consumer knows of
// its holds (see watch.Later).
type job struct {
	d         amqp.Delivery
	holds     int       // times held already
	heldSince time.Time // when first held; zero if never
	state     any       // the last hold's watch.Later.State
}

// holder keeps the deliveries of one session that handlers asked to see
// again later, ordered by when they are due, until the session's feed loop
// hands them to a worker again. Workers add to it; the feed loop takes from
// it and waits on wake and a timer for the earliest. It belongs to one
// session and is dropped with it, so a held delivery never reaches a worker
// of another channel; its deliveries are never settled by it.
//
// It is safe for concurrent use.
type holder struct {
	// wake tells the feed loop that a delivery was added, which may be due
	// before the one its timer waits for. It holds at most one signal.
	wake chan struct{}

	mu   sync.Mutex
	jobs heldJobs
	seq  uint64 // orders deliveries due at the same time by when they were held
}

func newHolder() *holder { return &holder{wake: make(chan struct{}, 1)} }

// hold keeps j until at and wakes the feed loop.
func (h *holder) hold(j job, at time.Time) {
	h.mu.Lock()
	h.seq++
	heap.Push(&h.jobs, heldJob{job: j, at: at, seq: h.seq})
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // a signal is already waiting
	}
}

// due returns the earliest held delivery if it is due at now. When none is,
// it returns how long until the earliest is due, or a negative wait when
// nothing is held.
func (h *holder) due(now time.Time) (j job, ok bool, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.jobs) == 0 {
		return job{}, false, -1
	}
	if first := h.jobs[0]; first.at.After(now) {
		return job{}, false, first.at.Sub(now)
	}
	return heap.Pop(&h.jobs).(heldJob).job, true, 0
}

// takeAll removes and returns every held delivery.
func (h *holder) takeAll() []job {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]job, len(h.jobs))
	for i, hj := range h.jobs {
		out[i] = hj.job
	}
	h.jobs = nil
	return out
}

// len returns how many deliveries are held.
func (h *holder) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.jobs)
}

type heldJob struct {
	job
	at  time.Time
	seq uint64
}

// heldJobs is a min-heap of held deliveries by due time, then by the order
// they were held in (container/heap).
type heldJobs []heldJob

func (q heldJobs) Len() int { return len(q) }
func (q heldJobs) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q heldJobs) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *heldJobs) Push(x any)   { *q = append(*q, x.(heldJob)) }
func (q *heldJobs) Pop() any {
	old := *q
	last := old[len(old)-1]
	old[len(old)-1] = heldJob{} // let the delivery's body go
	*q = old[:len(old)-1]
	return last
}

package main

import (
	"context"
	"sync"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/web"
)

// deadSample is how many dead letters per queue are read for their reasons.
const deadSample = 50

// deadCacheFor is how long a reading of the dead-letter queues is reused:
// every page view shows them, and each reading opens a broker connection.
const deadCacheFor = 15 * time.Second

// deadLetters reads the dead-letter queues through queue.Dead, read-only:
// messages are looked at unacked and go back when the connection closes.
type deadLetters struct {
	dead   *queue.Dead
	queues []string

	mu     sync.Mutex
	at     time.Time
	cached []web.DeadQueue
}

func newDeadLetters(d *queue.Dead, queues []string) *deadLetters {
	return &deadLetters{dead: d, queues: queues}
}

// DeadLetters returns each work queue's dead letters: count and reasons. A
// queue that cannot be read says why in its Error; the call itself does not
// fail, so a broker outage shows on the page instead of breaking it.
func (d *deadLetters) DeadLetters(_ context.Context) ([]web.DeadQueue, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cached != nil && time.Since(d.at) < deadCacheFor {
		return d.cached, nil
	}
	out := make([]web.DeadQueue, 0, len(d.queues))
	for _, q := range d.queues {
		report, err := d.dead.Inspect(q, deadSample)
		dq := web.DeadQueue{Queue: report.Queue, Count: report.Count, Reasons: []web.ReasonCount{}}
		if err != nil {
			dq.Error = err.Error()
		}
		for _, r := range report.Reasons() {
			dq.Reasons = append(dq.Reasons, web.ReasonCount{Reason: r.Reason, Count: r.Count})
		}
		out = append(out, dq)
	}
	d.cached, d.at = out, time.Now()
	return out, nil
}

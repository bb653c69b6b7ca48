package main

import (
	"context"
	"slices"
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
		dq := web.DeadQueue{Queue: queue.DeadLetterQueue(q), Reasons: []web.ReasonCount{}}
		n, err := d.dead.Count(q)
		if err != nil {
			dq.Error = err.Error()
			out = append(out, dq)
			continue
		}
		dq.Count = n
		if n > 0 {
			letters, err := d.dead.List(q, deadSample)
			if err != nil {
				dq.Error = err.Error()
			}
			counts := map[string]int{}
			for _, l := range letters {
				counts[l.Reason]++
			}
			for reason, c := range counts {
				dq.Reasons = append(dq.Reasons, web.ReasonCount{Reason: reason, Count: c})
			}
			slices.SortFunc(dq.Reasons, func(a, b web.ReasonCount) int { return b.Count - a.Count })
		}
		out = append(out, dq)
	}
	d.cached, d.at = out, time.Now()
	return out, nil
}

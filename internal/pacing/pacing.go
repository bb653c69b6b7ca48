// Package pacing books fetch slots per origin within one process: the rule
// the crawler's fetcher follows when no fleet-wide pacer is configured, and
// the one the fleet-wide pacer (internal/hostgate) falls back to while its
// Redis is away. It depends on the standard library only, so both can share
// it without importing each other.
package pacing

import (
	"sync"
	"time"
)

// Slots books the next fetch slot of each origin, in call order. It
// remembers at most about Size origins: when it holds more, origins whose
// slot has passed are forgotten. It is safe for concurrent use.
type Slots struct {
	now  func() time.Time
	size int

	mu   sync.Mutex
	next map[string]time.Time // earliest start of the next fetch per origin
}

// New returns Slots remembering about size origins (at least 1), reading
// the time from now (time.Now when nil).
func New(size int, now func() time.Time) *Slots {
	if now == nil {
		now = time.Now
	}
	return &Slots{now: now, size: max(size, 1), next: make(map[string]time.Time)}
}

// Reserve books origin's next slot, spacing after the slot booked before
// it, and returns how long from now that slot is. When the slot is more than
// maxWait away it books nothing and returns the wait with booked false.
func (s *Slots) Reserve(origin string, spacing, maxWait time.Duration) (wait time.Duration, booked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	slot := s.next[origin]
	if slot.Before(now) {
		slot = now
	}
	wait = slot.Sub(now)
	if wait > maxWait {
		return wait, false
	}
	s.next[origin] = slot.Add(spacing)
	if len(s.next) > s.size {
		for k, t := range s.next {
			if t.Before(now) {
				delete(s.next, k)
			}
		}
	}
	return wait, true
}

package pacing

import (
	"testing"
	"time"
)

func TestSlotsSpaceAnOriginAndRefuseTooFar(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New(2, func() time.Time { return now })
	for i, want := range []time.Duration{0, time.Second, 2 * time.Second} {
		if wait, ok := s.Reserve("https://a", time.Second, 5*time.Second); !ok || wait != want {
			t.Fatalf("reservation %d: wait %v, booked %v; want %v, true", i, wait, ok, want)
		}
	}
	if wait, ok := s.Reserve("https://a", time.Second, 2*time.Second); ok || wait != 3*time.Second {
		t.Fatalf("a slot 3s away with 2s allowed: wait %v, booked %v; want 3s, false", wait, ok)
	}
	if wait, ok := s.Reserve("https://b", time.Second, 0); !ok || wait != 0 {
		t.Fatalf("another origin: wait %v, booked %v; want 0, true", wait, ok)
	}
	// Past slots are forgotten once more than size origins are held.
	now = now.Add(time.Minute)
	s.Reserve("https://c", time.Second, 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.next) != 1 {
		t.Fatalf("after the slots passed, %d origins remembered; want only the new one", len(s.next))
	}
}

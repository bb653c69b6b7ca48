package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDelayGrowsAndIsCapped(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second}
	tests := []struct {
		attempt int
		lo, hi  time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{4, 500 * time.Millisecond, time.Second}, // 1.6s capped at 1s
		{1000, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		for range 200 {
			if d := p.Delay(tt.attempt); d < tt.lo || d > tt.hi {
				t.Fatalf("Delay(%d) = %v, want within [%v, %v]", tt.attempt, d, tt.lo, tt.hi)
			}
		}
	}
}

func TestDelayIsJittered(t *testing.T) {
	p := Policy{Min: time.Second, Max: time.Second}
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[p.Delay(0)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("50 delays gave only %d distinct values: no jitter", len(seen))
	}
}

func TestSleepStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := Policy{Min: time.Hour, Max: time.Hour}
	if err := p.Sleep(ctx, 0); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
}

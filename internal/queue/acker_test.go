package queue

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// recordedAcks is an acknowledger that remembers which tags each ack settled,
// the way the broker would read them.
type recordedAcks struct {
	mu      sync.Mutex
	frames  []string
	settled map[uint64]int // tag → how often an ack covered it
	open    map[uint64]bool
}

func newRecordedAcks(delivered uint64) *recordedAcks {
	r := &recordedAcks{settled: map[uint64]int{}, open: map[uint64]bool{}}
	for tag := uint64(1); tag <= delivered; tag++ {
		r.open[tag] = true
	}
	return r
}

func (r *recordedAcks) Ack(tag uint64, multiple bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames = append(r.frames, fmt.Sprintf("%d/%v", tag, multiple))
	if !r.open[tag] {
		return fmt.Errorf("PRECONDITION_FAILED - unknown delivery tag %d", tag)
	}
	for t := range r.open {
		if t == tag || (multiple && t < tag) {
			delete(r.open, t)
			r.settled[t]++
		}
	}
	return nil
}

func (r *recordedAcks) nack(tag uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open, tag)
}

func TestAckerCoversOnlySettledRuns(t *testing.T) {
	r := newRecordedAcks(8)
	var errs []error
	a := newAcker(r, 3, time.Hour, func(err error) { errs = append(errs, err) })

	a.Ack(2) // 1 still being handled: nothing may go out
	a.Ack(3)
	r.nack(4)
	a.Released(4)
	a.Ack(1) // three pending: the run 1–4 goes out as one ack
	if want := []string{"3/true"}; !slices.Equal(r.frames, want) {
		t.Fatalf("frames after 1–4 settled = %v, want %v", r.frames, want)
	}
	a.Ack(6) // past the gap at 5
	a.Ack(8)
	a.Ack(7) // batch reached, but 5 is still open: nothing covers 5
	if len(r.frames) != 1 {
		t.Fatalf("frames with 5 open = %v, want only the first", r.frames)
	}
	a.Flush() // the delay is up: 6, 7, 8 one by one
	a.Ack(5)
	a.Flush()
	if len(errs) > 0 {
		t.Fatalf("acks refused by the broker: %v", errs)
	}
	for tag := uint64(1); tag <= 8; tag++ {
		want := 1
		if tag == 4 {
			want = 0 // nacked, never acked
		}
		if r.settled[tag] != want {
			t.Errorf("tag %d acked %d times, want %d (frames %v)", tag, r.settled[tag], want, r.frames)
		}
	}
}

func TestAckerSendsPendingAcksAfterTheDelay(t *testing.T) {
	r := newRecordedAcks(2)
	a := newAcker(r, 10, 5*time.Millisecond, func(err error) { t.Error(err) })
	a.Ack(1)
	a.Ack(2)
	testsvc.Eventually(t, 5*time.Second, "the acks sent after a 5ms delay", func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.open) == 0, nil
	})
}

func TestAckerWithoutDelayAcksEachAtOnce(t *testing.T) {
	r := newRecordedAcks(2)
	a := newAcker(r, 10, -1, func(err error) { t.Error(err) })
	a.Ack(2)
	a.Ack(1)
	if want := []string{"2/false", "1/false"}; !slices.Equal(r.frames, want) {
		t.Errorf("frames = %v, want %v", r.frames, want)
	}
}

package crawler

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Budget books fetch slots in the fleet's per-origin budget
// (hostgate.Gate).
type Budget interface {
	Book(ctx context.Context, class watch.FetchClass, spacing, horizon time.Duration, reqs []watch.SlotRequest) []watch.Booking
}

// HostGate caps the checks of one origin in flight across all crawlers.
type HostGate interface {
	// Enter admits a check of origin, or says the origin is full; leave
	// ends the admission, and lease bounds it if leave is never called.
	Enter(ctx context.Context, origin string, lease time.Duration) (leave func(), ok bool)
}

// DefaultBusyDelay is Config.BusyDelay's default.
const DefaultBusyDelay = 5 * time.Second

// slotSlack is how close to its booked slot a job is taken at once: the
// fetcher sleeps the rest, shorter than a hold's round trip.
const slotSlack = 2 * time.Millisecond

// admit admits the check of pageURL through the configured gate; leave
// ends the admission. A page without an origin (the fetch fails it) and a
// crawler without a gate are admitted.
func (s *Service) admit(ctx context.Context, pageURL string) (leave func(), admitted bool) {
	origin, ok := watch.Origin(pageURL)
	if s.cfg.Gate == nil || !ok {
		return func() {}, true
	}
	// The check deadline ends the check's talk with the origin; the margin
	// covers a leave that is late because the crawler is busy.
	return s.cfg.Gate.Enter(ctx, origin, s.cfg.CheckTimeout+5*time.Second)
}

// busyRetry is how long a job whose origin was busy waits before it asks
// again, after holds earlier holds: 10 ms doubling to 320 ms, and up to
// half as much again at random, so that the jobs turned away together do
// not all come back together. A check of a loopback farm frees its place
// within milliseconds; one of a slow site after seconds.
func busyRetry(holds int) time.Duration {
	d := 10 * time.Millisecond << min(holds, 5)
	return d + rand.N(d/2+1)
}

// deferBusy returns the task of a check that found its origin busy for
// longer than BusyDelay: deferred by BusyDelay plus up to as much again at
// random, back to the scheduler.
func (s *Service) deferBusy(job watch.Job) watch.Task {
	return s.deferred(job, time.Now().Add(s.cfg.BusyDelay+rand.N(s.cfg.BusyDelay+1)), "its origin has the most checks in flight")
}

// deferred returns the task of a check put off until until.
func (s *Service) deferred(job watch.Job, until time.Time, why string) watch.Task {
	s.metrics.checks.WithLabelValues("deferred").Inc()
	s.log.Debug("check deferred: "+why, "page_id", job.ID, "url", job.BaseURL, "until", until)
	return watch.Task{BaseURL: job.BaseURL, ID: job.ID, Context: []watch.Link{}, FetchedAt: time.Now().UTC(), DeferredUntil: until,
		Source: job.Source}
}

// bookSlot books the next fetch slot of the origin of job's URL in Config.Budget,
// for a job that came without one or whose slot went stale waiting in the
// queue, so that the job waits for it held rather than in a worker. It
// returns no slot when there is no budget or spacing (the fetcher paces by
// Crawl-delay alone), and a time to defer the check to when the origin's
// next slot is further than Config.MaxSlotWait.
func (s *Service) bookSlot(ctx context.Context, job watch.Job) (*watch.Slot, time.Time) {
	origin, ok := watch.Origin(job.BaseURL)
	if s.cfg.Budget == nil || s.cfg.HostSpacing <= 0 || !ok {
		return nil, time.Time{}
	}
	class := watch.HomepageFetch
	if job.Source != nil {
		class = watch.SourceFetch
	}
	b := s.cfg.Budget.Book(ctx, class, s.cfg.HostSpacing, s.cfg.MaxSlotWait,
		[]watch.SlotRequest{{Origin: origin, N: 1}})[0]
	if len(b.Slots) == 0 {
		return nil, b.Next
	}
	return &watch.Slot{At: b.Slots[0], Spacing: b.Spacing}, time.Time{}
}

// deferredUntil reports whether the fetcher put the check off rather than
// let a politeness wait hold a worker, and until when.
func deferredUntil(err error) (time.Time, bool) {
	var fe *watch.FetchError
	if errors.As(err, &fe) && fe.Kind == watch.FetchDeferred {
		return fe.RetryAt, true
	}
	return time.Time{}, false
}

package crawler_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// twoCrawlers returns two crawler Services, each with its own fetch client
// and gate, sharing one Redis as two crawler processes would.
func twoCrawlers(t *testing.T, gcfg hostgate.Config, fcfg fetch.Config) [2]*crawler.Service {
	url, prefix := testsvc.Redis(t)
	gcfg.Prefix = prefix
	var svcs [2]*crawler.Service
	for i := range svcs {
		g, err := hostgate.Open(url, gcfg, testsvc.Logger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		fc := fcfg
		fc.AllowPrivate, fc.IgnoreRobots, fc.Pacer = true, true, g
		f, err := fetch.New(fc)
		if err != nil {
			t.Fatal(err)
		}
		if svcs[i], err = crawler.New(crawler.Config{TaskQueue: "tasks", Gate: g}, f, &recorder{},
			testsvc.Logger(t), prometheus.NewRegistry()); err != nil {
			t.Fatal(err)
		}
	}
	return svcs
}

// With a cap of one check per origin, a second crawler's check of a busy
// origin is deferred at once instead of taking a worker.
func TestInFlightCapAcrossCrawlers(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a">A</a>`))
	})
	svcs := twoCrawlers(t, hostgate.Config{MaxInFlight: 1}, fetch.Config{})
	done := make(chan watch.Task)
	go func() { done <- svcs[0].Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/slow"}) }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first check never reached the server")
	}

	start := time.Now()
	busy := svcs[1].Check(context.Background(), watch.Job{ID: 2, BaseURL: srv.URL + "/"})
	if busy.Failed() || busy.DeferredUntil.IsZero() || time.Since(start) > time.Second {
		t.Errorf("check of a full origin = %+v after %s; want deferred at once", busy, time.Since(start))
	}
	if d := busy.DeferredUntil.Sub(start); d < crawler.DefaultBusyDelay || d > 2*crawler.DefaultBusyDelay+time.Second {
		t.Errorf("deferred by %s, want %s to twice that", d, crawler.DefaultBusyDelay)
	}

	close(release)
	if task := <-done; task.Failed() || len(task.Context) != 1 {
		t.Fatalf("first check = %+v, want its link", task)
	}
	if task := svcs[1].Check(context.Background(), watch.Job{ID: 2, BaseURL: srv.URL + "/"}); task.Failed() || !task.DeferredUntil.IsZero() {
		t.Errorf("check after the origin freed up = %+v, want it done", task)
	}
}

// The spacing of an origin holds across crawlers: right after one crawler
// fetched it, the other's check is deferred to the next slot.
func TestSpacingAcrossCrawlers(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a">A</a>`))
	})
	svcs := twoCrawlers(t, hostgate.Config{}, fetch.Config{MinHostSpacing: time.Minute, MaxPoliteWait: time.Second})
	if task := svcs[0].Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"}); task.Failed() || !task.DeferredUntil.IsZero() {
		t.Fatalf("first check = %+v, want it done", task)
	}
	start := time.Now()
	task := svcs[1].Check(context.Background(), watch.Job{ID: 2, BaseURL: srv.URL + "/b"})
	// The slot is booked by Redis's clock, which may run a little ahead of
	// this process's: allow a second either way.
	if d := task.DeferredUntil.Sub(start); task.Failed() || d < 58*time.Second || d > time.Minute+time.Second {
		t.Errorf("other crawler's check = %+v; want deferred about 1m to the origin's next slot", task)
	}
}

// holding is a crawler with the gate on a Redis of its own prefix, a 1 s
// host spacing and a page server that counts its fetches.
type holding struct {
	srv  *httptest.Server
	gate *hostgate.Gate
	rec  *recorder
	svc  *crawler.Service
	hits atomic.Int32
}

// newHolding returns a holding whose gate admits maxInFlight checks of an
// origin; with budget the crawler books the slots of jobs that lack one.
func newHolding(t *testing.T, maxInFlight int, budget bool) *holding {
	t.Helper()
	h := &holding{rec: &recorder{}}
	h.srv = serve(t, func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a">A</a>`))
	})
	url, prefix := testsvc.Redis(t)
	var err error
	if h.gate, err = hostgate.Open(url, hostgate.Config{Prefix: prefix, MaxInFlight: maxInFlight}, testsvc.Logger(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.gate.Close() })
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true, Pacer: h.gate, MinHostSpacing: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg := crawler.Config{TaskQueue: "tasks", Gate: h.gate}
	if budget {
		cfg.Budget, cfg.HostSpacing = h.gate, time.Second
	}
	if h.svc, err = crawler.New(cfg, f, h.rec, testsvc.Logger(t), prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
	return h
}

// Handle never sleeps for politeness in a worker: a job whose booked slot
// is ahead comes back as a watch.Later for that slot and fetches nothing;
// at its slot it fetches at once, booking nothing more; a job whose origin
// is full comes back within milliseconds, and only after BusyDelay of that
// is its check deferred.
func TestHandleHoldsInsteadOfWaiting(t *testing.T) {
	h := newHolding(t, 1, false)
	srv, g, rec, svc, hits := h.srv, h.gate, h.rec, h.svc, &h.hits
	ctx := context.Background()
	delivery := func(j watch.Job) watch.Delivery {
		body, err := watch.EncodeJob(j)
		if err != nil {
			t.Fatal(err)
		}
		return watch.Delivery{Body: body}
	}

	slot := &watch.Slot{At: time.Now().Add(700 * time.Millisecond), Spacing: time.Second}
	d := delivery(watch.Job{ID: 1, BaseURL: srv.URL + "/", Slot: slot})
	var later *watch.Later
	if err := svc.Handle(ctx, d); !errors.As(err, &later) || !later.At.Equal(slot.At) || hits.Load() != 0 || len(rec.msgs) != 0 {
		t.Fatalf("Handle before the slot = %v, %d fetches, %d tasks; want Later at the slot and nothing fetched", err, hits.Load(), len(rec.msgs))
	}
	time.Sleep(time.Until(slot.At))
	start := time.Now()
	if err := svc.Handle(ctx, d); err != nil || hits.Load() != 1 || len(rec.msgs) != 1 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("Handle at the slot = %v after %s, %d fetches; want one fetch at once", err, time.Since(start), hits.Load())
	}

	origin, _ := watch.Origin(srv.URL)
	leave, ok := g.Enter(ctx, origin, time.Minute)
	if !ok {
		t.Fatal("could not take the origin's one place")
	}
	defer leave()
	busy := delivery(watch.Job{ID: 2, BaseURL: srv.URL + "/b"})
	start = time.Now()
	if err := svc.Handle(ctx, busy); !errors.As(err, &later) || later.At.Sub(start) > 100*time.Millisecond {
		t.Fatalf("Handle of a full origin = %v; want Later within milliseconds", err)
	}
	busy.Holds, busy.HeldSince = 7, time.Now().Add(-crawler.DefaultBusyDelay+time.Second)
	if err := svc.Handle(ctx, busy); !errors.As(err, &later) || later.At.Sub(time.Now()) > 500*time.Millisecond {
		t.Fatalf("Handle of a full origin after 7 holds = %v; want Later within half a second", err)
	}
	busy.HeldSince = time.Now().Add(-crawler.DefaultBusyDelay - time.Second)
	if err := svc.Handle(ctx, busy); err != nil || len(rec.msgs) != 2 {
		t.Fatalf("Handle of a full origin after BusyDelay = %v, %d tasks; want a deferred task", err, len(rec.msgs))
	}
	task, err := watch.DecodeTask(rec.msgs[1].Body)
	if err != nil || task.DeferredUntil.Before(time.Now().Add(crawler.DefaultBusyDelay-time.Second)) || hits.Load() != 1 {
		t.Errorf("task = %+v, %v, %d fetches; want the check deferred by BusyDelay, nothing fetched", task, err, hits.Load())
	}
}

// A job whose slot went stale in the queue gets a fresh one from the
// budget and waits for it held, not in a worker; held, it keeps that slot,
// so its check books nothing more.
func TestHandleBooksAStaleJobsSlot(t *testing.T) {
	h := newHolding(t, 3, true)
	srv, g, svc, hits := h.srv, h.gate, h.svc, &h.hits
	ctx := context.Background()
	origin, _ := watch.Origin(srv.URL)
	g.Reserve(ctx, origin, time.Second, -1, time.Minute) // another crawler fetched it just now

	body, _ := watch.EncodeJob(watch.Job{ID: 1, BaseURL: srv.URL + "/", Slot: &watch.Slot{At: time.Now().Add(-time.Minute), Spacing: time.Second}})
	d := watch.Delivery{Body: body}
	var later *watch.Later
	err := svc.Handle(ctx, d)
	if !errors.As(err, &later) || hits.Load() != 0 {
		t.Fatalf("Handle of a stale job = %v, %d fetches; want Later for a fresh slot, nothing fetched", err, hits.Load())
	}
	slot, ok := later.State.(*watch.Slot)
	if !ok || !slot.At.Equal(later.At) || time.Until(slot.At) < 500*time.Millisecond {
		t.Fatalf("Later = %+v; want the origin's next slot, about 1s away, as its State", later)
	}
	time.Sleep(time.Until(slot.At))
	d.Holds, d.HeldSince, d.State = 1, time.Now(), later.State
	start := time.Now()
	if err := svc.Handle(ctx, d); err != nil || hits.Load() != 1 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("Handle at the booked slot = %v after %s, %d fetches; want one fetch at once", err, time.Since(start), hits.Load())
	}
	b := g.Book(ctx, watch.HomepageFetch, time.Second, time.Minute, []watch.SlotRequest{{Origin: origin, N: 1}})
	if len(b[0].Slots) != 1 || b[0].Slots[0].Sub(slot.At) != time.Second {
		t.Errorf("the next booking = %+v; want the slot right after the job's, one booking for the job", b[0])
	}
}

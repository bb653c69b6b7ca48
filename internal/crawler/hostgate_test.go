package crawler_test

import (
	"context"
	"net/http"
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

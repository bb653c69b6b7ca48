package crawler_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// trickle answers 200 and then sends one byte every 20ms until the client
// goes away, as a hostile server holding a worker would.
func trickle(contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := w.Write([]byte("#")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
}

// Without a check deadline a robots.txt and a page that both trickle cost
// twice the fetch timeout (one for each); the check deadline bounds both.
func TestCheckDeadlineCoversRobotsAndFetch(t *testing.T) {
	const fetchTimeout, checkTimeout = time.Second, 1300 * time.Millisecond
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			trickle("text/plain")(w, r)
			return
		}
		trickle("text/html")(w, r)
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true, Timeout: fetchTimeout})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks", CheckTimeout: checkTimeout}, f, &recorder{},
		testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	elapsed := time.Since(start)
	if !task.Failed() || !strings.Contains(task.Error, "timed out") && !strings.Contains(task.Error, "robots.txt") {
		t.Errorf("task error = %q, want a timeout", task.Error)
	}
	// 2 × fetchTimeout is what the check cost before it had a deadline.
	if elapsed >= checkTimeout+400*time.Millisecond {
		t.Errorf("check took %s, want about the check deadline %s (fetch timeout %s)", elapsed, checkTimeout, fetchTimeout)
	}
}

// A check whose host's next slot is further than the fetcher waits becomes
// a deferred task: no error, no links, and the time to come back.
func TestCheckDeferredByPolitenessIsNotAFailure(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a">A</a>`))
	})
	f, err := fetch.New(fetch.Config{AllowPrivate: true, IgnoreRobots: true, MinHostSpacing: time.Minute, MaxPoliteWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pub := &recorder{}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"}); task.Failed() || len(task.Context) != 1 {
		t.Fatalf("first check = %+v, want its link", task)
	}
	start := time.Now()
	task := svc.Check(context.Background(), watch.Job{ID: 2, BaseURL: srv.URL + "/b"})
	if task.Failed() || len(task.Context) != 0 || task.Status != 0 {
		t.Errorf("deferred check = %+v, want no error, no links, no status", task)
	}
	if d := task.DeferredUntil.Sub(start); d < 58*time.Second || d > time.Minute {
		t.Errorf("deferred for %s, want the host's next slot about 1m away", d)
	}
	if elapsed := time.Since(start); elapsed > 500*time.Millisecond {
		t.Errorf("deferring took %s: the worker waited", elapsed)
	}
}

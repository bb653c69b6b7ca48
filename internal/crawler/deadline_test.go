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
	"github.com/portalwatch/portalwatch/internal/testsvc"
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
	f := fetch.New(fetch.Config{AllowPrivate: true, Timeout: fetchTimeout})
	svc := crawler.New(crawler.Config{TaskQueue: "tasks", CheckTimeout: checkTimeout}, f, &recorder{},
		testsvc.Logger(t), prometheus.NewRegistry())

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

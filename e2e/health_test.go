package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchHealth follows one page through the real programs as it goes
// empty, then answers 403, then a Cloudflare challenge, then comes back:
// after each check the page shows the reason it is degraded, the run keeps
// the time it began, and a healthy check lifts it.
func TestWatchHealth(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	var mode atomic.Value
	mode.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch mode.Load() {
		case "ok":
			var b strings.Builder
			b.WriteString("<!DOCTYPE html><title>Portal</title><ul>")
			for i := range 12 {
				fmt.Fprintf(&b, `<li><a href="/story/%d">Story %d</a></li>`, i, i)
			}
			w.Write([]byte(b.String() + "</ul>"))
		case "empty":
			w.Write([]byte(`<!DOCTYPE html><title>Portal</title><p>We will be back soon.</p>`))
		case "forbidden":
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`<!DOCTYPE html><title>403 Forbidden</title>`))
		case "challenge":
			w.Write([]byte(`<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>
				<script>window._cf_chl_opt={cvId:'3'};</script>
				<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script></body></html>`))
		}
	}))
	t.Cleanup(srv.Close)

	id := sys.add(srv.URL+"/", "--interval", "1h")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("processor")
	sys.waitForCheck(id)

	var since time.Time
	for _, step := range []struct {
		mode, reason, detail string
	}{
		{"empty", "no_links", "no links left"},
		{"forbidden", "blocked", "the page answered 403 Forbidden"},
		{"challenge", "challenge", "Cloudflare challenge page"},
		{"ok", "", ""},
	} {
		mode.Store(step.mode)
		sys.waitForCheck(id)
		h := sys.health(id)
		if h.Reason != step.reason || !strings.Contains(h.Detail, step.detail) {
			t.Fatalf("after a check of the %s page: health %+v, want reason %q and a detail with %q", step.mode, h, step.reason, step.detail)
		}
		switch {
		case step.reason == "":
			if h.Status != "ok" || h.Since != nil {
				t.Fatalf("after a healthy check: %+v, want ok and no since", h)
			}
		case since.IsZero():
			since = *h.Since
		case !h.Since.Equal(since):
			t.Fatalf("after the %s check: degraded since %s, want %s: the run began with the first bad check", step.mode, h.Since, since)
		}
	}
	var reason *string
	if err := sys.db.QueryRow(context.Background(), `SELECT degraded FROM pages WHERE id = $1`, id).Scan(&reason); err != nil || reason != nil {
		t.Fatalf("pages.degraded = %v (%v), want NULL after a healthy check", reason, err)
	}
}

type healthOut struct {
	Status string     `json:"status"`
	Reason string     `json:"reason"`
	Detail string     `json:"detail"`
	Since  *time.Time `json:"since"`
}

// health returns the page's health as `watchctl list --json` shows it.
func (s *system) health(id int64) healthOut {
	s.t.Helper()
	out, err := s.watchctl("list", "--json")
	if err != nil {
		s.t.Fatalf("watchctl list --json: %v\n%s", err, out)
	}
	for line := range strings.Lines(out) {
		var p struct {
			ID     int64     `json:"id"`
			Health healthOut `json:"health"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			s.t.Fatalf("watchctl list --json printed %q: %v", line, err)
		}
		if p.ID == id {
			return p.Health
		}
	}
	s.t.Fatalf("watchctl list --json does not list page %d:\n%s", id, out)
	return healthOut{}
}

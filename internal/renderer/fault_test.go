package renderer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestChromiumKilledMidPage kills the browser while the page waits for its
// links: the page is rendered again in a new browser, and its links come.
func TestChromiumKilledMidPage(t *testing.T) {
	var asked atomic.Int64
	var r *Renderer
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.Replace(scriptedPage, "<script>", "<script>window.CANARIES = [];", 1))
	})
	mux.HandleFunc("/links.json", func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) == 1 {
			// The first render is under way: kill its browser.
			r.mu.Lock()
			pid := r.cur.pid
			r.mu.Unlock()
			syscall.Kill(-pid, syscall.SIGKILL)
			return
		}
		io.WriteString(w, `[{"url":"/story/1","text":"First story"},{"url":"/story/2","text":"Second story"}]`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r = newRenderer(t, Config{AllowPrivate: true, Idle: 200 * time.Millisecond, PageTimeout: 15 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/", WaitFor: "#ready"})
	if err != nil {
		t.Fatalf("render after the browser was killed: %v", err)
	}
	if !strings.Contains(string(res.HTML), "Second story") {
		t.Errorf("the page rendered again lacks its links:\n%s", res.HTML)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("links asked %d times; want 2 (one per browser)", n)
	}
	if n := testutil.ToFloat64(r.metrics.renders.WithLabelValues("ok")); n != 1 {
		t.Errorf("%v renders ok; want 1", n)
	}
}

// TestHostilePages: a script that never yields is cut at the deadline, a
// browser past its memory limit is replaced and the page failed after its
// second try, and the renderer renders the next page fine.
func TestHostilePages(t *testing.T) {
	mux := http.NewServeMux()
	page := func(script string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<!doctype html><title>x</title><a href="/static">static</a><script>`+script+`</script>`)
		}
	}
	mux.HandleFunc("/loop", page(`setTimeout(() => { for (;;) {} }, 10);`))
	mux.HandleFunc("/fine", page(`document.body.insertAdjacentHTML('beforeend', '<a href="/late">late</a>');`))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := newRenderer(t, Config{AllowPrivate: true, Idle: 200 * time.Millisecond, PageTimeout: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	start := time.Now()
	_, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/loop"})
	if err == nil {
		t.Error("a page whose script never yields rendered")
	}
	if d := time.Since(start); d > 3*time.Second+5*time.Second+5*time.Second {
		t.Errorf("the endless script held the tab %s; want it cut near the 3s deadline", d)
	}
	t.Logf("endless script: %v after %s", err, time.Since(start).Round(time.Millisecond))

	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/fine"})
	if err != nil || !strings.Contains(string(res.HTML), `href="/late"`) {
		t.Fatalf("the page after a hostile one: %v\n%s", err, res.HTML)
	}

	// Delivered as often as the limit: failed without a fetch.
	_, err = r.Fetch(WithDeliveries(ctx, 3), watch.FetchRequest{URL: srv.URL + "/fine"})
	if err == nil || !strings.Contains(err.Error(), "stopped 3 times") {
		t.Errorf("a job delivered 3 times: %v; want it failed as one that stops the renderer", err)
	}
}

// TestMemoryLimit: a browser whose tree passes MaxRSS is killed and
// replaced; a page that keeps it there fails after its second try, with
// a reason a person can act on.
func TestMemoryLimit(t *testing.T) {
	srv := newFarm(t, "[]")
	r := newRenderer(t, Config{AllowPrivate: true, MaxRSS: 64 << 20, Watch: 50 * time.Millisecond, PageTimeout: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/", WaitFor: "#never"})
	if !errors.Is(err, errBrowserLost) || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("render in a browser always over its limit: %v; want the browser lost to its memory limit", err)
	}
	if n := testutil.ToFloat64(r.metrics.restarts.WithLabelValues("memory")); n < 2 {
		t.Errorf("%v restarts for memory; want 2 (the page and its second try)", n)
	}
}

// The profile of a renderer that is gone is removed; that of a live one
// (this test's own process) is kept.
func TestSweepProfiles(t *testing.T) {
	dead, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", profilePrefix, 1<<30))
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", profilePrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	sweepProfiles()
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the profile of a gone renderer is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the profile of a live renderer was removed: %v", err)
	}
}

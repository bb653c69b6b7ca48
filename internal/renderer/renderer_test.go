package renderer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// scriptedPage inserts its links from a JSON endpoint, and tries to reach
// the canary and private addresses from script.
const scriptedPage = `<!doctype html><html><head><title>scripted</title></head><body><main id="news"></main>
<script>
fetch('/links.json').then(r => r.json()).then(ls => {
  const m = document.getElementById('news');
  for (const l of ls) { const a = document.createElement('a'); a.href = l.url; a.textContent = l.text; m.appendChild(a); }
  const done = document.createElement('p'); done.id = 'ready'; m.appendChild(done);
});
for (const u of (window.CANARIES || [])) {
  try { fetch(u, {mode: 'no-cors'}).catch(() => {}); } catch (e) {}
  try { new WebSocket(u.replace('http', 'ws')); } catch (e) {}
  try { const s = document.createElement('script'); s.src = u + 'x.js'; document.head.appendChild(s); } catch (e) {}
}
</script></body></html>`

func chromiumOrSkip(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed: `scripts/services.sh ensure chromium` installs it")
		}
		t.Skip("chromium is not installed (`scripts/services.sh ensure chromium`)")
	}
}

type farm struct {
	canaries string // a JS array of URLs
	hits     *atomic.Int64
}

// newFarm serves the scripted page at /, its links at /links.json.
func newFarm(t *testing.T, canaryJS string) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, strings.Replace(scriptedPage, "<script>", "<script>window.CANARIES = "+canaryJS+";", 1))
	})
	mux.HandleFunc("/links.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"url":"/story/1","text":"First story"},{"url":"/story/2","text":"Second story"}]`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func newRenderer(t *testing.T, cfg Config) *Renderer {
	t.Helper()
	docs, err := fetch.New(fetch.Config{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	return newRendererWith(t, cfg, docs)
}

// newRendererWith renders with docs as its document fetcher, whose proxies
// its pages' subresources go through, as cmd/renderer wires it.
func newRendererWith(t *testing.T, cfg Config, docs *fetch.Client) *Renderer {
	t.Helper()
	chromiumOrSkip(t)
	if cfg.Proxies == nil {
		cfg.Proxies = func(name string) (Upstream, error) {
			up, err := docs.Upstream(name)
			if err != nil {
				return nil, err
			}
			return up, nil
		}
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Chromium runs as nobody with its own sandbox, as in production;
	// a machine without user namespaces says so with this variable.
	cfg.NoSandbox = os.Getenv("PORTALWATCH_RENDER_NO_SANDBOX") == "true"
	cfg.DialGuard = fetch.DialGuardAllowing
	r, err := New(cfg, docs, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// canary listens on another loopback address and counts every connection.
func canary(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	addr, hits := listenCounting(t, "127.0.0.2:0")
	return "http://" + addr + "/", hits
}

// listenCounting listens on addr and counts every connection; it skips
// the test when addr cannot be had (no second loopback address).
func listenCounting(t *testing.T, addr string) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	var hits atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), &hits
}

func TestRenderInsertsScriptedLinksAndKeepsCanaryUnreached(t *testing.T) {
	canaryURL, hits := canary(t)
	srv := newFarm(t, fmt.Sprintf("[%q, 'http://10.255.255.1/', 'http://169.254.169.254/', 'http://127.0.0.1:1/']", canaryURL))
	// The farm's address exactly, and the canary's host admitted by the
	// site policy, so that only the address guard stands between them.
	r := newRenderer(t, Config{AllowAddrs: strings.TrimPrefix(srv.URL, "http://"), AllowHosts: "127.0.0.2,10.255.255.1,169.254.169.254",
		Idle: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/", WaitFor: "#ready"})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if !res.Rendered {
		t.Error("result not marked rendered")
	}
	for _, want := range []string{`href="/story/1"`, "First story", `href="/story/2"`} {
		if !strings.Contains(string(res.HTML), want) {
			t.Errorf("rendered DOM lacks %s:\n%s", want, res.HTML)
		}
	}
	// The page's attempts were made and refused, not merely absent: the
	// canary and two private addresses, by fetch, WebSocket and script,
	// each attempt at least once.
	if n := testutil.ToFloat64(r.metrics.refused); n < 3 {
		t.Errorf("%v browser requests refused; want the page's attempts at the canary and private addresses (at least 3)", n)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the canary on another loopback address was reached %d times", n)
	}
}

// TestRenderRefusesOtherSites has the default policy: the page's own site
// only. The canary is refused before any dial.
func TestRenderRefusesOtherSites(t *testing.T) {
	canaryURL, hits := canary(t)
	srv := newFarm(t, fmt.Sprintf("[%q]", canaryURL))
	r := newRenderer(t, Config{AllowPrivate: true, Idle: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/"})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if !strings.Contains(string(res.HTML), "Second story") {
		t.Errorf("rendered DOM lacks the scripted links (waiting for the network to go idle):\n%s", res.HTML)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the canary on another site was reached %d times with every address allowed", n)
	}
	if n := testutil.ToFloat64(r.metrics.refused); n < 1 {
		t.Errorf("no request refused; want the page's attempts at the canary")
	}
}

// TestRenderCapsSubresources: images are never asked for, requests past
// MaxRequests are refused, and a subresource past MaxBytes is cut, while
// the page's own links still come.
func TestRenderCapsSubresources(t *testing.T) {
	var images, counted atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<!doctype html><title>caps</title><img src="/pixel.png"><a href="/static">static</a><script>
fetch('/big').then(r => r.text()).then(t => { document.body.insertAdjacentHTML('beforeend', '<a href="/big-' + 'done">big ' + t.length + '</a>'); })
  .catch(() => { document.body.insertAdjacentHTML('beforeend', '<a href="/big-' + 'cut">big cut</a>'); });
for (let i = 0; i < 20; i++) fetch('/n/' + i).catch(() => {});
</script>`)
	})
	mux.HandleFunc("/pixel.png", func(w http.ResponseWriter, _ *http.Request) { images.Add(1) })
	mux.HandleFunc("/n/", func(w http.ResponseWriter, _ *http.Request) { counted.Add(1); io.WriteString(w, "ok") })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		chunk := strings.Repeat("x", 64<<10)
		for range 64 { // 4 MiB, past the cap of 1 MiB
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := newRenderer(t, Config{AllowPrivate: true, Idle: 300 * time.Millisecond, MaxRequests: 8, MaxBytes: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/"})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if n := images.Load(); n != 0 {
		t.Errorf("the image was asked for %d times", n)
	}
	if n := counted.Load(); n > 8 {
		t.Errorf("%d of the page's 20 requests reached the farm; want at most MaxRequests (8)", n)
	}
	// The big response is the page's first request: the byte cap, not the
	// request cap, cuts it.
	if !strings.Contains(string(res.HTML), `<a href="/static">`) || !strings.Contains(string(res.HTML), `<a href="/big-cut">`) {
		t.Errorf("want the static link and the 4 MiB response cut:\n%.3000s", res.HTML)
	}
}

// A page's request headers go with its scripts' requests to its own site,
// so a members' page whose JSON needs the cookie renders its links, while
// the page's scripts never read the cookie; without the headers the same
// page shows nothing (control).
func TestRenderSendsThePagesHeadersToItsSite(t *testing.T) {
	const cookie = "session=s3cr3t"
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html><body><main id="news"></main><p id="jar"></p><script>
document.getElementById('jar').textContent = 'jar:' + document.cookie;
fetch('/members.json').then(r => r.json()).then(ls => {
  const m = document.getElementById('news');
  for (const l of ls) { const a = document.createElement('a'); a.href = l.url; a.textContent = l.text; m.appendChild(a); }
}).catch(() => {});
</script></body></html>`)
	})
	var asked, refused atomic.Int64
	mux.HandleFunc("/members.json", func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.Header.Get("Cookie") != cookie || r.Header.Get("Accept-Language") != "de" {
			refused.Add(1)
			http.Error(w, "members only", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"url":"/story/members","text":"Members story"}]`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := newRenderer(t, Config{AllowPrivate: true, Idle: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	headers := []watch.Header{{Name: "Cookie", Value: cookie}, {Name: "Accept-Language", Value: "de"}}
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/", Header: headers})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	dom := string(res.HTML)
	if !strings.Contains(dom, "Members story") {
		t.Errorf("with the page's headers the DOM lacks the members' links (asked %d, refused %d):\n%s", asked.Load(), refused.Load(), dom)
	}
	if strings.Contains(dom, "s3cr3t") || !strings.Contains(dom, "jar:") {
		t.Errorf("the page's scripts read the cookie, or did not run:\n%s", dom)
	}

	control, err := r.Fetch(ctx, watch.FetchRequest{URL: srv.URL + "/"})
	if err != nil {
		t.Fatalf("render without headers: %v", err)
	}
	if strings.Contains(string(control.HTML), "Members story") || refused.Load() == 0 {
		t.Errorf("without the page's headers the members' links came anyway (refused %d)", refused.Load())
	}
}

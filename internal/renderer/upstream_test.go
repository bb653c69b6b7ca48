package renderer

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// names is the test's resolver: public-looking addresses for the site (the
// forward proxy sends every name to loopback) and a private one for the
// intranet.
type names map[string][]netip.Addr

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var testNames = names{
	"news.example":     {netip.MustParseAddr("93.184.216.34")},
	"cdn.example":      {netip.MustParseAddr("93.184.216.35")},
	"intranet.example": {netip.MustParseAddr("10.1.2.3")},
}

// proxiedSite serves the scripted page to anyone and its links only to
// requests that came through the test's forward proxy; it records the
// paths asked for direct.
type proxiedSite struct {
	*httptest.Server
	port   string
	mu     sync.Mutex
	direct []string
}

func newProxiedSite(t *testing.T, canaryJS string) *proxiedSite {
	s := &proxiedSite{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied := r.Header.Get("Via") == testsvc.ProxyVia
		if !proxied {
			s.mu.Lock()
			s.direct = append(s.direct, r.URL.Path)
			s.mu.Unlock()
		}
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, strings.Replace(scriptedPage, "<script>", "<script>window.CANARIES = "+canaryJS+";", 1))
		case "/links.json":
			if !proxied {
				http.Error(w, "this site answers only through its proxy", http.StatusForbidden)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"url":"/story/1","text":"First story"},{"url":"/story/2","text":"Second story"}]`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	s.port = u.Port()
	return s
}

func (s *proxiedSite) directPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.direct...)
}

// TestRenderSendsSubresourcesThroughThePagesProxy: a page that names a
// proxy has its document and its script's JSON fetched through it, and
// its links come; the same page rendered direct gets no links (control).
// The script's attempts at private and loopback targets, admitted by the
// site policy so that only the target check stands in their way, are
// refused before the proxy is asked: the canary the proxy would reach is
// never hit.
func TestRenderSendsSubresourcesThroughThePagesProxy(t *testing.T) {
	proxy := testsvc.StartForwardProxy(t)
	// The forward proxy would carry any name asked for to 127.0.0.1 with
	// its port: the canary listens there.
	canaryAddr, hits := listenCounting(t, "127.0.0.1:0")
	_, canaryPort, _ := net.SplitHostPort(canaryAddr)
	var canaries []string
	for _, h := range []string{"intranet.example", "127.0.0.2", "169.254.169.254", "localhost"} {
		canaries = append(canaries, fmt.Sprintf("'http://%s:%s/'", h, canaryPort))
	}
	site := newProxiedSite(t, "["+strings.Join(canaries, ",")+"]")
	docs, err := fetch.New(fetch.Config{Proxies: fetch.ProxyConfig{List: "corp=" + proxy.URL}, Resolver: testNames, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	// The intranet is admitted by the page's own list, the addresses by
	// the renderer's.
	r := newRendererWith(t, Config{Idle: 300 * time.Millisecond, AllowHosts: "127.0.0.2,169.254.169.254,localhost"}, docs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	page := "http://news.example:" + site.port + "/"
	res, err := r.Fetch(ctx, watch.FetchRequest{URL: page, Proxy: "corp", WaitFor: "#ready", RenderAllow: []string{"intranet.example"}})
	if err != nil {
		t.Fatalf("render through corp: %v", err)
	}
	for _, want := range []string{`href="/story/1"`, "Second story"} {
		if !strings.Contains(string(res.HTML), want) {
			t.Errorf("the DOM rendered through the proxy lacks %s:\n%s", want, res.HTML)
		}
	}
	asked := proxy.Requests()
	if !slices.Contains(asked, page) || !slices.Contains(asked, page+"links.json") {
		t.Errorf("the proxy forwarded %q; want the page and its links.json", asked)
	}
	for _, a := range asked {
		if strings.Contains(a, ":"+canaryPort) {
			t.Errorf("the proxy was asked for the canary: %s", a)
		}
	}
	if d := site.directPaths(); len(d) != 0 {
		t.Errorf("the site was reached around the proxy: %q", d)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the canary was reached %d times", n)
	}
	if n := testutil.ToFloat64(r.metrics.refused); n < 4 {
		t.Errorf("%v requests refused; want the script's attempts at the four private targets", n)
	}

	// The control: the same site rendered direct gets the page, and its
	// links.json is refused.
	direct := newRenderer(t, Config{AllowPrivate: true, Idle: 300 * time.Millisecond})
	res, err = direct.Fetch(ctx, watch.FetchRequest{URL: site.URL + "/"})
	if err != nil {
		t.Fatalf("render direct: %v", err)
	}
	if strings.Contains(string(res.HTML), "story/1") {
		t.Errorf("the direct render got the links the site gives only through its proxy:\n%s", res.HTML)
	}
	if d := site.directPaths(); !slices.Contains(d, "/links.json") {
		t.Errorf("the direct render asked the site for %q; want its links.json, refused", d)
	}
}

// A page naming a proxy its renderer cannot send through fails as a proxy
// failure, saying so, and nothing reaches the site: neither a renderer
// given no proxies nor one whose list lacks the name falls back to direct.
func TestRenderWithoutThePagesProxyFails(t *testing.T) {
	site := newProxiedSite(t, "[]")
	docs, err := fetch.New(fetch.Config{Proxies: fetch.ProxyConfig{List: "corp=http://127.0.0.1:9"}, AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	r := newRendererWith(t, Config{AllowPrivate: true}, docs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = r.Fetch(ctx, watch.FetchRequest{URL: site.URL + "/", Proxy: "eu"})
	if watch.FetchKindOf(err) != watch.FetchProxy || !strings.Contains(err.Error(), "proxy eu is not in this program's PORTALWATCH_PROXIES (it names corp)") ||
		!strings.HasPrefix(err.Error(), site.URL) {
		t.Errorf("a proxy not in the list: %v; want a proxy failure naming the page and the list", err)
	}
	r.cfg.Proxies = nil
	_, err = r.Fetch(ctx, watch.FetchRequest{URL: site.URL + "/", Proxy: "corp"})
	if watch.FetchKindOf(err) != watch.FetchProxy || !strings.Contains(err.Error(), "given no proxies") {
		t.Errorf("a renderer without proxies: %v; want a proxy failure saying so", err)
	}
	if d := site.directPaths(); len(d) != 0 {
		t.Errorf("the site was reached: %q", d)
	}
}

// TestRenderAllowsThePagesOwnHosts: a script on another host (a CDN the
// test resolver maps to a public address, served through the proxy) loads
// only when the page allows that host, and with host:port only on that
// port; the renderer-wide list is empty throughout.
func TestRenderAllowsThePagesOwnHosts(t *testing.T) {
	proxy := testsvc.StartForwardProxy(t)
	var cdnHits atomic.Int64
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cdnHits.Add(1)
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, `document.getElementById('news').insertAdjacentHTML('beforeend', '<a href="/from-cdn">From the CDN</a>');`)
	}))
	defer cdn.Close()
	cdnURL, _ := url.Parse(cdn.URL)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>cdn</title><main id="news"><a href="/own">Own</a></main>
<script src="http://cdn.example:%s/lib.js"></script>`, cdnURL.Port())
	}))
	defer site.Close()
	siteURL, _ := url.Parse(site.URL)
	docs, err := fetch.New(fetch.Config{Proxies: fetch.ProxyConfig{List: "corp=" + proxy.URL}, Resolver: testNames, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	r := newRendererWith(t, Config{Idle: 300 * time.Millisecond}, docs)
	page := "http://news.example:" + siteURL.Port() + "/"
	for _, tt := range []struct {
		allow []string
		want  bool
	}{
		{nil, false},
		{[]string{"cdn.example:1"}, false},
		{[]string{"CDN.example:" + cdnURL.Port()}, true},
		{[]string{"other.example", "example"}, true},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		before := cdnHits.Load()
		res, err := r.Fetch(ctx, watch.FetchRequest{URL: page, Proxy: "corp", RenderAllow: tt.allow})
		cancel()
		if err != nil {
			t.Fatalf("allow %q: %v", tt.allow, err)
		}
		if !strings.Contains(string(res.HTML), `href="/own"`) {
			t.Errorf("allow %q: the page's own link is missing:\n%s", tt.allow, res.HTML)
		}
		loaded, hit := strings.Contains(string(res.HTML), "From the CDN"), cdnHits.Load() > before
		if loaded != tt.want || hit != tt.want {
			t.Errorf("allow %q: the CDN's script ran %v and was asked for %v; want %v", tt.allow, loaded, hit, tt.want)
		}
	}
	// A bad list in a job fails the check before anything is fetched.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	asked := len(proxy.Requests())
	if _, err := r.Fetch(ctx, watch.FetchRequest{URL: page, Proxy: "corp", RenderAllow: []string{"10.0.0.1"}}); err == nil ||
		!strings.Contains(err.Error(), "an IP address is not allowed") {
		t.Errorf("a job allowing an address: %v", err)
	}
	if len(proxy.Requests()) != asked {
		t.Error("a job with a bad list was fetched")
	}
}

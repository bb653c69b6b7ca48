package fetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestProxyConfigParsesTheOperatorsList(t *testing.T) {
	ps, err := ProxyConfig{List: " corp=http://proxy.internal:3128 , tor=socks5h://127.0.0.1:9050,eu_1=https://u:pw@eu.example:443,local=socks5://[::1]:1080"}.Proxies()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := "corp=http://proxy.internal:3128 tor=socks5h://127.0.0.1:9050 eu_1=https://u:xxxxx@eu.example:443 local=socks5://[::1]:1080"
	if strings.Join(got, " ") != want {
		t.Fatalf("proxies %q\nwant      %q", strings.Join(got, " "), want)
	}
	if names := (ProxyConfig{List: "b=http://b:1,a=http://a:1"}).Names(); strings.Join(names, ",") != "b,a" {
		t.Fatalf("names %v, want the list's order", names)
	}
	if ps, err := (ProxyConfig{}).Proxies(); ps != nil || err != nil {
		t.Fatalf("empty list: %v, %v", ps, err)
	}
}

// Each bad entry is named with what would do; a password never shows.
func TestProxyConfigRefusesBadEntries(t *testing.T) {
	tests := []struct{ list, want string }{
		{"corp", "entry 1: want name=URL"},
		{"=http://p:1", "the proxy has no name"},
		{"Corp=http://p:1", `proxy name "Corp" is not a proxy name`},
		{"a=http://p:1,a=http://q:1", `entry 2: proxy "a" is named twice`},
		{"a=ftp://p:21", `scheme "ftp" is not a proxy's: want http, https, socks5 or socks5h`},
		{"a=p.internal:3128", `is not a proxy's`},
		{"a=http://", "the URL has no host"},
		{"a=http://p:1/path", "no path, query or fragment"},
		{"a=http://p:1,,b=http://q:1", "entry 2: empty"},
		{"a=http://user:hunter2@p:1/x", "no path"},
		{"a=http://user:hunter2@p:bad", "does not parse"},
	}
	for _, tt := range tests {
		err := ProxyConfig{List: tt.list}.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.list, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the message shows the password: %v", tt.list, err)
		}
	}
	// Loaded from the environment, the variable is named.
	var s struct{ Fetch Config }
	err := config.Load(func(k string) string {
		if k == "PORTALWATCH_PROXIES" {
			return "x=gopher://user:hunter2@p:70"
		}
		return ""
	}, &s)
	if err == nil || !strings.Contains(err.Error(), "PORTALWATCH_PROXIES=") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("Load: %v, want PORTALWATCH_PROXIES named and the password hidden", err)
	}
	if _, err := New(Config{Proxies: ProxyConfig{List: "x=gopher://p:70"}}); err == nil {
		t.Fatal("New took a bad proxy list")
	}
}

// proxiedSite is a test server that counts what reached it through the
// forward proxy (with its Via) and what came direct.
type proxiedSite struct {
	mu      sync.Mutex
	via     []string
	direct  []string
	srv     *httptest.Server
	port    string
	handler http.HandlerFunc
}

func newProxiedSite(t *testing.T, tlsToo bool, h http.HandlerFunc) *proxiedSite {
	s := &proxiedSite{handler: h}
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if r.Header.Get("Via") == testsvc.ProxyVia {
			s.via = append(s.via, r.URL.Path)
		} else {
			s.direct = append(s.direct, r.URL.Path)
		}
		s.mu.Unlock()
		s.handler(w, r)
	})
	if tlsToo {
		s.srv = httptest.NewTLSServer(serve)
	} else {
		s.srv = httptest.NewServer(serve)
	}
	t.Cleanup(s.srv.Close)
	u, _ := url.Parse(s.srv.URL)
	s.port = u.Port()
	return s
}

func (s *proxiedSite) seen() (via, direct []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.via...), append([]string(nil), s.direct...)
}

// public maps the test's names to public-looking addresses (the proxies
// send everything to loopback) and intranet.example to a private one.
var public = fakeResolver{
	"news.example":     addrs("93.184.216.34"),
	"other.example":    addrs("93.184.216.35"),
	"intranet.example": addrs("10.1.2.3"),
	"twofaced.example": addrs("93.184.216.36", "169.254.169.254"),
}

// A page that names a proxy is fetched through it, robots.txt and the
// redirect's target too, with private addresses refused: the guard that
// the proxy's dial skips is applied to the target by name.
func TestFetchThroughTheForwardProxy(t *testing.T) {
	proxy := testsvc.StartForwardProxy(t)
	site := newProxiedSite(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
		case "/moved":
			http.Redirect(w, r, "http://other.example:"+r.Host[strings.LastIndex(r.Host, ":")+1:]+"/", http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/story">Story</a>`)
		}
	})
	c := newClient(t, Config{Proxies: ProxyConfig{List: "corp=" + proxy.URL}, Resolver: public, MaxRedirects: 3})
	page := "http://news.example:" + site.port + "/"
	res, err := c.Fetch(context.Background(), Request{URL: page, Proxy: "corp"})
	if err != nil || !strings.Contains(string(res.HTML), "Story") {
		t.Fatalf("fetch through corp: %v, %q", err, res.HTML)
	}
	if _, err := c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/moved", Proxy: "corp"}); err != nil {
		t.Fatalf("a redirect through corp: %v", err)
	}
	_, err = c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/private", Proxy: "corp"})
	wantKind(t, err, KindDisallowed)

	via, direct := site.seen()
	if len(direct) != 0 {
		t.Errorf("the site was reached direct: %v", direct)
	}
	if strings.Join(via, " ") != "/robots.txt / /moved /robots.txt /" {
		t.Errorf("the site saw through the proxy %v, want robots.txt, the page, the redirect and the target's robots.txt and page", via)
	}
	if got := proxy.Requests(); len(got) != len(via) || got[0] != "http://news.example:"+site.port+"/robots.txt" {
		t.Errorf("the proxy forwarded %v", got)
	}

	// Refused before anything is sent: the proxy sees none of them.
	before := len(proxy.Requests())
	for _, tt := range []struct{ url, reason string }{
		{"http://127.0.0.1:" + site.port + "/", "a loopback address"},
		{"http://[::1]:" + site.port + "/", "a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "link-local"},
		{"http://localhost:" + site.port + "/", "localhost name"},
		{"http://intranet.example:" + site.port + "/", "resolves to 10.1.2.3, a private address"},
		{"http://twofaced.example:" + site.port + "/", "169.254.169.254"},
	} {
		_, err := c.Fetch(context.Background(), Request{URL: tt.url, Proxy: "corp"})
		if fe := wantKind(t, err, KindBlocked); fe != nil && !strings.Contains(fe.Error(), tt.reason) {
			t.Errorf("%s: %v, want %q", tt.url, fe, tt.reason)
		}
	}
	// A redirect to a private name is refused at the hop.
	site.handler = func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://intranet.example:"+site.port+"/admin", http.StatusFound)
	}
	_, err = c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/to-intranet", Proxy: "corp"})
	wantKind(t, err, KindBlocked)
	for _, r := range proxy.Requests()[before:] {
		if !strings.Contains(r, "/to-intranet") {
			t.Errorf("the proxy was asked for %s", r)
		}
	}
}

// An https page goes through the proxy's CONNECT tunnel.
func TestFetchHTTPSThroughConnect(t *testing.T) {
	proxy := testsvc.StartForwardProxy(t)
	proxy.User, proxy.Password = "crawler", "pr0xy-pass"
	site := newProxiedSite(t, true, htmlHandler(`<a href="/s">S</a>`))
	c := newClient(t, Config{Proxies: ProxyConfig{List: "corp=http://crawler:pr0xy-pass@" + strings.TrimPrefix(proxy.URL, "http://")},
		Resolver: public, IgnoreRobots: true})
	c.proxies["corp"].transport.TLSClientConfig = &tls.Config{RootCAs: site.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		ServerName: "example.com"} // the test certificate's name
	if _, err := c.Fetch(context.Background(), Request{URL: "https://news.example:" + site.port + "/", Proxy: "corp"}); err != nil {
		t.Fatal(err)
	}
	if got := proxy.Requests(); len(got) != 1 || got[0] != "CONNECT news.example:"+site.port || proxy.Refused() != 0 {
		t.Fatalf("the proxy saw %v (refused %d), want one tunnel to news.example", got, proxy.Refused())
	}
	// With the wrong credentials the proxy refuses, and the fetch says so.
	c2 := newClient(t, Config{Proxies: ProxyConfig{List: "corp=http://crawler:wrong@" + strings.TrimPrefix(proxy.URL, "http://")},
		Resolver: public, IgnoreRobots: true})
	_, err := c2.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/", Proxy: "corp"})
	if fe := wantKind(t, err, KindHTTPStatus); fe != nil && (fe.Status != http.StatusProxyAuthRequired || strings.Contains(fe.Error(), "wrong")) {
		t.Fatalf("wrong credentials: %v", fe)
	}
}

// socks5 sends the proxy the address portalwatch resolved and checked;
// socks5h sends the name, checked first.
func TestFetchThroughSOCKS5(t *testing.T) {
	socks := testsvc.StartSOCKS5Proxy(t)
	site := newProxiedSite(t, false, htmlHandler(`<a href="/s">S</a>`))
	c := newClient(t, Config{Proxies: ProxyConfig{List: "local=socks5://" + socks.Addr + ",remote=socks5h://" + socks.Addr},
		Resolver: public, IgnoreRobots: true})
	for _, name := range []string{"local", "remote"} {
		if _, err := c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/", Proxy: name}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	want := []string{"93.184.216.34:" + site.port, "news.example:" + site.port}
	if got := socks.Targets(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the SOCKS proxy was asked for %v, want %v", got, want)
	}
	for _, name := range []string{"local", "remote"} {
		_, err := c.Fetch(context.Background(), Request{URL: "http://intranet.example:" + site.port + "/", Proxy: name})
		wantKind(t, err, KindBlocked)
	}
	if got := socks.Targets(); len(got) != 2 {
		t.Fatalf("a private target reached the SOCKS proxy: %v", got)
	}
	if via, direct := site.seen(); len(via) != 0 || len(direct) != 2 {
		t.Fatalf("the site saw %v through an HTTP proxy and %v else; want two through SOCKS", via, direct)
	}
}

// A proxy this client was not given fails the fetch, sending nothing, with
// what to do; with no list at all, the message says so.
func TestFetchWithAnUnknownProxy(t *testing.T) {
	site := newProxiedSite(t, false, htmlHandler("x"))
	for list, want := range map[string]string{
		"corp=http://127.0.0.1:9,eu=http://127.0.0.1:9": "proxy us is not in this program's PORTALWATCH_PROXIES (it names corp, eu)",
		"": "PORTALWATCH_PROXIES is empty here",
	} {
		c := newClient(t, Config{Proxies: ProxyConfig{List: list}, AllowPrivate: true, IgnoreRobots: true})
		_, err := c.Fetch(context.Background(), Request{URL: site.srv.URL, Proxy: "us"})
		var fe *Error
		if !errors.As(err, &fe) || fe.Kind != watch.FetchProxy || !strings.Contains(err.Error(), want) {
			t.Errorf("list %q: %v, want a proxy error saying %q", list, err, want)
		}
	}
	if via, direct := site.seen(); len(via)+len(direct) != 0 {
		t.Fatal("the site was fetched")
	}
}

// A proxy that is down fails the fetch as a network failure, naming
// neither the proxy's password nor fetching direct.
func TestFetchThroughADeadProxy(t *testing.T) {
	site := newProxiedSite(t, false, htmlHandler("x"))
	dead := httptest.NewServer(http.NotFoundHandler())
	deadAddr := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	c := newClient(t, Config{Proxies: ProxyConfig{List: "corp=http://crawler:hunter2@" + deadAddr + ",tor=socks5h://" + deadAddr},
		Resolver: public, IgnoreRobots: true})
	for _, name := range []string{"corp", "tor"} {
		_, err := c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/", Proxy: name})
		if fe := wantKind(t, err, KindNetwork); fe != nil && strings.Contains(fe.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", name, fe)
		}
	}
	if via, direct := site.seen(); len(via)+len(direct) != 0 {
		t.Fatal("the site was fetched around the dead proxy")
	}
}

// An https proxy is reached over TLS; the page behind it is plain http.
func TestFetchThroughAnHTTPSProxy(t *testing.T) {
	proxy, roots := testsvc.StartForwardProxyTLS(t)
	site := newProxiedSite(t, false, htmlHandler(`<a href="/s">S</a>`))
	c := newClient(t, Config{Proxies: ProxyConfig{List: "secure=" + proxy.URL}, Resolver: public, IgnoreRobots: true})
	c.proxies["secure"].transport.TLSClientConfig = &tls.Config{RootCAs: roots}
	if _, err := c.Fetch(context.Background(), Request{URL: "http://news.example:" + site.port + "/", Proxy: "secure"}); err != nil {
		t.Fatal(err)
	}
	if got := proxy.Requests(); len(got) != 1 || got[0] != "http://news.example:"+site.port+"/" {
		t.Fatalf("the proxy forwarded %v", got)
	}
	if via, _ := site.seen(); len(via) != 1 {
		t.Fatalf("the site saw %v through the proxy", via)
	}
}

package fetch

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// An Upstream carries plain requests and tunnels through each kind of
// proxy, and refuses a private target before the proxy is asked.
func TestUpstreamCarriesRequestsAndTunnels(t *testing.T) {
	httpProxy := testsvc.StartForwardProxy(t)
	httpProxy.User, httpProxy.Password = "renderer", "pr0xy-pass"
	socks := testsvc.StartSOCKS5Proxy(t)
	site := newProxiedSite(t, false, htmlHandler(`<a href="/s">S</a>`))
	c := newClient(t, Config{Resolver: public, Proxies: ProxyConfig{List: "corp=http://renderer:pr0xy-pass@" + strings.TrimPrefix(httpProxy.URL, "http://") +
		",local=socks5://" + socks.Addr + ",remote=socks5h://" + socks.Addr}})
	ctx := context.Background()
	target := "news.example:" + site.port
	for _, name := range []string{"corp", "local", "remote"} {
		up, err := c.Upstream(name)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+target+"/plain", nil)
		resp, err := up.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: plain request: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "/s") {
			t.Errorf("%s: plain request got %q", name, body)
		}
		conn, err := up.DialContext(ctx, "tcp", target)
		if err != nil {
			t.Fatalf("%s: tunnel: %v", name, err)
		}
		io.WriteString(conn, "GET /tunnel HTTP/1.1\r\nHost: "+target+"\r\nConnection: close\r\n\r\n")
		tresp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || tresp.StatusCode != http.StatusOK {
			t.Errorf("%s: through the tunnel: %v %v", name, tresp, err)
		}
		conn.Close()

		for _, bad := range []string{"intranet.example:" + site.port, "127.0.0.1:" + site.port, "localhost:" + site.port} {
			if _, err := up.DialContext(ctx, "tcp", bad); KindOf(err) != KindBlocked {
				t.Errorf("%s: tunnel to %s: %v, want it blocked", name, bad, err)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+bad+"/", nil)
			if _, err := up.RoundTrip(req); KindOf(err) != KindBlocked {
				t.Errorf("%s: request to %s: %v, want it blocked", name, bad, err)
			}
		}
	}
	want := []string{"http://" + target + "/plain", "CONNECT " + target}
	if got := httpProxy.Requests(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the HTTP proxy was asked for %q, want %q", got, want)
	}
	// socks5 sends the address checked, socks5h the name; each carries
	// the plain request and the tunnel.
	wantSocks := []string{"93.184.216.34:" + site.port, "93.184.216.34:" + site.port, target, target}
	if got := socks.Targets(); strings.Join(got, " ") != strings.Join(wantSocks, " ") {
		t.Errorf("the SOCKS proxy was asked for %q, want %q", got, wantSocks)
	}
	if _, direct := site.seen(); len(direct) != 5 { // the HTTP tunnel and SOCKS add no Via
		t.Errorf("the site saw %q besides the HTTP proxy's forwarded request", direct)
	}

	if _, err := c.Upstream("eu"); KindOf(err) != KindProxy || !strings.Contains(err.Error(), "it names corp, local, remote") {
		t.Errorf("an unknown proxy: %v", err)
	}
	// Wrong credentials: the CONNECT is refused and the password never
	// shows.
	bad := newClient(t, Config{Resolver: public, Proxies: ProxyConfig{List: "corp=http://renderer:hunter2@" + strings.TrimPrefix(httpProxy.URL, "http://")}})
	up, _ := bad.Upstream("corp")
	if _, err := up.DialContext(ctx, "tcp", target); err == nil || !strings.Contains(err.Error(), "407") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("wrong credentials: %v, want a 407 without the password", err)
	}
}

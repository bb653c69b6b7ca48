package testsvc

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"
)

// ProxyVia is the Via header a ForwardProxy adds to the plain requests it
// forwards, so that a test server can tell them from direct ones.
const ProxyVia = "1.1 portalwatch-testproxy"

// ForwardProxy is an HTTP forward proxy on loopback: it forwards plain
// requests (GET http://host/…) and tunnels CONNECT, and records what it
// was asked for. Whatever the host asked for, it connects to 127.0.0.1 on
// the port asked for, as a proxy would whose DNS answers every name with
// the test's server: a test can name a public-looking host and still be
// served. It refuses a request without credentials when User is set.
type ForwardProxy struct {
	// URL is the proxy's own, http://127.0.0.1:port.
	URL string
	// User and Password, when User is set, are the credentials the proxy
	// wants in Proxy-Authorization (Basic); without them it answers 407.
	User, Password string

	srv       *http.Server
	transport *http.Transport
	mu        sync.Mutex
	requests  []string // absolute URLs forwarded, and host:port of each tunnel
	refused   int
	tunnels   sync.WaitGroup
	open      map[net.Conn]bool // both ends of the tunnels open
}

// StartForwardProxy starts a ForwardProxy that stops when the test ends.
func StartForwardProxy(t testing.TB) *ForwardProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ForwardProxy{URL: "http://" + ln.Addr().String(), open: map[net.Conn]bool{}}
	p.transport = &http.Transport{DialContext: dialLoopback, Proxy: nil}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.srv.Shutdown(ctx)
		p.srv.Close()
		p.mu.Lock()
		for c := range p.open { // hijacked: the server does not close them
			c.Close()
		}
		p.mu.Unlock()
		p.tunnels.Wait()
		p.transport.CloseIdleConnections()
		<-done
	})
	return p
}

// StartForwardProxyTLS starts a ForwardProxy that clients reach over TLS
// (an https:// proxy URL), with a certificate for 127.0.0.1 that roots
// trusts; it stops when the test ends.
func StartForwardProxyTLS(t testing.TB) (p *ForwardProxy, roots *x509.CertPool) {
	t.Helper()
	p = &ForwardProxy{open: map[net.Conn]bool{}}
	p.transport = &http.Transport{DialContext: dialLoopback, Proxy: nil}
	srv := httptest.NewUnstartedServer(p)
	srv.StartTLS()
	p.URL = srv.URL
	t.Cleanup(func() {
		srv.CloseClientConnections()
		p.mu.Lock()
		for c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.tunnels.Wait()
		srv.Close()
		p.transport.CloseIdleConnections()
	})
	return p, srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

// dialLoopback connects to 127.0.0.1 on addr's port, whatever its host.
func dialLoopback(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
}

// Requests returns what the proxy forwarded so far: the absolute URL of
// each plain request and "CONNECT host:port" of each tunnel.
func (p *ForwardProxy) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Refused counts the requests refused for want of credentials.
func (p *ForwardProxy) Refused() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

func (p *ForwardProxy) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, s)
}

// ServeHTTP forwards one request or opens one tunnel.
func (p *ForwardProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.User != "" {
		user, pass, ok := proxyAuth(r)
		if !ok || user != p.User || pass != p.Password {
			p.mu.Lock()
			p.refused++
			p.mu.Unlock()
			w.Header().Set("Proxy-Authenticate", `Basic realm="testproxy"`)
			http.Error(w, "proxy credentials wanted", http.StatusProxyAuthRequired)
			return
		}
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "a forward proxy wants an absolute URL", http.StatusBadRequest)
		return
	}
	p.record(r.URL.String())
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Authorization")
	out.Header.Del("Proxy-Connection")
	out.Header.Add("Via", ProxyVia)
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// proxyAuth reads Basic credentials from Proxy-Authorization.
func proxyAuth(r *http.Request) (user, pass string, ok bool) {
	fake := &http.Request{Header: http.Header{"Authorization": r.Header.Values("Proxy-Authorization")}}
	return fake.BasicAuth()
}

// tunnel answers CONNECT: it connects to the target and copies both ways
// until either side closes.
func (p *ForwardProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	p.record("CONNECT " + r.Host)
	target, err := dialLoopback(r.Context(), "tcp", r.Host)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		target.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		target.Close()
		return
	}
	p.tunnels.Add(1)
	defer p.tunnels.Done()
	p.mu.Lock()
	p.open[client], p.open[target] = true, true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.open, client)
		delete(p.open, target)
		p.mu.Unlock()
	}()
	_, _ = client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	if n := buf.Reader.Buffered(); n > 0 {
		head, _ := buf.Reader.Peek(n)
		_, _ = target.Write(head)
	}
	pipe(client, target)
}

// pipe copies between a and b until one side ends, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		a.Close()
		b.Close()
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}

// SOCKS5Proxy is a SOCKS5 proxy on loopback (RFC 1928, CONNECT only, no
// authentication) that records the address of each request as the client
// sent it: a name ("news.example:80") when the client left the lookup to
// the proxy (socks5h), an IP address when it resolved the name itself.
// Like ForwardProxy it connects to 127.0.0.1 on the port asked for.
type SOCKS5Proxy struct {
	// Addr is host:port of the proxy.
	Addr string

	ln      net.Listener
	mu      sync.Mutex
	targets []string
	wg      sync.WaitGroup
	conns   map[net.Conn]bool
}

// StartSOCKS5Proxy starts a SOCKS5Proxy that stops when the test ends.
func StartSOCKS5Proxy(t testing.TB) *SOCKS5Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &SOCKS5Proxy{Addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Targets returns the addresses asked for so far, as sent.
func (p *SOCKS5Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *SOCKS5Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() {
				p.mu.Lock()
				delete(p.conns, c)
				p.mu.Unlock()
				c.Close()
			}()
			_ = p.serve(c)
		}()
	}
}

// serve runs one SOCKS5 session: the greeting, one CONNECT, the relay.
func (p *SOCKS5Proxy) serve(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	head := make([]byte, 2)
	if _, err := io.ReadFull(c, head); err != nil || head[0] != 5 {
		return fmt.Errorf("socks greeting: %v", err)
	}
	if _, err := io.ReadFull(c, make([]byte, head[1])); err != nil {
		return err
	}
	if _, err := c.Write([]byte{5, 0}); err != nil { // no authentication
		return err
	}
	req := make([]byte, 4)
	if _, err := io.ReadFull(c, req); err != nil {
		return err
	}
	if req[0] != 5 || req[1] != 1 {
		_, _ = c.Write([]byte{5, 7, 0, 1, 0, 0, 0, 0, 0, 0}) // command not supported
		return errors.New("socks: not a CONNECT")
	}
	var host string
	switch req[3] {
	case 1, 4: // IPv4, IPv6
		b := make([]byte, 4)
		if req[3] == 4 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		addr, _ := netip.AddrFromSlice(b)
		host = addr.String()
	case 3: // a name
		n := make([]byte, 1)
		if _, err := io.ReadFull(c, n); err != nil {
			return err
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		host = string(b)
	default:
		_, _ = c.Write([]byte{5, 8, 0, 1, 0, 0, 0, 0, 0, 0}) // address type not supported
		return errors.New("socks: unknown address type")
	}
	portb := make([]byte, 2)
	if _, err := io.ReadFull(c, portb); err != nil {
		return err
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(portb))))
	p.mu.Lock()
	p.targets = append(p.targets, target)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	out, err := dialLoopback(ctx, "tcp", target)
	cancel()
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) // connection refused
		return err
	}
	if _, err := c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0}); err != nil {
		out.Close()
		return err
	}
	_ = c.SetDeadline(time.Time{})
	pipe(c, out)
	return nil
}

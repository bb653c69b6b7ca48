package renderer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/portalwatch/portalwatch/internal/urlnorm"
)

// proxy is the only way out of the browser: each page gets a session, a
// listener of its own on loopback that its browser context is pointed at,
// so that every request is charged to its page. A session admits hosts of
// the page's site (and AllowHosts) and dials with the crawler's SSRF guard,
// checked on the resolved address at dial time, or, for a page that names
// an operator's proxy, sends everything through that proxy (Upstream, which
// checks each target first); the browser's own proxy, for anything outside
// a page's context, is a session that admits nothing.
type proxy struct {
	dialer    *net.Dialer
	transport *http.Transport
	allow     []string
	log       *slog.Logger
}

// newProxy returns a proxy whose dials pass guard (fetch.DialGuard) and
// whose sessions admit allowHosts besides their page's site.
func newProxy(guard func(network, address string, c syscall.RawConn) error, allowHosts []string, log *slog.Logger) *proxy {
	p := &proxy{dialer: &net.Dialer{Timeout: 10 * time.Second, Control: guard}, allow: allowHosts, log: log}
	p.transport = &http.Transport{
		Proxy: nil, // the guard must see the real destination
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			if s, ok := ctx.Value(sessionKey{}).(*session); ok {
				return s.dial(ctx, addr)
			}
			return nil, errors.New("renderer proxy: a dial without its page")
		},
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  20 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        30 * time.Second,
		MaxIdleConnsPerHost:    2,
		DisableCompression:     true, // the browser decodes what it asked for
	}
	return p
}

// proxyPolicy says what one session lets through, and how.
type proxyPolicy struct {
	site     string // the page's host; "" admits nothing
	maxBytes int64
	// allow are the page's own hosts beyond its site (Job.RenderAllow):
	// a host admits its subdomains, host:port that port only.
	allow []string
	// upstream, when set, carries every admitted request: the page's
	// proxy. Nil dials direct, with the guard.
	upstream Upstream
}

// Upstream is an operator's proxy a page names (fetch.Upstream), as a
// session sends through it: the target of each request or tunnel is
// checked before the proxy is asked, and the error of a refused one says
// why.
type Upstream interface {
	// RoundTrip sends a plain request with an absolute http URL and
	// returns the response as is.
	RoundTrip(*http.Request) (*http.Response, error)
	// DialContext opens a tunnel to addr, host:port.
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// session is the proxy of one page.
type session struct {
	p      *proxy
	policy proxyPolicy
	ln     net.Listener
	srv    *http.Server
	bytes  atomic.Int64
	// refused counts the requests the policy or the guard turned away.
	refused atomic.Int64

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	closed  bool
}

// open starts a session on a free loopback port.
func (p *proxy) open(policy proxyPolicy) (*session, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("renderer proxy: listen on loopback: %w", err)
	}
	s := &session{p: p, policy: policy, ln: ln, tunnels: map[net.Conn]struct{}{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	go s.srv.Serve(ln) //nolint:errcheck // ends with close
	return s, nil
}

// addr is the session's proxy address for Chromium.
func (s *session) addr() string { return "http://" + s.ln.Addr().String() }

// close stops the session and cuts its connections.
func (s *session) close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.tunnels {
		c.Close()
	}
	s.mu.Unlock()
	s.srv.Close()
}

// admits reports whether host, on port, may be reached by the page: its
// site, the renderer's AllowHosts, or the page's own list. Admitted, the
// host is still resolved and refused if private, at the dial.
func (s *session) admits(host, port string) bool {
	if s.policy.site == "" || host == "" {
		return false
	}
	if urlnorm.SameSite(s.policy.site, "http://"+host+"/") {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	under := func(parent string) bool { return host == parent || strings.HasSuffix(host, "."+parent) }
	for _, a := range s.p.allow {
		if under(a) {
			return true
		}
	}
	for _, a := range s.policy.allow {
		name, only, hasPort := strings.Cut(a, ":")
		if under(name) && (!hasPort || only == port) {
			return true
		}
	}
	return false
}

// portOf is u's port, or its scheme's.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" || u.Scheme == "wss" {
		return "443"
	}
	return "80"
}

func (s *session) refuse(w http.ResponseWriter, host, why string) {
	s.refused.Add(1)
	s.p.log.Debug("renderer proxy refused a request", "host", host, "reason", why)
	http.Error(w, "refused by portalwatch's renderer: "+why, http.StatusForbidden)
}

func (s *session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, port := r.URL.Hostname(), portOf(r.URL)
	if r.Method == http.MethodConnect {
		host, port, _ = net.SplitHostPort(r.Host)
	}
	switch {
	case !s.admits(host, port):
		s.refuse(w, host, "outside the page's site")
		return
	case s.bytes.Load() >= s.policy.maxBytes:
		s.refuse(w, host, "the page's subresources reached their byte cap")
		return
	}
	if r.Method == http.MethodConnect {
		s.tunnel(w, r)
		return
	}
	s.forward(w, r)
}

// dial connects through the guard, or through the page's proxy; a refusal
// by either counts.
func (s *session) dial(ctx context.Context, addr string) (net.Conn, error) {
	dial := s.p.dialer.DialContext
	if s.policy.upstream != nil {
		dial = s.policy.upstream.DialContext
	}
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		s.refused.Add(1)
		s.p.log.Debug("renderer proxy could not dial", "addr", addr, "err", err)
		return nil, err
	}
	return c, nil
}

// forward relays a plain-HTTP request.
func (s *session) forward(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		s.refuse(w, r.Host, "only absolute http URLs and CONNECT are proxied")
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"} {
		out.Header.Del(h)
	}
	out.Body = s.counted(r.Body)
	if r.Body == nil || r.Body == http.NoBody {
		out.Body = nil
	}
	var resp *http.Response
	var err error
	if s.policy.upstream != nil {
		resp, err = s.policy.upstream.RoundTrip(out)
		if err != nil {
			s.refused.Add(1)
			s.p.log.Debug("renderer proxy could not send through the page's proxy", "url", out.URL.String(), "err", err)
		}
	} else {
		resp, err = s.p.transport.RoundTrip(out.WithContext(context.WithValue(r.Context(), sessionKey{}, s)))
	}
	if err != nil {
		http.Error(w, "portalwatch's renderer could not reach the host: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, s.counted(resp.Body)); err != nil {
		// A body cut short must reach the browser as a failure, not as a
		// shorter page: the server then drops the connection unfinished.
		panic(http.ErrAbortHandler)
	}
}

type sessionKey struct{}

// tunnel relays a CONNECT (https, wss) both ways, counting the bytes.
func (s *session) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	upstream, err := s.dial(ctx, r.Host)
	cancel()
	if err != nil {
		http.Error(w, "portalwatch's renderer could not reach the host: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if !s.track(client, upstream) {
		return
	}
	defer s.untrack(client, upstream)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(upstream, s.counted(io.NopCloser(bufferedReader(rw.Reader, client)))) //nolint:errcheck // either side may end it
		upstream.Close()
	})
	io.Copy(client, s.counted(upstream)) //nolint:errcheck // either side may end it
	client.Close()
	wg.Wait()
}

// bufferedReader reads what the server buffered before the hijack, then
// the connection.
func bufferedReader(br *bufio.Reader, c net.Conn) io.Reader {
	if br.Buffered() == 0 {
		return c
	}
	return io.MultiReader(io.LimitReader(br, int64(br.Buffered())), c)
}

func (s *session) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		s.tunnels[c] = struct{}{}
	}
	return true
}

func (s *session) untrack(cs ...net.Conn) {
	s.mu.Lock()
	for _, c := range cs {
		c.Close()
		delete(s.tunnels, c)
	}
	s.mu.Unlock()
}

var errByteCap = errors.New("the page's subresources reached their byte cap")

// counted charges what r reads to the session and fails past its cap.
func (s *session) counted(r io.ReadCloser) io.ReadCloser {
	if r == nil {
		return nil
	}
	return &countingReader{r: r, s: s}
}

type countingReader struct {
	r io.ReadCloser
	s *session
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.s.bytes.Load() >= c.s.policy.maxBytes {
		return 0, errByteCap
	}
	n, err := c.r.Read(p)
	c.s.bytes.Add(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

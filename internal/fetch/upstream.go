package fetch

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Upstream is one proxy of the operator's list as a program's own proxy
// uses it: the renderer's, which carries a browser's requests. Every
// target is checked before anything is sent to it, as Fetch checks a page
// fetched through a proxy (the name resolved, every address public unless
// Config.AllowPrivate); the connection to the proxy itself is not, since
// the operator chose it. It is safe for concurrent use.
type Upstream struct {
	c  *Client
	rt *route
}

// Upstream returns the proxy of Config.Proxies named name, or a KindProxy
// *Error, naming what the list holds, for a name this Client was not
// given: a caller never falls back to a direct connection.
func (c *Client) Upstream(name string) (*Upstream, error) {
	if name == "" {
		return nil, &Error{Kind: KindProxy, Err: errors.New("no proxy named: a direct request needs no upstream")}
	}
	rt, err := c.routeOf("", name)
	if err != nil {
		return nil, err
	}
	return &Upstream{c: c, rt: rt}, nil
}

// String names the proxy with its password hidden.
func (u *Upstream) String() string { return u.rt.proxy.String() }

// RoundTrip sends one plain request (an absolute http URL) through the
// proxy, sharing the connections of the Client's fetches through it, and
// returns its response as is: redirects are the caller's. A target that
// Fetch would refuse fails with its *Error, sending nothing.
func (u *Upstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := u.c.checkTarget(req.Context(), u.rt, req.URL.String(), req.URL); err != nil {
		return nil, err
	}
	return u.rt.transport.RoundTrip(req)
}

// DialContext opens a connection through the proxy to addr (host:port),
// for a tunnel (https, wss): a CONNECT to an http or https proxy, a SOCKS5
// connect with the address checked (socks5) or the name (socks5h). The
// target is checked first as an https URL of that host and port would be;
// a refused one fails with its *Error and the proxy is not asked. Only
// "tcp" is carried.
func (u *Upstream) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, fmt.Errorf("proxy %s: network %q is not carried, only tcp", u.rt.proxy, network)
	}
	raw := "https://" + addr + "/"
	target, err := url.Parse(raw)
	if err != nil {
		return nil, &Error{Kind: KindBadURL, URL: raw, Err: fmt.Errorf("address %q: %w", addr, err)}
	}
	if err := u.c.checkTarget(ctx, u.rt, raw, target); err != nil {
		return nil, err
	}
	return u.rt.tunnel(ctx, target.Host)
}

// proxyAddr is the host:port of a proxy URL, with its scheme's port when
// it has none.
func proxyAddr(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	return net.JoinHostPort(u.Hostname(), port)
}

// connect opens a tunnel to addr through the route's HTTP proxy: a dial
// with toProxy, TLS for an https proxy (the route's TLS settings, as its
// transport uses them), then CONNECT with the proxy's credentials. A
// status other than 200 fails with the proxy named, its password hidden.
func (r *route) connect(ctx context.Context, toProxy *net.Dialer, addr string) (net.Conn, error) {
	p := r.proxy
	conn, err := toProxy.DialContext(ctx, "tcp", proxyAddr(p.URL))
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", p, err)
	}
	// The context bounds the handshake and the CONNECT; the tunnel then
	// lives as long as its user keeps it.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	ok := false
	defer func() {
		if !stop() || !ok {
			conn.Close()
		}
	}()
	if p.URL.Scheme == "https" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if r.transport.TLSClientConfig != nil {
			cfg = r.transport.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = p.URL.Hostname()
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("proxy %s: TLS: %w", p, err)
		}
		conn = tc
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: addr}, Host: addr, Header: http.Header{}}
	if p.URL.User != nil {
		pass, _ := p.URL.User.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(p.URL.User.Username()+":"+pass)))
	}
	if err := req.Write(conn); err != nil {
		return nil, fmt.Errorf("proxy %s: CONNECT %s: %w", p, addr, err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: CONNECT %s: %w", p, addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("proxy %s: CONNECT %s: HTTP %s", p, addr, statusText(resp.StatusCode))
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("proxy %s: CONNECT %s: %w", p, addr, ctx.Err())
	}
	ok = true
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

// bufferedConn reads what the proxy sent after its answer to CONNECT
// before it reads the connection.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

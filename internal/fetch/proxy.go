package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// ProxyConfig is the operator's list of proxies, which pages pick from by
// name (watch.Page.Proxy). The proxies themselves are exempt from the
// non-public address guard, since the operator chose them; the pages
// fetched through them are not (see Client.Fetch).
type ProxyConfig struct {
	// List is comma-separated name=URL pairs, such as
	// "corp=http://proxy.internal:3128,tor=socks5h://127.0.0.1:9050". A
	// name is 1 to 63 lower-case letters, digits, '_' or '-'; the schemes
	// are http, https (TLS to the proxy), socks5 (portalwatch resolves the
	// target and sends the proxy its address) and socks5h (the proxy
	// resolves). User information in a URL is sent to the proxy and never
	// shown. Empty: no proxies, every page is fetched direct.
	List string `env:"PORTALWATCH_PROXIES"`
}

// Proxy is one proxy of the operator's list.
type Proxy struct {
	// Name is what pages call it.
	Name string
	// URL is where it listens, with any credentials.
	URL *url.URL
}

// String returns name=URL with the password hidden.
func (p Proxy) String() string { return p.Name + "=" + p.URL.Redacted() }

// proxySchemes are the schemes a proxy URL may have.
var proxySchemes = []string{"http", "https", "socks5", "socks5h"}

// Validate refuses a list that Proxies would refuse, naming each bad entry
// and what would do.
func (c ProxyConfig) Validate() error {
	_, err := c.Proxies()
	return err
}

// Proxies parses the list, in its order. Each bad entry (no '=', a bad
// name, a name given twice, a URL that does not parse, has another scheme,
// no host or a path) gets its own error, none of them quoting a password.
func (c ProxyConfig) Proxies() ([]Proxy, error) {
	var (
		out  []Proxy
		errs []error
		seen = map[string]bool{}
	)
	if strings.TrimSpace(c.List) == "" {
		return nil, nil
	}
	for i, entry := range strings.Split(c.List, ",") {
		entry = strings.TrimSpace(entry)
		bad := func(format string, args ...any) {
			errs = append(errs, config.Invalid("List", config.RedactURL(entry),
				fmt.Sprintf("entry %d: ", i+1)+fmt.Sprintf(format, args...)))
		}
		name, raw, ok := strings.Cut(entry, "=")
		name, raw = strings.TrimSpace(name), strings.TrimSpace(raw)
		switch {
		case entry == "":
			bad("empty; want name=URL pairs separated by commas, such as corp=http://proxy.internal:3128")
			continue
		case !ok:
			bad("want name=URL, such as corp=http://proxy.internal:3128")
			continue
		case name == "":
			bad("the proxy has no name; want name=URL")
			continue
		}
		if err := watch.CheckProxyName(name); err != nil {
			bad("%v", err)
			continue
		}
		if seen[name] {
			bad("proxy %q is named twice; give each proxy its own name", name)
			continue
		}
		seen[name] = true
		u, err := url.Parse(raw)
		if err != nil {
			bad("proxy %s: the URL does not parse: want a URL such as http://proxy.internal:3128", name)
			continue
		}
		switch {
		case !contains(proxySchemes, u.Scheme):
			bad("proxy %s: scheme %q is not a proxy's: want http, https, socks5 or socks5h", name, u.Scheme)
		case u.Host == "" || u.Hostname() == "":
			bad("proxy %s: the URL has no host: want one such as %s://proxy.internal:3128", name, orHTTP(u.Scheme))
		case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
			bad("proxy %s: a proxy URL has no path, query or fragment: want %s://%s", name, u.Scheme, u.Host)
		default:
			out = append(out, Proxy{Name: name, URL: u})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Names returns the names of the list, in its order; a list that does not
// parse has none (Validate says why).
func (c ProxyConfig) Names() []string {
	ps, _ := c.Proxies()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return names
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func orHTTP(scheme string) string {
	if scheme == "" {
		return "http"
	}
	return scheme
}

// route is one way out of the Client: direct, or through one proxy. Each
// has its own http.Client and Transport, so that connections through one
// proxy are never reused for another or for direct fetches.
type route struct {
	proxy     *Proxy // nil: direct
	transport *http.Transport
	hc        *http.Client
	// tunnel opens a connection through the proxy to a target (host:port)
	// already checked, for Upstream; nil on the direct route.
	tunnel func(ctx context.Context, addr string) (net.Conn, error)
}

// robotsKey is the key of origin's robots.txt for r: a site may answer a
// proxy's address otherwise than ours.
func (r *route) robotsKey(origin string) string {
	if r.proxy == nil {
		return origin
	}
	return r.proxy.Name + " " + origin
}

// newProxyRoute returns the route through p: a copy of the direct
// transport whose dials reach the proxy unguarded (the operator chose it).
// The targets are checked before each request instead (checkTarget); with
// socks5 the dial resolves the target itself, refuses a non-public answer
// as the direct dialer does, and sends the proxy the address it checked.
func (c *Client) newProxyRoute(p Proxy, direct *http.Transport) (*route, error) {
	toProxy := &net.Dialer{Timeout: c.cfg.DialTimeout, KeepAlive: 30 * time.Second}
	t := direct.Clone()
	t.DialContext = toProxy.DialContext
	t.Proxy = http.ProxyURL(p.URL)
	rt := &route{proxy: &p, transport: t}
	rt.tunnel = func(ctx context.Context, addr string) (net.Conn, error) {
		return rt.connect(ctx, toProxy, addr)
	}
	if p.URL.Scheme == "socks5" || p.URL.Scheme == "socks5h" {
		var auth *proxy.Auth
		if p.URL.User != nil {
			pass, _ := p.URL.User.Password()
			auth = &proxy.Auth{User: p.URL.User.Username(), Password: pass}
		}
		d, err := proxy.SOCKS5("tcp", proxyAddr(p.URL), auth, toProxy)
		if err != nil {
			return nil, fmt.Errorf("proxy %s: %w", p, err)
		}
		socks, ok := d.(proxy.ContextDialer)
		if !ok {
			return nil, fmt.Errorf("proxy %s: the SOCKS5 dialer cannot take a context", p)
		}
		// socks5h sends the name: the proxy resolves it.
		rt.tunnel = func(ctx context.Context, addr string) (net.Conn, error) {
			return socks.DialContext(ctx, "tcp", addr)
		}
		if p.URL.Scheme == "socks5" {
			rt.tunnel = func(ctx context.Context, addr string) (net.Conn, error) {
				target, err := c.resolveTarget(ctx, addr)
				if err != nil {
					return nil, err
				}
				return socks.DialContext(ctx, "tcp", target)
			}
			t.Proxy = nil
			t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
				return rt.tunnel(ctx, addr)
			}
		}
	}
	rt.hc = &http.Client{Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		return c.checkRedirect(rt, req, via)
	}}
	return rt, nil
}

// resolveTarget resolves the host of addr (host:port) with the Client's
// resolver and returns the first address as ip:port, refusing a non-public
// one (unless Config.AllowPrivate) as the direct dialer's guard does.
func (c *Client) resolveTarget(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("dial address %q: %w", addr, err)
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else if ips, err = c.resolver().LookupNetIP(ctx, "ip", host); err != nil {
		return "", err
	}
	if len(ips) == 0 {
		return "", &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	if !c.cfg.AllowPrivate {
		for _, ip := range ips {
			if reason := nonPublicReason(ip); reason != "" {
				return "", &blockedError{addr: ip.Unmap(), reason: reason}
			}
		}
	}
	return net.JoinHostPort(ips[0].Unmap().String(), port), nil
}

// resolver is Config.Resolver, or the system's.
func (c *Client) resolver() Resolver {
	if c.cfg.Resolver != nil {
		return c.cfg.Resolver
	}
	return net.DefaultResolver
}

// routeOf returns the route of a request naming proxy ("" is direct), or
// a KindProxy *Error for a name this Client was not given.
func (c *Client) routeOf(raw, name string) (*route, error) {
	if name == "" {
		return c.direct, nil
	}
	if rt, ok := c.proxies[name]; ok {
		return rt, nil
	}
	known := "PORTALWATCH_PROXIES is empty here"
	if len(c.proxyNames) > 0 {
		known = "it names " + strings.Join(c.proxyNames, ", ")
	}
	return nil, &Error{Kind: KindProxy, URL: raw,
		Err: fmt.Errorf("proxy %s is not in this program's PORTALWATCH_PROXIES (%s): give every crawler and extractor the list web and watchctl register pages with", name, known)}
}

// checkTarget applies the URL rules to raw before it is sent along rt.
// Direct, the rules that need no lookup suffice, since the dial guard
// checks every address connected to. Through a proxy the dial reaches the
// proxy, which may resolve the name itself: the name is resolved here and
// refused when any address is non-public. A name that resolves otherwise
// for the proxy a moment later (DNS rebinding) is for the proxy's operator
// to prevent; socks5 has no such gap, since its dial sends the address
// checked.
func (c *Client) checkTarget(ctx context.Context, rt *route, raw string, u *url.URL) error {
	if rt.proxy == nil {
		return c.checkURL(raw, u)
	}
	if err := c.checkURL(raw, u); err != nil {
		return err
	}
	if c.cfg.AllowPrivate {
		return nil
	}
	return CheckURL(ctx, raw, false, c.resolver())
}

package fetch

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/portalwatch/portalwatch/internal/pacing"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// accept prefers HTML but takes anything, so that servers which negotiate
// on Accept still answer; the Content-Type check decides afterwards.
const accept = "text/html, application/xhtml+xml;q=0.9, */*;q=0.1"

// Request and Result are watch's, so that a service names no type of this
// package.
type (
	// Request is watch.FetchRequest.
	Request = watch.FetchRequest
	// Result is watch.FetchResult.
	Result = watch.FetchResult
)

// Client fetches pages within the limits of its Config. It holds one
// http.Client and Transport (with their connection pool) and the robots.txt
// cache; create one per process and share it. It is safe for concurrent
// use.
type Client struct {
	cfg    Config
	direct *route
	// proxies are the routes of Config.Proxies by name; proxyNames their
	// names in the list's order, for messages.
	proxies    map[string]*route
	proxyNames []string
	robots     *robotsCache
	pacer      Pacer
	agent      string // robots.txt product token

	// now and sleep are the client's clock; tests replace them so that
	// they never wait for real time.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error

	// bodySize guesses the size of a body of unknown length.
	bodySize sizeGuess
}

// New returns a Client for cfg with defaults applied (see Config). Its
// direct Transport uses no proxy from the environment (a proxy would hide
// the real destination from the dial-time guard), checks every address it
// connects to (see IsPublic) unless cfg.AllowPrivate, and bounds TLS
// handshakes (10s), response headers (cfg.HeaderTimeout, at most 64 KiB
// of them) and idle connections (90s, at most 4 per host). Each proxy of
// cfg.Proxies gets a copy of it that dials the proxy (see Fetch).
//
// New returns an error naming every field of cfg that is out of range
// (see Config.Validate) and every bad entry of cfg.Proxies.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := errors.Join(cfg.Validate(), cfg.Proxies.Validate()); err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	c := &Client{
		cfg:   cfg,
		agent: productToken(cfg.UserAgent),
		now:   time.Now,
		sleep: sleepContext,
	}
	dialer := &net.Dialer{
		Timeout:   cfg.DialTimeout,
		KeepAlive: 30 * time.Second,
		Control:   dialGuard(cfg.AllowPrivate, cfg.dialAllowed),
		Resolver:  cfg.dialResolver,
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  cfg.HeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		DisableCompression:     true, // we send Accept-Encoding and decode ourselves
	}
	c.direct = &route{transport: transport}
	c.direct.hc = &http.Client{Transport: transport, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		return c.checkRedirect(c.direct, req, via)
	}}
	proxies, err := cfg.Proxies.Proxies()
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	c.proxies = make(map[string]*route, len(proxies))
	for _, p := range proxies {
		rt, err := c.newProxyRoute(p, transport)
		if err != nil {
			return nil, fmt.Errorf("fetch: %w", err)
		}
		c.proxies[p.Name] = rt
		c.proxyNames = append(c.proxyNames, p.Name)
	}
	c.robots = newRobotsCache(c, cfg)
	c.pacer = cfg.Pacer
	if c.pacer == nil {
		// c.now, not time.Now, so that tests that replace the clock pace by it.
		c.pacer = localPacer{slots: pacing.New(cfg.RobotsCacheSize, func() time.Time { return c.now() })}
	}
	return c, nil
}

// CloseIdleConnections closes the idle keep-alive connections of every
// route, direct and through each proxy; call it when shutting down.
func (c *Client) CloseIdleConnections() {
	c.direct.transport.CloseIdleConnections()
	for _, rt := range c.proxies {
		rt.transport.CloseIdleConnections()
	}
}

// productToken returns the robots.txt agent name of a User-Agent: its
// first word up to "/", lower-cased ("portalwatch").
func productToken(ua string) string {
	ua = strings.TrimSpace(ua)
	if i := strings.IndexAny(ua, "/ "); i >= 0 {
		ua = ua[:i]
	}
	return strings.ToLower(ua)
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// blockedError is returned by the dial guard for a non-public address.
type blockedError struct {
	addr   netip.Addr
	reason string
}

func (e *blockedError) Error() string {
	return fmt.Sprintf("%s is %s; %s", e.addr, e.reason, allowPrivateHint)
}

// dialGuard returns the net.Dialer Control function that refuses non-public
// addresses. Go calls it after DNS resolution and before connecting, once
// for every address it tries, so names that resolve (or re-resolve, as in
// DNS rebinding) to private addresses, redirects to them and reconnects of
// pooled connections are all caught. allowed, a test hook, may admit
// specific addresses.
func dialGuard(allowPrivate bool, allowed func(netip.AddrPort) bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if network != "tcp4" && network != "tcp6" {
			return fmt.Errorf("network %q is not allowed", network)
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial address %q: %w", address, err)
		}
		if allowPrivate || (allowed != nil && allowed(ap)) {
			return nil
		}
		if reason := nonPublicReason(ap.Addr()); reason != "" {
			return &blockedError{addr: ap.Addr().Unmap(), reason: reason}
		}
		return nil
	}
}

// checkURL applies CheckURL's rules that need no DNS lookup, so that a
// non-public IP literal is refused before any connection is attempted and
// with the same message as at registration.
func (c *Client) checkURL(raw string, u *url.URL) error {
	if err := checkParsed(raw, u); err != nil {
		return err
	}
	_, addr, isIP, err := hostOf(raw, u)
	if err != nil {
		return err
	}
	if isIP && !c.cfg.AllowPrivate {
		return checkAddr(raw, addr)
	}
	return nil
}

// redirectError carries the reason a redirect was refused out of
// http.Client, which wraps it in a *url.Error.
type redirectError struct{ err *Error }

func (e *redirectError) Error() string { return e.err.Error() }

// hopKey is the context key of a fetch's *lastHop.
type hopKey struct{}

// lastHop records the last redirect response of a fetch, so that a fetch
// whose redirect target then fails still reports the status it got.
type lastHop struct {
	status int
	url    *url.URL
}

// checkRedirect is the CheckRedirect of rt's http.Client: it caps the
// number of redirects and applies the URL rules (through a proxy, with the
// name resolved: checkTarget) and, unless Config.IgnoreRobots, the
// target's robots.txt, read along rt, to every hop.
func (c *Client) checkRedirect(rt *route, req *http.Request, via []*http.Request) error {
	if h, ok := req.Context().Value(hopKey{}).(*lastHop); ok && req.Response != nil {
		h.status, h.url = req.Response.StatusCode, via[len(via)-1].URL
	}
	if originOf(req.URL) != originOf(via[0].URL) {
		// A page's secrets are for its origin only. http.Client drops
		// Cookie and Authorization on a hop to another domain, but keeps
		// them on a subdomain and on a move from https to http.
		for name := range req.Header {
			if watch.IsSecretHeader(name) {
				req.Header.Del(name)
			}
		}
	}
	if len(via) > c.cfg.MaxRedirects {
		err := fmt.Errorf("stopped after %d redirects", c.cfg.MaxRedirects)
		if c.cfg.MaxRedirects == 0 {
			err = errors.New("redirected, and redirects are not followed")
		}
		return &redirectError{&Error{Kind: KindTooManyRedirects, URL: req.URL.String(), Err: err}}
	}
	if err := c.checkTarget(req.Context(), rt, req.URL.String(), req.URL); err != nil {
		var fe *Error
		errors.As(err, &fe)
		return &redirectError{fe}
	}
	// A page fetch carries a lastHop; a robots.txt fetch does not, and
	// must not wait for its own origin's robots.txt when it redirects.
	_, pageFetch := req.Context().Value(hopKey{}).(*lastHop)
	if pageFetch && !c.cfg.IgnoreRobots {
		// Every host a redirect reaches has its own robots.txt, read (or
		// taken from the cache) within the fetch's own time. Its
		// Crawl-delay is not waited for: the hop is part of one visit.
		if _, err := c.obeyRobots(req.Context(), rt, req.URL.String(), req.URL); err != nil {
			var fe *Error
			errors.As(err, &fe)
			return &redirectError{fe}
		}
	}
	return nil
}

// Fetch fetches req.URL and returns the page decoded to UTF-8.
//
// With req.Proxy it goes through that proxy of Config.Proxies, robots.txt
// and redirects included, and fails with KindProxy, sending nothing, for a
// name not there; the URL and every redirect target are then checked with
// the name resolved (see checkTarget), since the dial guard sees only the
// proxy. It refuses URLs that CheckURL would refuse without DNS
// (KindBadURL, KindBlocked), then, unless Config.IgnoreRobots, consults the host's
// robots.txt (KindDisallowed, also for every redirect target), and waits for the origin's next slot after
// its Crawl-delay or Config.MinHostSpacing (or for req.Slot, booked
// already); those waits end with ctx, and a slot further than
// Config.MaxPoliteWait fails at once with KindDeferred. The request itself, redirects and body included, is
// bounded by Config.Timeout (KindTimeout); the caller's ctx can shorten it,
// and its cancellation is reported as KindCanceled.
//
// A 304 to a conditional request is a success with NotModified set. Other
// non-2xx statuses fail with KindHTTPStatus; a Content-Type other than
// text/html or application/xhtml+xml fails with KindNotHTML (a missing one
// is sniffed); a body longer than Config.MaxBodyBytes after decompression
// fails with KindTooLarge. The Result is returned filled as far as the
// fetch got, so Status is set whenever a response arrived. Every error is
// an *Error.
func (c *Client) Fetch(ctx context.Context, req Request) (Result, error) {
	var res Result
	u, err := parseURL(req.URL)
	if err != nil {
		return res, err
	}
	rt, err := c.routeOf(req.URL, req.Proxy)
	if err != nil {
		return res, err
	}
	if err := c.checkTarget(ctx, rt, req.URL, u); err != nil {
		return res, err
	}
	origin := originOf(u)
	crawlDelay := time.Duration(-1) // not read
	if !c.cfg.IgnoreRobots {
		if crawlDelay, err = c.obeyRobots(ctx, rt, req.URL, u); err != nil {
			return res, err
		}
	}
	if err := c.pace(ctx, req, origin, crawlDelay); err != nil {
		return res, err
	}

	start := c.now()
	res.FetchedAt = start
	hop := &lastHop{}
	fctx, cancel := context.WithTimeout(context.WithValue(ctx, hopKey{}, hop), c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(fctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return res, &Error{Kind: KindBadURL, URL: req.URL, Err: err}
	}
	hreq.Header.Set("User-Agent", c.cfg.UserAgent)
	hreq.Header.Set("Accept", acceptOf(req.Want))
	for _, h := range req.Header {
		// The page's own headers, its User-Agent over ours; the ones
		// the fetch itself owns are set after, whatever a page says.
		hreq.Header.Set(h.Name, h.Value)
	}
	hreq.Header.Set("Accept-Encoding", acceptEncoding)
	conditional := req.ETag != "" || req.LastModified != ""
	if req.ETag != "" {
		hreq.Header.Set("If-None-Match", req.ETag)
	}
	if req.LastModified != "" {
		hreq.Header.Set("If-Modified-Since", req.LastModified)
	}

	resp, err := rt.hc.Do(hreq)
	if err != nil {
		switch {
		case resp != nil: // a refused redirect: resp is the redirect response
			res.Status, res.FinalURL = resp.StatusCode, resp.Request.URL
		case hop.url != nil: // the redirect target failed
			res.Status, res.FinalURL = hop.status, hop.url
		}
		return res, c.classify(ctx, fctx, req.URL, start, err)
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.FinalURL = resp.Request.URL
	res.ETag = resp.Header.Get("ETag")
	res.LastModified = strongLastModified(resp.Header, start)

	if resp.StatusCode == http.StatusNotModified && conditional {
		res.NotModified = true
		// A 304 may omit validators; keep sending the ones we have.
		if res.ETag == "" {
			res.ETag = req.ETag
		}
		if res.LastModified == "" {
			res.LastModified = req.LastModified
		}
		return res, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read a little so that the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		return res, &Error{Kind: KindHTTPStatus, URL: req.URL, Status: resp.StatusCode,
			Err: fmt.Errorf("HTTP %s", statusText(resp.StatusCode))}
	}

	contentType := resp.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(contentType)
	if (err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter)) || !strings.Contains(mediaType, "/") {
		mediaType = "" // unparseable: sniff, as for a missing one
	}
	if req.Want != watch.ContentHTML {
		return c.readOther(ctx, fctx, req, start, resp, mediaType, res)
	}
	if mediaType != "" && mediaType != "text/html" && mediaType != "application/xhtml+xml" {
		return res, &Error{Kind: KindNotHTML, URL: req.URL, Status: resp.StatusCode,
			Err: fmt.Errorf("content type %q is not HTML", mediaType)}
	}

	sizeHint := c.bodySize.hint()
	enc := resp.Header.Get("Content-Encoding")
	identity := enc == "" || strings.EqualFold(enc, "identity")
	if identity && resp.ContentLength > 0 {
		sizeHint = resp.ContentLength
	}
	var raw *rawTee
	if req.Capture {
		raw = &rawTee{r: resp.Body, max: c.cfg.MaxBodyBytes, identity: identity}
		resp.Body = raw
	}
	body, err := readBody(resp.Body, resp.Header.Get("Content-Encoding"), c.cfg.MaxBodyBytes, false, sizeHint)
	if err != nil {
		return res, c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, err)
	}
	c.bodySize.observe(int64(len(body)))
	if mediaType == "" {
		// Without a usable Content-Type, only a body that sniffs as HTML
		// (per the MIME Sniffing standard) is accepted.
		if sniffed, ok := sniffHTML(body); !ok {
			return res, &Error{Kind: KindNotHTML, URL: req.URL, Status: resp.StatusCode,
				Err: fmt.Errorf("no content type, and the body sniffs as %q, not HTML", sniffed)}
		}
	}
	// The digest covers the charset the body is decoded by as well: a body
	// that stays while its Content-Type changes charset reads differently.
	res.BodyDigest = BodyDigest(req.DigestSalt+"\x00"+contentType, body)
	if req.BodyDigest != "" && res.BodyDigest == req.BodyDigest {
		res.SameBody = true
		return res, nil
	}
	res.HTML, res.Charset = DecodeHTML(body, contentType)
	res.Capture = raw.capture(resp, start, body)
	return res, nil
}

// BodyDigest is the digest of a body as fetched (decompressed, not yet
// decoded) with salt: 128 bits of XXH3, in base64url. A different body with
// the same digest would cost one check's news; by accident, at 2^-128,
// never. XXH3 is no cryptographic hash, and need not be: the digest is only
// ever compared with the digest of the same page's last body, so a
// collision could hide a change only from the site that made both bodies,
// which could as well not make the change. It costs a twentieth of the
// SHA-256 it replaced, which was 4 % of the crawler's CPU on every check.
func BodyDigest(salt string, body []byte) string {
	sum := xxh3.Hash128Seed(body, xxh3.HashString(salt)).Bytes()
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sniffHTML reports whether body sniffs as text/html, and what it sniffs as.
// A body with a byte order mark sniffs as text/plain, so its decoded start
// is sniffed instead.
func sniffHTML(body []byte) (string, bool) {
	t, _, _ := mime.ParseMediaType(http.DetectContentType(body))
	if t != "text/html" {
		if _, name, _ := bomEncoding(body); name != "" {
			head, _ := DecodeHTML(body[:min(len(body), 1024)], "")
			t, _, _ = mime.ParseMediaType(http.DetectContentType(head))
		}
	}
	return t, t == "text/html"
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// classify turns an error of http.Client.Do into an *Error. parent is the
// caller's context, fctx the per-fetch one derived from it.
func (c *Client) classify(parent, fctx context.Context, raw string, start time.Time, err error) *Error {
	inner, target := err, ""
	var ue *url.Error
	if errors.As(err, &ue) {
		inner, target = ue.Err, ue.URL
	}
	if fe := c.contextError(parent, fctx, raw, start, inner); fe != nil {
		return fe
	}
	var re *redirectError
	if errors.As(inner, &re) {
		fe := *re.err
		fe.URL = raw
		if fe.Kind != KindTooManyRedirects {
			fe.Err = fmt.Errorf("redirect to %s: %w", target, fe.Err)
		}
		return &fe
	}
	if target != "" && target != raw {
		inner = fmt.Errorf("redirect to %s: %w", target, inner)
	}
	var be *blockedError
	var de *net.DNSError
	var ne net.Error
	switch {
	case errors.As(inner, &be):
		return &Error{Kind: KindBlocked, URL: raw, Err: inner}
	case errors.As(inner, &de) && !de.IsTimeout:
		// The page's last error is shown to readers: name the host, not
		// the resolver.
		var lookup error = lookupError{host: de.Name, err: de}
		if target != "" && target != raw {
			lookup = fmt.Errorf("redirect to %s: %w", target, lookup)
		}
		return &Error{Kind: KindDNS, URL: raw, Err: lookup}
	case errors.As(inner, &ne) && ne.Timeout():
		return &Error{Kind: KindTimeout, URL: raw, Err: inner}
	}
	return &Error{Kind: KindNetwork, URL: raw, Err: inner}
}

// classifyBody turns an error of readBody into an *Error.
func (c *Client) classifyBody(parent, fctx context.Context, raw string, start time.Time, status int, err error) *Error {
	var de *decodeError
	var tl *tooLargeError
	fe := c.contextError(parent, fctx, raw, start, err)
	switch {
	case errors.As(err, &tl):
		return &Error{Kind: KindTooLarge, URL: raw, Status: status, Err: tl}
	case fe != nil:
	case errors.As(err, &de):
		fe = &Error{Kind: KindBadResponse, URL: raw, Err: fmt.Errorf("reading body: %w", err)}
	default:
		fe = c.classify(parent, fctx, raw, start, err)
		fe.Err = fmt.Errorf("reading body: %w", fe.Err)
	}
	fe.Status = status
	return fe
}

// contextError returns a KindCanceled or KindTimeout *Error when a context
// has ended, whatever error that caused further down, or nil.
func (c *Client) contextError(parent, fctx context.Context, raw string, start time.Time, err error) *Error {
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return &Error{Kind: KindCanceled, URL: raw, Err: fmt.Errorf("canceled: %w", err)}
	case fctx.Err() != nil:
		return &Error{Kind: KindTimeout, URL: raw,
			Err: fmt.Errorf("timed out after %s: %w", c.now().Sub(start).Round(time.Millisecond), err)}
	}
	return nil
}

// strongLastModified returns the response's Last-Modified if it can serve as
// a validator, or "". A time less than 60 seconds before the response's Date
// is weak (RFC 9110 §8.8.2.2): the page may change again within the same
// second, and a server comparing whole seconds would then answer 304 to a
// page that did change, hiding its new links until the next change.
func strongLastModified(h http.Header, fetched time.Time) string {
	lm := h.Get("Last-Modified")
	modified, err := http.ParseTime(lm)
	if err != nil {
		return ""
	}
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		date = fetched
	}
	if date.Sub(modified) < 60*time.Second {
		return ""
	}
	return lm
}

package watch

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// FetchRequest asks the fetcher for one page.
type FetchRequest struct {
	// URL is the absolute http or https URL of the page.
	URL string
	// ETag and LastModified are the validators of the previous successful
	// fetch; when set they are sent as If-None-Match and If-Modified-Since.
	ETag, LastModified string
	// BodyDigest is the digest of the body the page's last recorded check
	// read; a body with the same digest is neither decoded nor returned
	// (FetchResult.SameBody). Empty: every body is decoded.
	BodyDigest string
	// DigestSalt goes into every body digest with the body: the settings
	// the body is read with, so that a digest made under other settings
	// never matches.
	DigestSalt string
	// Want is the kind of content asked for; the zero value is an HTML
	// page, decoded into FetchResult.HTML. Other kinds are returned as
	// received, in FetchResult.Body.
	Want ContentKind
	// Slot, when set and not stale, is the fetch slot booked for the
	// request already (Job.Slot): the fetcher waits for it instead of
	// booking one, unless the origin's Crawl-delay asks for more than the
	// slot's spacing.
	Slot *Slot
	// Header holds headers to send besides those of the fetcher, in
	// clear (the headers of a page, its secrets opened): a User-Agent here
	// replaces the fetcher's. Cookie and Authorization go only to the
	// origin of URL: a redirect to another origin drops them. Never sent
	// with robots.txt.
	Header []Header
	// Capture asks for the exchange as received (FetchResult.Capture), for
	// the archive; an HTML page whose body is the request's BodyDigest
	// has none.
	Capture bool
	// Proxy names the proxy of the operator's list (PORTALWATCH_PROXIES)
	// the fetch, robots.txt and every redirect go through; empty goes
	// direct. A name the fetcher does not know fails with FetchProxy.
	Proxy string
	// WaitFor is the CSS selector a renderer waits for before it reads the
	// DOM (Job.WaitFor); a plain fetcher ignores it.
	WaitFor string
	// Read, for a request that wants a feed or a sitemap, reads the body
	// as it arrives (decompressed, a gzip file unpacked) instead of
	// FetchResult.Body, so that a large body is never held whole, with
	// the URL it came from after redirects (to resolve against). It
	// reads within MaxBytes: a body past it fails the fetch as too large,
	// whatever Read made of its first MaxBytes. An error of Read's own
	// fails the fetch with it.
	Read func(body io.Reader, final *url.URL) error
	// MaxBytes caps the body of a request with Read, after decompression;
	// 0 is the fetcher's own body cap.
	MaxBytes int64
	// RenderAllow are hosts beyond the page's site a renderer lets the
	// page load from (Job.RenderAllow); a plain fetcher ignores it.
	RenderAllow []string
}

// FetchResult is the outcome of one fetch. A fetcher returns it filled as far
// as the fetch got, with a non-nil error too when it failed.
type FetchResult struct {
	// Status is the HTTP status of the final response, 0 when there was
	// none (DNS failure, refused connection, timeout before headers, …).
	Status int
	// FinalURL is the URL of the final response, after redirects; nil when
	// there was no response.
	FinalURL *url.URL
	// ETag and LastModified are the final response's validators, to send
	// back on the next fetch. A 304 that omits one keeps the request's.
	ETag, LastModified string
	// NotModified is true when the server answered a conditional request
	// with 304 Not Modified; HTML is then empty.
	NotModified bool
	// HTML is the body decoded to UTF-8, for an HTML page.
	HTML []byte
	// Body is the body as received (decompressed, not decoded), for a
	// request that wants another kind of content than HTML: an XML
	// parser reads its encoding from the document itself.
	Body []byte
	// Charset is the WHATWG name of the encoding HTML was decoded from.
	Charset string
	// BodyDigest is the digest of the body (after decompression, before
	// decoding) with the request's DigestSalt; SameBody says it is the
	// request's BodyDigest, and HTML is then empty: nothing was decoded.
	BodyDigest string
	SameBody   bool
	// FetchedAt is when the request was sent, after any wait for robots.txt
	// or Crawl-delay.
	FetchedAt time.Time
	// Capture is the exchange as received when the request asked for it
	// and a body was read; nil otherwise.
	Capture *Capture
	// Rendered says HTML is the DOM a browser built from the page after
	// its scripts ran (Task.Rendered).
	Rendered bool
}

// ContentKind is the kind of content a fetch asks for, which decides the
// media types it accepts.
type ContentKind uint8

// The kinds of content.
const (
	// ContentHTML: an HTML page (text/html, application/xhtml+xml, or a
	// body without a type that sniffs as HTML).
	ContentHTML ContentKind = iota
	// ContentFeed: an RSS, Atom or JSON feed (their media types, any XML
	// or JSON type, or text/plain and text/html, which servers send
	// feeds with).
	ContentFeed
	// ContentSitemap: a sitemap or sitemap index, XML or gzipped XML.
	ContentSitemap
)

// FetchKind classifies a failed fetch or a refused URL. The fetch adapter
// classifies its failures into these kinds, so a service can tell them apart
// without importing it. Whether a kind is permanent (record it, don't retry
// soon) or transient is the caller's decision; the kinds are fine-grained
// enough to make it.
type FetchKind int

// The kinds of FetchError.
const (
	// FetchUnknown is the zero FetchKind; Fetch and CheckURL never return it.
	FetchUnknown FetchKind = iota
	// FetchBadURL: the URL is malformed, not absolute, not http or https,
	// carries user info or a backslash.
	FetchBadURL
	// FetchBlocked: the URL's host is, or resolves to, a non-public address
	// and private addresses are not allowed.
	FetchBlocked
	// FetchDisallowed: robots.txt disallows the URL for our user agent.
	FetchDisallowed
	// FetchDNS: the host name could not be resolved.
	FetchDNS
	// FetchNetwork: the connection failed or broke (refused, reset, TLS).
	FetchNetwork
	// FetchTimeout: a time limit ran out (dial, response headers, whole
	// fetch, or the caller's context deadline).
	FetchTimeout
	// FetchCanceled: the caller's context was canceled; the page itself is
	// not at fault.
	FetchCanceled
	// FetchTooManyRedirects: more than the fetcher's MaxRedirects redirects.
	FetchTooManyRedirects
	// FetchHTTPStatus: the final response had a non-2xx status (other than
	// 304 to a conditional request); Error.Status holds it.
	FetchHTTPStatus
	// FetchTooLarge: the decompressed body exceeds the fetcher's MaxBodyBytes.
	FetchTooLarge
	// FetchNotHTML: the response is not text/html or application/xhtml+xml.
	FetchNotHTML
	// FetchBadResponse: the response could not be read as sent: an unknown
	// Content-Encoding or a corrupt compressed stream.
	FetchBadResponse
	// FetchDeferred: nothing was sent; the origin's next polite slot is
	// further away than the fetcher's MaxPoliteWait. Error.RetryAt says when to
	// come back. The page is not at fault.
	FetchDeferred
	// FetchProxy: nothing was sent; the request names a proxy that is not
	// in the fetcher's list (PORTALWATCH_PROXIES). The deployment, not the
	// page, is at fault.
	FetchProxy
)

var kindNames = [...]string{
	FetchUnknown:          "unknown",
	FetchBadURL:           "bad_url",
	FetchBlocked:          "blocked",
	FetchDisallowed:       "disallowed",
	FetchDNS:              "dns",
	FetchNetwork:          "network",
	FetchTimeout:          "timeout",
	FetchCanceled:         "canceled",
	FetchTooManyRedirects: "too_many_redirects",
	FetchHTTPStatus:       "http_status",
	FetchTooLarge:         "too_large",
	FetchNotHTML:          "not_html",
	FetchBadResponse:      "bad_response",
	FetchDeferred:         "deferred",
	FetchProxy:            "proxy",
}

// String returns the kind's stable snake_case name, suitable as a metric
// label or log value, e.g. "too_large".
func (k FetchKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// FetchError is the error the fetch adapter's Fetch and CheckURL return. Its
// message is one line that names the URL, e.g.
//
//	https://example.com/: HTTP 404 Not Found
//
// Use errors.As to get it and read Kind; Unwrap exposes the cause (a
// *net.DNSError, context.DeadlineExceeded, …).
type FetchError struct {
	// Kind classifies the failure.
	Kind FetchKind
	// URL is the URL that was asked for, not the redirect target.
	URL string
	// Status is the HTTP status of the last response received, 0 when there
	// was none.
	Status int
	// Err describes the failure; it wraps the underlying cause where there
	// is one.
	Err error
	// RetryAt is when a FetchDeferred fetch may be tried again; zero for
	// every other kind.
	RetryAt time.Time
}

// Error returns "URL: description"; a URL with whitespace or control
// characters is quoted so that the message stays on one line. The
// description is cleaned (CleanText): it may quote the network, such as
// a TLS certificate's names, which can hold NUL bytes or bidi overrides.
func (e *FetchError) Error() string {
	// A URL given with a password (refused for it) must not repeat it.
	u := redactPassword(e.URL)
	if strings.ContainsFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		u = strconv.Quote(u)
	}
	return u + ": " + CleanText(e.Err.Error())
}

// Unwrap returns the underlying error.
func (e *FetchError) Unwrap() error { return e.Err }

// FetchKindOf returns the FetchKind of err when it is or wraps a *FetchError,
// FetchUnknown otherwise.
func FetchKindOf(err error) FetchKind {
	var fe *FetchError
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return FetchUnknown
}

// redactPassword returns raw with its user information's password replaced
// by "xxxxx", and raw as it is when it has none or does not parse.
func redactPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); !has {
		return raw
	}
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

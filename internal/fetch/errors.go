package fetch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Kind classifies a failed fetch or a refused URL. Whether a kind is
// permanent (record it, don't retry soon) or transient is the caller's
// decision; the kinds are fine-grained enough to make it.
type Kind int

// The kinds of Error.
const (
	// KindUnknown is the zero Kind; Fetch and CheckURL never return it.
	KindUnknown Kind = iota
	// KindBadURL: the URL is malformed, not absolute, not http or https,
	// carries user info or a backslash.
	KindBadURL
	// KindBlocked: the URL's host is, or resolves to, a non-public address
	// and private addresses are not allowed.
	KindBlocked
	// KindDisallowed: robots.txt disallows the URL for our user agent.
	KindDisallowed
	// KindDNS: the host name could not be resolved.
	KindDNS
	// KindNetwork: the connection failed or broke (refused, reset, TLS).
	KindNetwork
	// KindTimeout: a time limit ran out (dial, response headers, whole
	// fetch, or the caller's context deadline).
	KindTimeout
	// KindCanceled: the caller's context was canceled; the page itself is
	// not at fault.
	KindCanceled
	// KindTooManyRedirects: more than Config.MaxRedirects redirects.
	KindTooManyRedirects
	// KindHTTPStatus: the final response had a non-2xx status (other than
	// 304 to a conditional request); Error.Status holds it.
	KindHTTPStatus
	// KindTooLarge: the decompressed body exceeds Config.MaxBodyBytes.
	KindTooLarge
	// KindNotHTML: the response is not text/html or application/xhtml+xml.
	KindNotHTML
	// KindBadResponse: the response could not be read as sent: an unknown
	// Content-Encoding or a corrupt compressed stream.
	KindBadResponse
	// KindDeferred: nothing was sent; the origin's next polite slot is
	// further away than Config.MaxPoliteWait. Error.RetryAt says when to
	// come back. The page is not at fault.
	KindDeferred
)

var kindNames = [...]string{
	KindUnknown:          "unknown",
	KindBadURL:           "bad_url",
	KindBlocked:          "blocked",
	KindDisallowed:       "disallowed",
	KindDNS:              "dns",
	KindNetwork:          "network",
	KindTimeout:          "timeout",
	KindCanceled:         "canceled",
	KindTooManyRedirects: "too_many_redirects",
	KindHTTPStatus:       "http_status",
	KindTooLarge:         "too_large",
	KindNotHTML:          "not_html",
	KindBadResponse:      "bad_response",
	KindDeferred:         "deferred",
}

// String returns the kind's stable snake_case name, suitable as a metric
// label or log value, e.g. "too_large".
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is the error returned by Fetch and CheckURL. Its message is one line
// that names the URL, e.g.
//
//	https://example.com/: HTTP 404 Not Found
//
// Use errors.As to get it and read Kind; Unwrap exposes the cause (a
// *net.DNSError, context.DeadlineExceeded, …).
type Error struct {
	// Kind classifies the failure.
	Kind Kind
	// URL is the URL that was asked for, not the redirect target.
	URL string
	// Status is the HTTP status of the last response received, 0 when there
	// was none.
	Status int
	// Err describes the failure; it wraps the underlying cause where there
	// is one.
	Err error
	// RetryAt is when a KindDeferred fetch may be tried again; zero for
	// every other kind.
	RetryAt time.Time
}

// Error returns "URL: description"; a URL with whitespace or control
// characters is quoted so that the message stays on one line. The
// description is cleaned (watch.CleanText): it may quote the network, such as
// a TLS certificate's names, which can hold NUL bytes or bidi overrides.
func (e *Error) Error() string {
	u := e.URL
	if strings.ContainsFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		u = strconv.Quote(u)
	}
	return u + ": " + watch.CleanText(e.Err.Error())
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of err when it is or wraps an *Error, and
// KindUnknown otherwise.
func KindOf(err error) Kind {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Kind
	}
	return KindUnknown
}

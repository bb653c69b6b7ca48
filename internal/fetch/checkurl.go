package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Resolver looks up the IP addresses of a host name. *net.Resolver
// implements it; tests pass their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL reports whether raw may be registered as a page to watch. It
// returns nil or an *Error whose message says why the URL is refused:
//
//   - KindBadURL: raw is not an absolute http or https URL; has no host;
//     carries user info ("user:pass@"); contains a backslash, whitespace or
//     control characters (parsers disagree about such URLs, which is how
//     filters get bypassed); has a port outside 1-65535; or has a host that
//     looks like an IPv4 address but is not a valid one (as browsers judge).
//   - KindBlocked, unless allowPrivate: the host is a non-public IP address
//     (see IsPublic) in any spelling that Go or a browser accepts - dotted,
//     decimal "2130706433", octal "0177.0.0.1", hex "0x7f.1", short
//     "127.1", full-width digits, IPv4-mapped IPv6 - or "localhost" or a
//     name under it ("app.localhost", which RFC 6761 reserves for this
//     machine whatever DNS says), or a name that r resolves to at least one
//     non-public address.
//   - KindDNS, KindTimeout or KindCanceled: r could not resolve the name
//     before ctx ended. Errors.As finds the *net.DNSError of a name that
//     does not exist.
//
// A nil r is net.DefaultResolver, the resolver the Client's dialer uses, so
// registration judges a name by the addresses the crawler would dial. With
// allowPrivate a name is still resolved, so that one that does not exist
// is refused in every mode, but any address it has will do. A passing check is not a guarantee
// for later fetches, since DNS answers change; the Client therefore checks
// every address again when it dials.
func CheckURL(ctx context.Context, raw string, allowPrivate bool, r Resolver) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	host, addr, isIP, err := hostOf(raw, u)
	if err != nil {
		return err
	}
	if isIP {
		if allowPrivate {
			return nil
		}
		return checkAddr(raw, addr)
	}
	if isLocalhost(host) {
		if allowPrivate {
			return nil
		}
		return &Error{Kind: KindBlocked, URL: raw,
			Err: fmt.Errorf("%s is a localhost name, which always means this machine; %s", host, allowPrivateHint)}
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		kind := KindDNS
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			kind = KindCanceled
		case ctx.Err() != nil:
			kind = KindTimeout
		}
		return &Error{Kind: kind, URL: raw, Err: lookupError{host: host, err: err}}
	}
	if len(addrs) == 0 {
		return &Error{Kind: KindDNS, URL: raw, Err: fmt.Errorf("cannot resolve %s: no addresses", host)}
	}
	if allowPrivate {
		return nil // any address will do, but the name must exist
	}
	// Every address must be public: a resolver that answers with one
	// public and one private address would otherwise let a dial pick the
	// private one.
	for _, a := range addrs {
		if err := checkAddr(raw, a); err != nil {
			return err
		}
	}
	return nil
}

// lookupError is a failed name lookup as people see it: the name and why,
// without the resolver's own address, which net.DNSError's message names
// ("lookup x on 127.0.0.53:53: no such host") and which is the operator's
// business, not a registering user's. Unwrap keeps the *net.DNSError for
// callers that tell a missing name from a failing resolver.
type lookupError struct {
	host string
	err  error
}

func (e lookupError) Error() string {
	var dnsErr *net.DNSError
	if errors.As(e.err, &dnsErr) {
		switch {
		case dnsErr.IsNotFound:
			return fmt.Sprintf("cannot resolve %s: no such host", e.host)
		case dnsErr.IsTimeout:
			return fmt.Sprintf("cannot resolve %s: the name lookup timed out", e.host)
		}
		return fmt.Sprintf("cannot resolve %s: %s", e.host, dnsErr.Err)
	}
	return fmt.Sprintf("cannot resolve %s: %v", e.host, e.err)
}

func (e lookupError) Unwrap() error { return e.err }

// isLocalhost reports whether host (lower-case ASCII) is "localhost" or a
// name under it. RFC 6761 lets resolvers answer these with loopback without
// asking DNS, and some (systemd-resolved, browsers) do while Go's may not,
// so the name itself is refused rather than its lookup trusted.
func isLocalhost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// checkAddr returns a KindBlocked *Error when addr is not public.
func checkAddr(raw string, addr netip.Addr) error {
	if reason := nonPublicReason(addr); reason != "" {
		return &Error{Kind: KindBlocked, URL: raw,
			Err: fmt.Errorf("resolves to %s, %s; %s", addr.Unmap().WithZone(""), reason, allowPrivateHint)}
	}
	return nil
}

func badURL(raw, format string, args ...any) *Error {
	return &Error{Kind: KindBadURL, URL: raw, Err: fmt.Errorf(format, args...)}
}

// parseURL parses raw and applies the syntactic rules of CheckURL that do
// not depend on the host: absolute, http or https, a host, no user info, no
// backslash, whitespace or control characters, a sane port.
func parseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, badURL(raw, "empty URL")
	}
	if strings.ContainsRune(raw, '\\') {
		// Browsers read "\" as "/" in http URLs and Go does not, so
		// http://internal\@public/ means different hosts to each.
		return nil, badURL(raw, "contains a backslash, which parsers read differently")
	}
	if i := strings.IndexFunc(raw, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}); i >= 0 {
		return nil, badURL(raw, "contains whitespace, a control character or invalid UTF-8 at byte %d", i)
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, badURL(raw, "not a valid URL: %w", err)
	}
	if err := checkParsed(raw, u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkParsed applies parseURL's rules to an already parsed URL; the
// redirect check uses it on each hop.
func checkParsed(raw string, u *url.URL) error {
	if !u.IsAbs() {
		return badURL(raw, "not an absolute URL; give one such as https://example.com/")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		// "example.com:8080" parses as scheme "example.com": a host and
		// port typed without the scheme, not a scheme of its own.
		if strings.Contains(u.Scheme, ".") || u.Scheme == "localhost" {
			return badURL(raw, "has no scheme; give one such as https://example.com/")
		}
		return badURL(raw, "scheme %q is not allowed; only http and https are", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return badURL(raw, "has no host")
	}
	if u.User != nil {
		return badURL(raw, "contains user info (user@host); credentials in URLs are not allowed")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return badURL(raw, "port %q is out of range 1-65535", p)
		}
	}
	return nil
}

// hostOf returns u's host in the form a connection would use: lower-case,
// IDNA-mapped to ASCII, and parsed as an IP address when it is one in any
// spelling that Go's dialer or a browser accepts (isIP and addr are set
// then). A host that ends in a number but is not a valid IPv4 address is
// refused, as browsers refuse it.
func hostOf(raw string, u *url.URL) (host string, addr netip.Addr, isIP bool, err error) {
	host = u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		a, perr := netip.ParseAddr(host)
		if perr != nil {
			return "", netip.Addr{}, false, badURL(raw, "host %q is not a valid IPv6 address", host)
		}
		return host, a, true, nil
	}
	if !isASCII(host) {
		// Go's transport maps non-ASCII hosts with IDNA before dialing,
		// which turns full-width digits and dots into ASCII ones; judge
		// the host it will really connect to.
		a, ierr := idna.Lookup.ToASCII(host)
		if ierr != nil {
			return "", netip.Addr{}, false, badURL(raw, "host %q is not a valid domain name: %v", host, ierr)
		}
		host = a
	}
	host = strings.ToLower(host)
	a, ok, perr := parseIPv4Browser(host)
	if perr != nil {
		return "", netip.Addr{}, false, badURL(raw, "host %q ends in a number but is not a valid IPv4 address", host)
	}
	if ok {
		return host, a, true, nil
	}
	return host, netip.Addr{}, false, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

var errInvalidIPv4 = errors.New("invalid IPv4 address")

// parseIPv4Browser parses host with the WHATWG URL Standard's IPv4 parser,
// which browsers and the C library's inet_aton share: one to four parts
// separated by dots, each decimal, octal (leading 0) or hexadecimal (0x),
// the last part filling the remaining bytes ("127.1", "2130706433",
// "0x7f.1"). ok is false when host does not end in a number, so is a name;
// err is set when it does but is not a valid address.
func parseIPv4Browser(host string) (addr netip.Addr, ok bool, err error) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // one trailing dot is allowed
	}
	last := parts[len(parts)-1]
	if last == "" {
		return netip.Addr{}, false, nil
	}
	if _, isNum := parseIPv4Number(last); !isNum && strings.Trim(last, "0123456789") != "" {
		return netip.Addr{}, false, nil
	}
	if len(parts) > 4 {
		return netip.Addr{}, false, errInvalidIPv4
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, isNum := parseIPv4Number(p)
		if !isNum {
			return netip.Addr{}, false, errInvalidIPv4
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false, errInvalidIPv4
		}
	}
	if nums[len(nums)-1] >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false, errInvalidIPv4
	}
	v := nums[len(nums)-1]
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// parseIPv4Number parses one part of a WHATWG IPv4 address.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, true // "0x" is zero
	}
	n, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// Guard returns CheckURL with allowPrivate and r fixed, the form
// registration.Policy.GuardURL takes, so that registering a page refuses what
// the crawler would.
func Guard(allowPrivate bool, r Resolver) func(ctx context.Context, raw string) error {
	return func(ctx context.Context, raw string) error { return CheckURL(ctx, raw, allowPrivate, r) }
}

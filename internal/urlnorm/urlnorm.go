// Package urlnorm resolves the links found on web pages and brings each one to
// a single canonical spelling, so that one link spelled two ways is recorded
// once and its key (see package shortlink) never changes between crawls.
//
// [Resolve] resolves a reference (an href) against the page's base URL, the
// way RFC 3986 §5.2 says and with the leniencies browsers apply to http and
// https URLs (WHATWG URL Standard), then normalises the result; [Normalize]
// does the same for an absolute URL. The canonical form is an absolute http or
// https URL that is valid under RFC 3986 and parses with net/url:
//
//   - The scheme and host are lower case; an internationalised host is in its
//     ASCII (punycode) form; a trailing dot of the host is removed; an IPv6
//     literal is in its RFC 5952 form; userinfo is removed.
//   - A default port (80 for http, 443 for https) is removed; any other port is
//     written without leading zeros.
//   - The path is never empty ("/" at least), its dot segments are resolved,
//     and session ids carried in it are removed: a ";jsessionid=…" path
//     parameter (Java servlets) and an ASP.NET cookieless session segment,
//     "/(S(…))" with any of the (A(…)), (S(…)) and (F(…)) ids in it, so
//     "/(S(lit3py55t21z5v55vlm25s55))/default.aspx" is "/default.aspx".
//     Paths keep their case.
//   - Percent-escapes are upper case; escapes of unreserved characters
//     (ALPHA DIGIT - . _ ~) are decoded; every byte that RFC 3986 does not
//     allow unescaped (spaces, controls, non-ASCII, a '%' that starts no valid
//     escape…) is percent-encoded, non-ASCII as its UTF-8 bytes. Nothing else
//     is decoded or encoded: "+" and "%20" stay as they are.
//   - A parameter name spelled "amp;name" is "name": a page that escapes its
//     ampersands twice ("&amp;amp;") hands the parser "&amp;name=…", which a
//     server reads as a parameter "amp;name". Then session and tracking
//     query parameters are removed (see "Parameters removed" below), as are
//     empty parameters ("a=1&&b=2") and an empty query. The remaining
//     parameters are sorted by name, keeping the order of parameters with
//     the same name.
//   - The fragment is removed.
//
// Normalising a normalised URL returns it unchanged.
//
// # Parameters removed
//
// A query parameter is removed when its name (compared ignoring ASCII case,
// after unreserved percent-escapes are decoded) says it identifies a visit,
// a click or a campaign rather than content: its value changes from one
// fetch, visitor, placement or newsletter to the next while the page it
// leads to stays the same, so keeping it would make one link look new again
// and again. The list is deliberately curated: only names that vendors
// document as tracking or session parameters and that are specific enough
// not to be a site's real parameter elsewhere. Generic names that some sites
// use for content (ref, source, campaign, cid, mc, spm, si…) are not on it;
// for those, and for any churn particular to one site, a page's ignore
// patterns are the tool.
//
//   - Session ids: PHPSESSID, SID, jsessionid, sessionid, ASPSESSIONID*
//     (classic ASP), zenid (Zen Cart), oscsid (osCommerce), xtcsid
//     (xt:Commerce), CFID and CFTOKEN (ColdFusion); and the ";jsessionid="
//     path parameter (Java servlets).
//   - Google: utm_* (any name with that prefix), gclid, gclsrc, dclid,
//     gbraid, wbraid, gad_source, gad_campaignid, srsltid, _ga, _gl (the
//     cross-domain linker, whose value changes on every visit), gs_l.
//   - Other ad and social click ids: fbclid, fb_action_ids, fb_action_types,
//     fb_source, fb_ref, action_object_map, action_type_map,
//     action_ref_map (Meta); igshid (Instagram); msclkid (Microsoft);
//     yclid and _openstat (Yandex); twclid, ref_src and
//     __twitter_impression (X/Twitter); ttclid (TikTok); li_fat_id
//     (LinkedIn); epik (Pinterest); rb_clickid; wickedid (Wicked Reports);
//     _branch_match_id (Branch); guccounter, guce_referrer and
//     guce_referrer_sig (Yahoo consent redirect); Echobox (social
//     scheduling, a timestamp).
//   - Analytics campaign codes: wt_mc, wt_zmc, wtrid and WT.mc_id
//     (Webtrekk/Mapp and Webtrends media codes); xtor, at_medium,
//     at_campaign, at_platform, at_creation, at_variant, at_format,
//     at_general_placement, at_detail_placement, at_send_date,
//     at_recipient_id, at_recipient_list and at_emailtype (AT Internet /
//     Piano Analytics); mtm_* and piwik_* (any), pk_campaign, pk_cpn,
//     pk_kwd, pk_keyword, pk_source, pk_medium, pk_content, pk_cid
//     (Matomo/Piwik); itm_* (internal campaign codes); s_cid and s_kwcid
//     (Adobe); hsCtaTracking, _hsenc, _hsmi, __hstc, __hssc and __hsfp
//     (HubSpot).
//   - E-mail campaign ids: mc_* (Mailchimp: mc_cid, mc_eid, …), mkt_tok
//     (Marketo), elqTrackId and elqTrack (Eloqua), oly_anon_id and
//     oly_enc_id (Omeda), vero_id and vero_conv (Vero), __s (Drip),
//     ml_subscriber and ml_subscriber_hash (MailerLite), _kx (Klaviyo).
//
// The list draws on the global rules of the ClearURLs project, the query
// stripping of Firefox and Brave and the vendors' own documentation, and
// leaves out their generic entries. The histories in shared/corpus show why
// it matters: heise.de links one article with and without
// ?wt_mc=intern.red.plus.topteaser.startseite.teaser.teaser, with another
// code in each teaser slot (see internal/crawler/history_test.go).
//
// Every error returned is an [*Error] that wraps one of [ErrEmpty],
// [ErrFragmentOnly], [ErrNotHTTP], [ErrInvalid] or [ErrTooLong]; test with
// errors.Is.
//
// All functions are safe for concurrent use.
package urlnorm

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxURLLength is the longest normalised URL, in bytes, that Resolve and
// Normalize return; a longer one yields ErrTooLong. Browsers and servers
// commonly stop at about 2 KiB, and a link that long is rarely content.
const MaxURLLength = 2048

// maxRefLength bounds the work spent on one reference: a reference this long
// (16 KiB) can only normalise to more than MaxURLLength in practice, so it is
// refused before it is parsed.
const maxRefLength = 8 * MaxURLLength

// Reasons for refusing a reference. Errors returned by this package wrap
// exactly one of them.
var (
	// ErrEmpty means the reference is empty or blank. An empty href refers
	// to the page itself, which is never a new link.
	ErrEmpty = errors.New("urlnorm: empty URL")
	// ErrFragmentOnly means the reference is only a fragment ("#top"): it
	// points within the page, not to another page.
	ErrFragmentOnly = errors.New("urlnorm: fragment-only URL")
	// ErrNotHTTP means the URL's scheme is not http or https (javascript:,
	// mailto:, tel:, data:, ftp:, file:…).
	ErrNotHTTP = errors.New("urlnorm: not an http or https URL")
	// ErrInvalid means the URL cannot be parsed, has no host, or is relative
	// with no base to resolve it against.
	ErrInvalid = errors.New("urlnorm: invalid URL")
	// ErrTooLong means the URL is longer than MaxURLLength once normalised.
	ErrTooLong = errors.New("urlnorm: URL too long")
)

// Error reports a reference that Resolve or Normalize refused, and why.
type Error struct {
	// Err is one of ErrEmpty, ErrFragmentOnly, ErrNotHTTP, ErrInvalid and
	// ErrTooLong.
	Err error
	// Ref is the reference as it was given.
	Ref string
	// Detail says what exactly is wrong, for a person to act on.
	Detail string
}

// Error returns the reason, the reference (cut to 100 characters) and the
// detail.
func (e *Error) Error() string {
	return fmt.Sprintf("%v %.100q: %s", e.Err, e.Ref, e.Detail)
}

// Unwrap returns the reason, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

func refuse(reason error, ref, detail string) error {
	return &Error{Err: reason, Ref: ref, Detail: detail}
}

// Normalize returns the canonical form of the absolute http or https URL raw,
// as described in the package documentation and in [Resolve]. It is
// Resolve(nil, raw): a relative reference yields ErrInvalid.
func Normalize(raw string) (string, error) {
	return Resolve(nil, raw)
}

// Resolve resolves the reference ref (an href as written in a page) against
// base and returns the canonical form of the result, as described in the
// package documentation.
//
// Like a browser, Resolve first removes leading and trailing C0 controls and
// spaces and every tab, CR and LF inside ref. Resolution follows RFC 3986
// §5.2 with the WHATWG URL Standard's leniencies for http and https, so that
// every link a browser would follow is kept:
//   - a backslash before the query counts as a slash;
//   - any number of slashes may follow "http:" or "//" ("http:/x.com",
//     "///x.com/p");
//   - "http:rel/path" is relative when base's scheme is http too (RFC 3986
//     §5.4.2 allows this for backward compatibility).
//
// base is the URL the page was served from, or the page's <base href>; it
// must be an absolute http or https URL, and it may be nil when ref is
// absolute. Resolve does not modify base.
//
// Session and tracking query parameters are removed as the package
// documentation lists under "Parameters removed".
//
// The error, an [*Error], wraps ErrEmpty for a blank ref, ErrFragmentOnly for
// "#…", ErrNotHTTP for any scheme but http and https, ErrInvalid for a URL
// that cannot be parsed, has no host or cannot be resolved (nil or unusable
// base), and ErrTooLong for a result longer than MaxURLLength or a ref
// longer than 16 KiB.
func Resolve(base *url.URL, ref string) (string, error) {
	orig := ref
	ref = clean(ref)
	if ref == "" {
		return "", refuse(ErrEmpty, orig, "nothing but whitespace; an empty link points to the page itself")
	}
	if ref[0] == '#' {
		return "", refuse(ErrFragmentOnly, orig, "a fragment-only link points within the page")
	}
	scheme, rest, hasScheme := splitScheme(ref)
	https := false
	if hasScheme {
		switch {
		case strings.EqualFold(scheme, "http"):
		case strings.EqualFold(scheme, "https"):
			https = true
		default:
			return "", refuse(ErrNotHTTP, orig, "only http and https links are kept")
		}
	}
	if len(ref) > maxRefLength {
		return "", refuse(ErrTooLong, orig, "longer than 16 KiB before normalisation")
	}

	// The result is built in one buffer, on the stack for most URLs, and
	// copied out once; the steps below edit it in place.
	var stack [256]byte
	out := stack[:0]
	var (
		err       error
		pathEtc   string // ref's path, query and fragment
		basePath  string // base's escaped path, when ref's path is relative to it
		relative  bool
		baseHTTPS bool
	)
	if hasScheme && (base == nil || !strings.EqualFold(base.Scheme, scheme) || hasTwoSlashes(rest)) {
		out, pathEtc, err = appendSchemeAuthority(out, https, rest)
		if err != nil {
			return "", refuse(ErrInvalid, orig, err.Error())
		}
	} else {
		if base == nil {
			return "", refuse(ErrInvalid, orig, "no scheme; write the URL with http:// or https://")
		}
		switch {
		case strings.EqualFold(base.Scheme, "http"):
		case strings.EqualFold(base.Scheme, "https"):
			baseHTTPS = true
		default:
			return "", refuse(ErrInvalid, orig, fmt.Sprintf("relative link and base URL %.100q is not http or https", base.Redacted()))
		}
		if hasScheme {
			ref = rest
		}
		if hasTwoSlashes(ref) {
			out, pathEtc, err = appendSchemeAuthority(out, baseHTTPS, ref)
		} else {
			if base.Opaque != "" {
				return "", refuse(ErrInvalid, orig, fmt.Sprintf("relative link and base URL %.100q has no host", base.Redacted()))
			}
			out = appendScheme(out, baseHTTPS)
			out, err = appendAuthority(out, baseHTTPS, base.Host)
			if err != nil {
				err = fmt.Errorf("base URL %.100q: %w", base.Redacted(), err)
			}
			pathEtc, basePath, relative = ref, base.EscapedPath(), true
			if !strings.HasPrefix(basePath, "/") {
				// Only a hand-built url.URL has a host and a rootless path.
				basePath = "/" + basePath
			}
		}
		if err != nil {
			return "", refuse(ErrInvalid, orig, err.Error())
		}
	}

	if i := strings.IndexByte(pathEtc, '#'); i >= 0 {
		pathEtc = pathEtc[:i]
	}
	path, query, hasQuery := pathEtc, "", false
	if i := strings.IndexByte(pathEtc, '?'); i >= 0 {
		path, query, hasQuery = pathEtc[:i], pathEtc[i+1:], true
	}

	pathStart := len(out)
	switch {
	case !relative:
		// The authority ended at a slash, a '?' or the end, so path is empty
		// or absolute.
		out = appendEscaped(out, path, pathMode)
	case path == "" && !hasQuery:
		// What remains of "http:" or "http:#top" after the scheme.
		if len(ref) > 0 {
			return "", refuse(ErrFragmentOnly, orig, "a fragment-only link points within the page")
		}
		return "", refuse(ErrEmpty, orig, "nothing after the scheme; such a link points to the page itself")
	case path == "":
		out = appendEscaped(out, basePath, pathMode)
	case path[0] == '/' || path[0] == '\\':
		out = appendEscaped(out, path, pathMode)
	default:
		// RFC 3986 §5.2.3: merge with all but the last segment of the base
		// path.
		out = appendEscaped(out, basePath[:strings.LastIndexByte(basePath, '/')+1], pathMode)
		out = appendEscaped(out, path, pathMode)
	}
	if len(out) == pathStart {
		out = append(out, '/')
	}
	// Unreserved escapes are decoded by now, so "%2e%2E" is "..", as it is
	// for browsers; jsessionid goes before dot segments because removing it
	// can leave one ("/a/.;jsessionid=1/b").
	out = out[:pathStart+len(removeDotSegments(removeCookielessSession(removeJSessionID(out[pathStart:]))))]

	if query != "" {
		out = append(out, '?')
		qStart := len(out)
		out = normalizeQuery(appendEscaped(out, query, queryMode), qStart)
	}

	if len(out) > MaxURLLength {
		return "", refuse(ErrTooLong, orig, fmt.Sprintf("%d bytes once normalised, more than the %d allowed", len(out), MaxURLLength))
	}
	return string(out), nil
}

// clean removes what browsers remove from an href before parsing it: leading
// and trailing C0 controls and spaces, and tabs and newlines anywhere.
func clean(s string) string {
	i, j := 0, len(s)
	for i < j && s[i] <= ' ' {
		i++
	}
	for j > i && s[j-1] <= ' ' {
		j--
	}
	s = s[i:j]
	if strings.IndexByte(s, '\t') < 0 && strings.IndexByte(s, '\n') < 0 && strings.IndexByte(s, '\r') < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && c != '\n' && c != '\r' {
			b = append(b, c)
		}
	}
	return string(b)
}

// splitScheme splits "scheme:rest". A scheme starts with a letter and goes on
// with letters, digits, '+', '-' and '.'; without one, ok is false and ref is
// relative.
func splitScheme(ref string) (scheme, rest string, ok bool) {
	for i := 0; i < len(ref); i++ {
		switch c := ref[i]; {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.':
			if i == 0 {
				return "", ref, false
			}
		case c == ':' && i > 0:
			return ref[:i], ref[i+1:], true
		default:
			return "", ref, false
		}
	}
	return "", ref, false
}

func isSlash(c byte) bool { return c == '/' || c == '\\' }

func hasTwoSlashes(s string) bool { return len(s) >= 2 && isSlash(s[0]) && isSlash(s[1]) }

func appendScheme(dst []byte, https bool) []byte {
	if https {
		return append(dst, "https://"...)
	}
	return append(dst, "http://"...)
}

// appendSchemeAuthority appends the scheme and the authority that starts s
// after any number of slashes, and returns what follows the authority.
func appendSchemeAuthority(dst []byte, https bool, s string) ([]byte, string, error) {
	for len(s) > 0 && isSlash(s[0]) {
		s = s[1:]
	}
	end := len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; isSlash(c) || c == '?' || c == '#' {
			end = i
			break
		}
	}
	dst, err := appendAuthority(appendScheme(dst, https), https, s[:end])
	return dst, s[end:], err
}

// appendAuthority appends the canonical host and port of the authority auth,
// dropping any userinfo.
func appendAuthority(dst []byte, https bool, auth string) ([]byte, error) {
	host, port, err := splitHostPort(auth)
	if err != nil {
		return dst, err
	}
	if dst, err = appendHost(dst, host); err != nil {
		return dst, err
	}
	if port == "" {
		return dst, nil
	}
	n := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return dst, fmt.Errorf("port %.20q is not a number", port)
		}
		if n = n*10 + int(c-'0'); n > 65535 {
			return dst, fmt.Errorf("port %.20q is more than 65535", port)
		}
	}
	if https && n == 443 || !https && n == 80 {
		return dst, nil
	}
	return strconv.AppendInt(append(dst, ':'), int64(n), 10), nil
}

// splitHostPort splits an authority into its host (with the brackets of an
// IPv6 literal) and port, dropping userinfo up to the last '@' as browsers
// do.
func splitHostPort(auth string) (host, port string, err error) {
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	if strings.HasPrefix(auth, "[") {
		end := strings.IndexByte(auth, ']')
		if end < 0 {
			return "", "", errors.New("IPv6 host has no closing ']'")
		}
		host, rest := auth[:end+1], auth[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' {
			return "", "", fmt.Errorf("unexpected %.20q after IPv6 host", rest)
		}
		return host, rest[1:], nil
	}
	if i := strings.IndexByte(auth, ':'); i >= 0 {
		return auth[:i], auth[i+1:], nil
	}
	return auth, "", nil
}

// lenientIDNA is the host profile of the WHATWG URL Standard ("domain to
// ASCII" with beStrict false): UTS #46 mapping without the STD3 ASCII rules,
// hyphen checks or DNS length limits, so names browsers accept (with '_',
// with "--" in the third and fourth places…) are accepted too. A Profile is
// read-only and safe for concurrent use.
var lenientIDNA = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.VerifyDNSLength(false),
)

// appendHost appends the canonical form of host, which may be an IPv6 literal
// in brackets, percent-encoded, or internationalised.
func appendHost(dst []byte, host string) ([]byte, error) {
	if host == "" {
		return dst, errors.New("no host")
	}
	if host[0] == '[' {
		addr, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return dst, fmt.Errorf("host %.60q is not an IPv6 address", host)
		}
		dst = append(dst, '[')
		dst = addr.AppendTo(dst)
		return append(dst, ']'), nil
	}
	if strings.IndexByte(host, '%') >= 0 {
		h, err := url.PathUnescape(host)
		if err != nil {
			return dst, fmt.Errorf("host %.60q has an invalid percent-escape", host)
		}
		host = h
	}
	ascii := true
	for i := 0; i < len(host); i++ {
		if host[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		if !utf8.ValidString(host) {
			return dst, fmt.Errorf("host %.60q is not valid UTF-8", host)
		}
		h, err := lenientIDNA.ToASCII(host)
		if err != nil {
			// The name breaks a rule of UTS #46 (bidi, joiners, a disallowed
			// code point). Rather than lose the link, encode the labels as
			// they are; such a host is at worst unreachable.
			if h, err = idna.Punycode.ToASCII(strings.ToLower(host)); err != nil {
				return dst, fmt.Errorf("host %.60q cannot be converted to ASCII: %v", host, err)
			}
		}
		host = h
	}
	start := len(dst)
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if !isHostChar(c) {
			return dst[:start], fmt.Errorf("host %.60q contains %q, which is not allowed in a host name", host, c)
		}
		dst = append(dst, c)
	}
	for len(dst) > start && dst[len(dst)-1] == '.' {
		dst = dst[:len(dst)-1]
	}
	if len(dst) == start {
		return dst, errors.New("no host")
	}
	return dst, nil
}

// isHostChar reports whether c may appear in a canonical host name: RFC 3986
// reg-name characters except percent-escapes, which browsers reject, and
// except upper case, which appendHost lowers.
func isHostChar(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || isSubDelim(c)
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isSubDelim(c byte) bool {
	switch c {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}

type escapeMode int

const (
	pathMode escapeMode = iota
	queryMode
)

// appendEscaped appends s with canonical percent-encoding: escapes of
// unreserved characters decoded, other escapes upper-cased, and every byte
// that may not appear unescaped in a path (or query) escaped. In a path a
// backslash becomes a slash, as browsers read it.
func appendEscaped(dst []byte, s string, mode escapeMode) []byte {
	const upperHex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isUnreserved(c) || isSubDelim(c) || c == '/' || c == ':' || c == '@':
			dst = append(dst, c)
		case c == '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				if v := unhex(s[i+1])<<4 | unhex(s[i+2]); isUnreserved(v) {
					dst = append(dst, v)
				} else {
					dst = append(dst, '%', upper(s[i+1]), upper(s[i+2]))
				}
				i += 2
			} else {
				// Browsers send a stray '%' as is; servers read it as a
				// literal '%', which is what "%25" says validly.
				dst = append(dst, "%25"...)
			}
		case c == '\\' && mode == pathMode:
			dst = append(dst, '/')
		case c == '?' && mode == queryMode:
			dst = append(dst, c)
		default:
			dst = append(dst, '%', upperHex[c>>4], upperHex[c&15])
		}
	}
	return dst
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - ('a' - 'A')
	}
	return c
}

// removeJSessionID removes ";jsessionid=…" path parameters (name in any case)
// from p in place; a value ends at the next ';' or '/'.
func removeJSessionID(p []byte) []byte {
	const param = ";jsessionid="
	for i := 0; i+len(param) <= len(p); i++ {
		if p[i] != ';' || !equalFold(p[i:i+len(param)], param) {
			continue
		}
		end := i + len(param)
		for end < len(p) && p[end] != ';' && p[end] != '/' {
			end++
		}
		p = append(p[:i], p[end:]...)
		i-- // the next byte is now at i and may start another one
	}
	return p
}

// removeCookielessSession removes from p, in place, the path segments that
// are an ASP.NET cookieless session: "(" then one or more ids "X(value)",
// X one of A, S and F (any case), value free of parentheses and slashes,
// then ")". The segment's leading slash goes with it.
func removeCookielessSession(p []byte) []byte {
	for i := bytes.Index(p, []byte("/(")); i >= 0; {
		end := i + 1 + cookielessLen(p[i+1:])
		if end > i+1 && (end == len(p) || p[end] == '/') {
			p = append(p[:i], p[end:]...)
		} else {
			i++
		}
		j := bytes.Index(p[i:], []byte("/("))
		if j < 0 {
			break
		}
		i += j
	}
	return p
}

// cookielessLen returns the length of the cookieless session segment that
// s starts with, or 0.
func cookielessLen(s []byte) int {
	if len(s) < 2 || s[0] != '(' {
		return 0
	}
	i, ids := 1, 0
	for i+1 < len(s) && s[i+1] == '(' {
		switch s[i] {
		case 'A', 'S', 'F', 'a', 's', 'f':
		default:
			return 0
		}
		end := i + 2
		for end < len(s) && s[end] != ')' && s[end] != '(' && s[end] != '/' {
			end++
		}
		if end == len(s) || s[end] != ')' {
			return 0
		}
		i, ids = end+1, ids+1
	}
	if ids == 0 || i == len(s) || s[i] != ')' {
		return 0
	}
	return i + 1
}

// removeDotSegments resolves the "." and ".." segments of the absolute path p
// in place, as RFC 3986 §5.2.4 describes: "/a/./b/../c" becomes "/a/c", and
// ".." above the root is dropped.
func removeDotSegments(p []byte) []byte {
	w := 0 // p[:w] is the output so far: "/seg/seg…"
	for r := 0; r < len(p); {
		// p[r] is the slash that starts the next input segment.
		end := r + 1
		for end < len(p) && p[end] != '/' {
			end++
		}
		seg := p[r+1 : end]
		last := end == len(p)
		switch {
		case len(seg) == 1 && seg[0] == '.':
			if last {
				p[w] = '/'
				w++
			}
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			w = max(bytes.LastIndexByte(p[:w], '/'), 0)
			if last {
				p[w] = '/'
				w++
			}
		default:
			p[w] = '/'
			w += 1 + copy(p[w+1:], seg)
		}
		r = end
	}
	if w == 0 {
		return append(p[:0], '/')
	}
	return p[:w]
}

// param is one query parameter, by offsets into the query.
type param struct{ start, nameEnd, end int }

// normalizeQuery rewrites the escaped query out[qStart:] in place: drops
// empty, session and tracking parameters, sorts the rest by name (stable),
// and removes the '?' at out[qStart-1] when nothing is left.
func normalizeQuery(out []byte, qStart int) []byte {
	q := out[qStart:]
	var stack [32]param
	params := stack[:0]
	changed, sorted := false, true
	for i := 0; i <= len(q); {
		end := len(q)
		if j := bytes.IndexByte(q[i:], '&'); j >= 0 {
			end = i + j
		}
		nameEnd := end
		if j := bytes.IndexByte(q[i:end], '='); j >= 0 {
			nameEnd = i + j
		}
		for nameEnd-i >= len("amp;") && hasPrefixFold(q[i:nameEnd], "amp;") {
			i += len("amp;")
			changed = true
		}
		switch {
		case end == i, dropParam(q[i:nameEnd]):
			changed = true
		default:
			p := param{i, nameEnd, end}
			if n := len(params); n > 0 && bytes.Compare(q[params[n-1].start:params[n-1].nameEnd], q[i:nameEnd]) > 0 {
				sorted = false
			}
			params = append(params, p)
		}
		i = end + 1
	}
	if !changed && sorted {
		return out
	}
	if len(params) == 0 {
		return out[:qStart-1]
	}
	if !sorted {
		slices.SortStableFunc(params, func(a, b param) int {
			return bytes.Compare(q[a.start:a.nameEnd], q[b.start:b.nameEnd])
		})
	}
	// The parameters are rewritten over the bytes they are read from, so
	// read them from a copy.
	var copyStack [512]byte
	src := append(copyStack[:0], q...)
	out = out[:qStart]
	for i, p := range params {
		if i > 0 {
			out = append(out, '&')
		}
		out = append(out, src[p.start:p.end]...)
	}
	return out
}

// dropPrefixes are the name prefixes of removed parameters, in lower case.
var dropPrefixes = [...]string{"utm_", "aspsessionid", "mc_", "mtm_", "piwik_", "itm_"}

// dropNames are the names of removed parameters, in lower case; see the
// package documentation for what each one is.
var dropNames = map[string]struct{}{
	// Session ids.
	"phpsessid": {}, "sid": {}, "jsessionid": {}, "sessionid": {}, "zenid": {}, "oscsid": {},
	"xtcsid": {}, "cfid": {}, "cftoken": {},
	// Google.
	"gclid": {}, "gclsrc": {}, "dclid": {}, "gbraid": {}, "wbraid": {}, "gad_source": {},
	"gad_campaignid": {}, "srsltid": {}, "_ga": {}, "_gl": {}, "gs_l": {},
	// Other ad and social click ids.
	"fbclid": {}, "fb_action_ids": {}, "fb_action_types": {}, "fb_source": {}, "fb_ref": {},
	"action_object_map": {}, "action_type_map": {}, "action_ref_map": {}, "igshid": {},
	"msclkid": {}, "yclid": {}, "_openstat": {}, "twclid": {}, "ref_src": {},
	"__twitter_impression": {}, "ttclid": {}, "li_fat_id": {}, "epik": {}, "rb_clickid": {},
	"wickedid": {}, "_branch_match_id": {}, "guccounter": {}, "guce_referrer": {},
	"guce_referrer_sig": {}, "echobox": {},
	// Analytics campaign codes.
	"wt_mc": {}, "wt_zmc": {}, "wtrid": {}, "wt.mc_id": {}, "xtor": {}, "at_medium": {},
	"at_campaign": {}, "at_platform": {}, "at_creation": {}, "at_variant": {}, "at_format": {},
	"at_general_placement": {}, "at_detail_placement": {}, "at_send_date": {},
	"at_recipient_id": {}, "at_recipient_list": {}, "at_emailtype": {}, "pk_campaign": {},
	"pk_cpn": {}, "pk_kwd": {}, "pk_keyword": {}, "pk_source": {}, "pk_medium": {},
	"pk_content": {}, "pk_cid": {}, "s_cid": {}, "s_kwcid": {}, "hsctatracking": {},
	"_hsenc": {}, "_hsmi": {}, "__hstc": {}, "__hssc": {}, "__hsfp": {},
	// E-mail campaign ids.
	"mkt_tok": {}, "elqtrackid": {}, "elqtrack": {}, "oly_anon_id": {}, "oly_enc_id": {},
	"vero_id": {}, "vero_conv": {}, "__s": {}, "ml_subscriber": {}, "ml_subscriber_hash": {},
	"_kx": {},
}

// maxDropName is the length of the longest name in dropNames.
const maxDropName = len("__twitter_impression")

// dropParam reports whether a query parameter named name (escaped, with
// unreserved characters decoded) is a session id or a tracking parameter.
func dropParam(name []byte) bool {
	if len(name) < 3 {
		return false
	}
	for _, p := range dropPrefixes {
		if hasPrefixFold(name, p) {
			return true
		}
	}
	if len(name) > maxDropName {
		return false
	}
	var buf [maxDropName]byte
	lower := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	_, ok := dropNames[string(lower)]
	return ok
}

// equalFold reports whether b equals the lower-case ASCII string s, ignoring
// ASCII case.
func equalFold(b []byte, s string) bool {
	return len(b) == len(s) && hasPrefixFold(b, s)
}

// hasPrefixFold reports whether b starts with the lower-case ASCII string s,
// ignoring ASCII case.
func hasPrefixFold(b []byte, s string) bool {
	if len(b) < len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

package watch

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// MaxRenderAllow bounds the hosts a page may allow its renderer beyond its
// site (pages.render_allow holds at most as many).
const MaxRenderAllow = 20

// SplitRenderAllow splits what a person typed (comma- or space-separated
// hosts, as from a flag, a form field or a CSV cell) into entries for
// NormalizeRenderAllow; empty entries are dropped, so "" is no host.
func SplitRenderAllow(typed ...string) []string {
	var out []string
	for _, t := range typed {
		out = append(out, strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })...)
	}
	return out
}

// NormalizeRenderAllow checks the hosts a rendered page may load
// subresources from beyond its own site and returns them as stored:
// lower-cased, without a trailing dot, each once, in the order given; nil
// for none. An entry is a host name (it admits its subdomains too, on any
// port) or host:port (that port only). Schemes, paths, user info,
// wildcards and IP addresses are refused, each with what to give instead:
// a host is resolved when the page loads from it, and refused if any of
// its addresses is private, so an address adds nothing the name would not;
// an operator admits an intranet address with the renderer's
// PORTALWATCH_RENDER_ALLOW_ADDRS. At most MaxRenderAllow entries.
func NormalizeRenderAllow(hosts []string) ([]string, error) {
	var (
		out  []string
		errs []error
	)
	for _, raw := range hosts {
		h, err := normalizeAllowedHost(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if len(out) > MaxRenderAllow {
		errs = append(errs, fmt.Errorf("render-allow lists %d hosts: at most %d; allow a parent domain (cdn.example.com admits img.cdn.example.com) instead of each host", len(out), MaxRenderAllow))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// normalizeAllowedHost checks one entry of NormalizeRenderAllow.
func normalizeAllowedHost(raw string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(raw))
	bad := func(format string, args ...any) error {
		return fmt.Errorf("render-allow %q: %s", raw, fmt.Sprintf(format, args...))
	}
	switch {
	case h == "":
		return "", nil
	case strings.Contains(h, "://"):
		return "", bad("give the host alone, without a scheme, such as cdn.example.com")
	case strings.ContainsAny(h, "/?#"):
		return "", bad("give the host alone, without a path, such as cdn.example.com")
	case strings.Contains(h, "@"):
		return "", bad("give the host alone, without user info")
	case strings.Contains(h, "*"):
		return "", bad("wildcards are not allowed: a host admits its subdomains already (example.com admits cdn.example.com)")
	}
	host, port := h, ""
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") > 1 {
		return "", bad("an IP address is not allowed: give the host's name; the renderer's PORTALWATCH_RENDER_ALLOW_ADDRS admits an address")
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		host, port = h[:i], h[i+1:]
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port != strconv.Itoa(n) {
			return "", bad("port %q is not a number from 1 to 65535", port)
		}
	}
	host = strings.TrimSuffix(host, ".")
	if _, err := netip.ParseAddr(host); err == nil || looksNumeric(host) {
		return "", bad("an IP address is not allowed: give the host's name; the renderer's PORTALWATCH_RENDER_ALLOW_ADDRS admits an address")
	}
	if err := checkHostName(host); err != nil {
		return "", bad("%v", err)
	}
	if port != "" {
		return host + ":" + port, nil
	}
	return host, nil
}

// looksNumeric reports whether host ends in a label of digits, as every
// spelling of an IPv4 address does (127.1, 0x7f.1, 2130706433); no top
// level domain is numeric.
func looksNumeric(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	for _, r := range last {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// checkHostName checks an ASCII host name: labels of letters, digits and
// inner hyphens, 1 to 63 characters each, 253 in all.
func checkHostName(host string) error {
	if host == "" {
		return errors.New("no host: give one such as cdn.example.com")
	}
	if len(host) > 253 {
		return fmt.Errorf("the host is %d characters long: the longest is 253", len(host))
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a host name: each part between dots has 1 to 63 characters")
		}
		for i, r := range label {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			case r == '-' && i > 0 && i < len(label)-1:
			case r > 127:
				return errors.New("not an ASCII host name: give its ASCII (xn--) form, as a browser's address bar shows it")
			default:
				return fmt.Errorf("not a host name: %q is not a letter, digit or inner hyphen", r)
			}
		}
	}
	return nil
}

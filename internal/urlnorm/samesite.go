package urlnorm

import (
	"bytes"
	"strings"
)

// SameSite reports whether the link linkURL stays on the site of a page
// served from pageHost: whether the link's host is the page's host or one of
// its subdomains. A leading "www." of pageHost is optional, so a page on
// www.example.com considers example.com and news.example.com its own site.
//
// pageHost is the page's host as in url.URL.Host, with or without a port (the
// page's absolute URL is accepted too); linkURL is an absolute URL, normalised
// or not. Hosts are compared in their canonical form (lower case, ASCII, no
// trailing dot) and ports are ignored. An IP address matches only itself.
// SameSite reports false when either host is missing or invalid.
func SameSite(pageHost, linkURL string) bool {
	linkAuth, ok := authority(linkURL)
	if !ok {
		return false
	}
	if a, ok := authority(pageHost); ok {
		pageHost = a
	}
	var linkBuf, pageBuf [128]byte
	link, ok := canonicalHost(linkBuf[:0], linkAuth)
	if !ok {
		return false
	}
	page, ok := canonicalHost(pageBuf[:0], pageHost)
	if !ok {
		return false
	}
	if page[0] == '[' || isDottedNumber(page) {
		return string(link) == string(page)
	}
	// Only drop "www." when a name with a dot remains, so that a page on
	// "www.com" does not claim all of ".com".
	if len(page) > 4 && string(page[:4]) == "www." && bytes.IndexByte(page[4:], '.') > 0 {
		page = page[4:]
	}
	if string(link) == string(page) {
		return true
	}
	return len(link) > len(page) && link[len(link)-len(page)-1] == '.' && string(link[len(link)-len(page):]) == string(page)
}

// isDottedNumber reports whether host is made of digits and dots, like an
// IPv4 address, which has no subdomains.
func isDottedNumber(host []byte) bool {
	for _, c := range host {
		if c != '.' && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// authority returns the authority of the absolute URL s, or false when s
// has no scheme followed by "//".
func authority(s string) (string, bool) {
	_, rest, ok := splitScheme(strings.TrimSpace(s))
	if !ok || !hasTwoSlashes(rest) {
		return "", false
	}
	for len(rest) > 0 && isSlash(rest[0]) {
		rest = rest[1:]
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; isSlash(c) || c == '?' || c == '#' {
			return rest[:i], true
		}
	}
	return rest, true
}

// canonicalHost appends the canonical host of the authority auth (userinfo
// and port ignored).
func canonicalHost(dst []byte, auth string) ([]byte, bool) {
	host, _, err := splitHostPort(auth)
	if err != nil {
		return dst, false
	}
	dst, err = appendHost(dst, host)
	return dst, err == nil
}

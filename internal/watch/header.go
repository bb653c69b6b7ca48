package watch

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// Header is one request header a page's checks send with the homepage
// fetch (never with robots.txt, which belongs to the origin). A secret
// header (IsSecretHeader) is stored and travels sealed for its page
// (Sealer): Value is empty and Sealed holds it. Any other header keeps its
// Value in clear. In a PageSpec or a PageEdit a secret still has its clear
// Value, which the store seals before it writes.
type Header struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Sealed string `json:"sealed,omitempty"`
}

// Secret reports whether h is a secret header (IsSecretHeader).
func (h Header) Secret() bool { return IsSecretHeader(h.Name) }

// Shown is how people see h: "Name: value", or "Name: (set)" for a secret,
// whose value nobody reads back.
func (h Header) Shown() string {
	if h.Secret() {
		return h.Name + ": " + SecretShown
	}
	return h.Name + ": " + h.Value
}

// SecretShown stands for a secret header's value wherever a page is shown.
const SecretShown = "(set)"

// Sealer seals the value of a secret header for one page, so that it is
// never in clear outside the programs that hold the key, and opens it
// again in the crawler. The page id and the header name are bound to the
// sealed value: it opens for that page and name only.
type Sealer interface {
	Seal(pageID int64, name, value string) (string, error)
	Open(pageID int64, name, sealed string) (string, error)
}

// Limits of a page's request headers.
const (
	MaxHeaders     = 20      // headers per page
	MaxHeaderBytes = 8 << 10 // names and values together, as sent
)

// ErrNoSecretsKey is returned when a secret header is to be stored by a
// program that has no key to seal it with.
var ErrNoSecretsKey = errors.New("PORTALWATCH_SECRETS_KEY is not set, and the values of Cookie and Authorization are stored only sealed with it: " +
	"make a key with `openssl rand -base64 32` and give it to web, watchctl and the crawlers (`make up` writes one into deploy/portalwatch.env)")

// refusedHeaders are the names a page may not set, with the reason.
var refusedHeaders = map[string]string{
	"Host":                "the crawler sends the page's own host",
	"Content-Length":      "a check is a GET without a body",
	"Content-Type":        "a check is a GET without a body",
	"Content-Encoding":    "a check is a GET without a body",
	"Expect":              "a check is a GET without a body",
	"Connection":          "it is a hop-by-hop header, for one connection only",
	"Keep-Alive":          "it is a hop-by-hop header, for one connection only",
	"Te":                  "it is a hop-by-hop header, for one connection only",
	"Trailer":             "it is a hop-by-hop header, for one connection only",
	"Transfer-Encoding":   "it is a hop-by-hop header, for one connection only",
	"Upgrade":             "it is a hop-by-hop header, for one connection only",
	"Accept-Encoding":     "the crawler chooses the compressions it can decode within its size limits",
	"If-None-Match":       "the crawler sends the validators of the last fetch (conditional GET)",
	"If-Modified-Since":   "the crawler sends the validators of the last fetch (conditional GET)",
	"If-Match":            "the crawler sends the validators of the last fetch (conditional GET)",
	"If-Unmodified-Since": "the crawler sends the validators of the last fetch (conditional GET)",
	"If-Range":            "the crawler reads whole pages",
	"Range":               "the crawler reads whole pages",
	"Forwarded":           "it would claim the request comes from another address",
	"X-Forwarded-For":     "it would claim the request comes from another address",
	"X-Forwarded-Host":    "it would claim the request comes from another address",
	"X-Forwarded-Proto":   "it would claim the request comes from another address",
	"X-Real-Ip":           "it would claim the request comes from another address",
	"Via":                 "it would claim the request came through a proxy",
	"Max-Forwards":        "it is for proxies, not for the page",
}

// IsSecretHeader reports whether a header of this name carries a secret
// (a session, a password, a token) whose value is write-only: Cookie,
// Authorization, and names that say they hold a key, a token, a secret, a
// session or a password (X-Api-Key, X-Auth-Token…). It matches any
// spelling of the name.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(name)
	if n == "cookie" || n == "authorization" {
		return true
	}
	for _, w := range []string{"auth", "token", "key", "secret", "session", "password", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// ParseHeader reads "Name: value" as people write it on a command line or
// in a form. The name is checked and put in its canonical spelling
// (accept-language is Accept-Language); the value is trimmed. An empty
// value is allowed here ("Name:" removes a header in an edit).
func ParseHeader(s string) (Header, error) {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return Header{}, Refused("headers", fmt.Errorf("header %q: write it as 'Name: value'", short(s)))
	}
	h := Header{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)}
	if err := checkHeaderName(h.Name); err != nil {
		return Header{}, Refused("headers", err)
	}
	h.Name = textproto.CanonicalMIMEHeaderKey(h.Name)
	return h, nil
}

// checkHeaderName refuses a name that is not an HTTP token or that the
// crawler owns, saying why.
func checkHeaderName(name string) error {
	if name == "" {
		return errors.New("a header needs a name before its ':'")
	}
	for i := range len(name) {
		if !isTokenByte(name[i]) {
			return fmt.Errorf("header name %q holds %q: a name is letters, digits and !#$%%&'*+-.^_`|~", short(name), name[i])
		}
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if why, ok := refusedHeaders[canon]; ok {
		return fmt.Errorf("header %s is not allowed: %s", canon, why)
	}
	if strings.HasPrefix(canon, "Proxy-") {
		return fmt.Errorf("header %s is not allowed: it is a hop-by-hop header, for a proxy", canon)
	}
	if strings.HasPrefix(canon, "Sec-Websocket-") {
		return fmt.Errorf("header %s is not allowed: a check is no WebSocket", canon)
	}
	return nil
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHeaderValue refuses a value that cannot be sent as it is: control
// characters (a line break would start another header) and bytes past
// ASCII, which servers read in different ways.
func checkHeaderValue(name, value string) error {
	for i := range len(value) {
		c := value[i]
		if c == '\t' {
			continue
		}
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("header %s: its value holds a control character (a line break, say), which cannot be sent", name)
		}
		if c >= 0x80 {
			return fmt.Errorf("header %s: its value holds a character past ASCII; percent-encode it as the site expects", name)
		}
	}
	return nil
}

// NormalizeHeaders checks the headers of a new page, their values in
// clear: each name allowed, each value sendable and not empty, no name
// twice, at most MaxHeaders of them and MaxHeaderBytes together. It
// returns them with canonical names, in the order given. Every error is a
// *RefusedError for "headers".
func NormalizeHeaders(hs []Header) ([]Header, error) {
	out := make([]Header, 0, len(hs))
	for _, h := range hs {
		h.Name, h.Value = strings.TrimSpace(h.Name), strings.TrimSpace(h.Value)
		if err := checkHeaderName(h.Name); err != nil {
			return nil, Refused("headers", err)
		}
		h.Name = textproto.CanonicalMIMEHeaderKey(h.Name)
		if h.Value == "" && h.Sealed == "" {
			return nil, Refused("headers", fmt.Errorf("header %s has no value: give one, or leave the header out", h.Name))
		}
		if h.Secret() && h.Value == SecretShown {
			return nil, Refused("headers", fmt.Errorf("header %s: %s stands for a value stored already; give the value itself", h.Name, SecretShown))
		}
		if err := checkHeaderValue(h.Name, h.Value); err != nil {
			return nil, Refused("headers", err)
		}
		if slices.ContainsFunc(out, func(o Header) bool { return o.Name == h.Name }) {
			return nil, Refused("headers", fmt.Errorf("header %s is given twice: give it once", h.Name))
		}
		out = append(out, h)
	}
	if err := checkHeaderCaps(out); err != nil {
		return nil, err
	}
	return out, nil
}

func checkHeaderCaps(hs []Header) error {
	if len(hs) > MaxHeaders {
		return Refused("headers", fmt.Errorf("%d headers: a page sends at most %d", len(hs), MaxHeaders))
	}
	if n := HeaderBytes(hs); n > MaxHeaderBytes {
		return Refused("headers", fmt.Errorf("the headers take %d bytes: a page sends at most %d", n, MaxHeaderBytes))
	}
	return nil
}

// HeaderBytes is the size of hs as sent ("Name: value\r\n" each). A sealed
// value counts as its clear length, which its sealed form tells.
func HeaderBytes(hs []Header) int {
	n := 0
	for _, h := range hs {
		n += len(h.Name) + len(h.Value) + 4
		if h.Sealed != "" {
			n += SealedLen(h.Sealed)
		}
	}
	return n
}

// SealedOverhead is what sealing adds to a value before its text
// encoding: a 12-byte nonce and a 16-byte tag (AES-GCM).
const SealedOverhead = 28

// SealedLen is the clear length of a sealed value, from its form
// "v1.<key id>.<base64url>" (package secrets); 0 for another form.
func SealedLen(sealed string) int {
	i := strings.LastIndexByte(sealed, '.')
	if i < 0 {
		return 0
	}
	n := base64.RawURLEncoding.DecodedLen(len(sealed)-i-1) - SealedOverhead
	return max(n, 0)
}

// MergeHeaders applies an edit to the headers of a page: with clear, every
// header goes first; then each of changes replaces the header of its name,
// or removes it when its value is empty; a secret whose value is
// SecretShown (the page as shown, sent back) stays as stored. changes come
// in clear; the headers kept stay as they are (sealed ones sealed). It
// returns the headers as they will be stored, checked as NormalizeHeaders
// checks those of a new page, and whether a header other than a secret changed (which may
// change the page that is served, so the store re-baselines).
func MergeHeaders(current, changes []Header, clear bool) ([]Header, bool, error) {
	out := slices.Clone(current)
	if clear {
		out = nil
	}
	for _, c := range changes {
		c.Name, c.Value = strings.TrimSpace(c.Name), strings.TrimSpace(c.Value)
		if err := checkHeaderName(c.Name); err != nil {
			return nil, false, Refused("headers", err)
		}
		c.Name = textproto.CanonicalMIMEHeaderKey(c.Name)
		if err := checkHeaderValue(c.Name, c.Value); err != nil {
			return nil, false, Refused("headers", err)
		}
		same := func(h Header) bool { return textproto.CanonicalMIMEHeaderKey(h.Name) == c.Name }
		if c.Secret() && c.Value == SecretShown {
			// A page as shown, sent back (a form sends every header
			// after a clear): its secret stays as stored.
			i := slices.IndexFunc(current, same)
			if i < 0 {
				return nil, false, Refused("headers", fmt.Errorf("header %s: %s stands for a value stored already, and the page has none; give the value itself", c.Name, SecretShown))
			}
			out = append(slices.DeleteFunc(out, same), current[i])
			continue
		}
		out = slices.DeleteFunc(out, same)
		if c.Value != "" {
			out = append(out, c)
		}
	}
	if err := checkHeaderCaps(out); err != nil {
		return nil, false, err
	}
	return out, !slices.Equal(visibleHeaders(current), visibleHeaders(out)), nil
}

// checkHeaderChanges checks each change of an edit on its own: its name
// and its value; the caps are judged on the merged headers.
func checkHeaderChanges(changes []Header) error {
	for _, c := range changes {
		name := strings.TrimSpace(c.Name)
		if err := checkHeaderName(name); err != nil {
			return Refused("headers", err)
		}
		if err := checkHeaderValue(textproto.CanonicalMIMEHeaderKey(name), strings.TrimSpace(c.Value)); err != nil {
			return Refused("headers", err)
		}
	}
	if len(changes) > MaxHeaders {
		return Refused("headers", fmt.Errorf("%d headers: a page sends at most %d", len(changes), MaxHeaders))
	}
	return nil
}

// visibleHeaders are hs without the values of secrets, sorted by name.
func visibleHeaders(hs []Header) []Header {
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header{Name: h.Name, Value: h.Value}
		if h.Secret() {
			out[i].Value = ""
		}
	}
	slices.SortFunc(out, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ShownHeaders is how people see a page's headers: "Name: value" each,
// secrets as "Name: (set)".
func ShownHeaders(hs []Header) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Shown()
	}
	return out
}

// ShownHeaderMap is how the API and watchctl --json show a page's
// headers: value by name, secrets as SecretShown.
func ShownHeaderMap(hs []Header) map[string]string {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		out[h.Name] = h.Value
		if h.Secret() {
			out[h.Name] = SecretShown
		}
	}
	return out
}

// PublicHeaders are the headers of hs that are not secrets: what an export
// may carry.
func PublicHeaders(hs []Header) []Header {
	var out []Header
	for _, h := range hs {
		if !h.Secret() {
			out = append(out, Header{Name: h.Name, Value: h.Value})
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

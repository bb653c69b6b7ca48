package watch

import (
	"strings"
	"unicode/utf8"
)

// CleanText returns s made safe to store and to log, for any string that
// came from the network (a link's URL and text, a fetch error, ETag,
// Last-Modified, a final URL): invalid UTF-8 becomes U+FFFD; tab, newline and
// carriage return become a space, so a value stays on one log line; NUL (which
// PostgreSQL text refuses), the other C0 controls, DEL and the C1 controls
// (U+0080–U+009F, among them terminal escapes) are removed, as are the bidi
// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) that make
// text display in another order than it reads. Everything else, other
// languages' letters included, is kept. Printable ASCII is returned as is,
// without allocating.
func CleanText(s string) string {
	if isPlainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r < 0x20 || (r >= 0x7F && r <= 0x9F):
		case (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7F {
			return false
		}
	}
	return true
}

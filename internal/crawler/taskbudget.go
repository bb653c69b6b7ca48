package crawler

import (
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// DefaultMaxTaskBytes is the default of Config.MaxTaskBytes.
const DefaultMaxTaskBytes = 4 << 20

// fitTask returns the longest prefix of links that, as task's Context,
// keeps the encoded task within maxBytes, and how many links it left out.
// A prefix, because the walk's breadth-first order puts a page's prominent
// links first. The size is computed, not encoded: it is the length
// EncodeTask writes, or a little more.
func fitTask(task watch.Task, links []watch.Link, maxBytes int) ([]watch.Link, int) {
	room := maxBytes - taskOverhead(task)
	for i, l := range links {
		// {"url":…,"text":…} and the comma before the next.
		room -= len(`{"url":,"text":},`) + quotedLen(l.URL) + quotedLen(l.Text)
		if l.Summary != "" {
			room -= len(`,"summary":`) + quotedLen(l.Summary)
		}
		if l.Known() {
			// ,"position":12345,"heading":1,"landmark":"…"
			room -= len(`,"position":`) + digits(l.Position) + len(`,"heading":1`) +
				len(`,"landmark":`) + quotedLen(string(l.Landmark))
		}
		if room < 0 {
			return links[:i], len(links) - i
		}
	}
	return links, 0
}

// taskOverhead bounds the encoded size of task without its links.
func taskOverhead(task watch.Task) int {
	const fields = 512 // names, id, status, times, flags: under 300 bytes
	return fields + quotedLen(task.BaseURL) + quotedLen(task.FinalURL) + quotedLen(task.ETag) +
		quotedLen(task.LastModified) + quotedLen(task.Error)
}

// quotedLen returns the length of s as a JSON string written without HTML
// escaping: quotes, backslash escapes, \u escapes of other controls, of
// U+2028 and U+2029, and of invalid UTF-8 (written as \ufffd).
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20:
				n += len(`\u0000`)
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += len(`\ufffd`)
		default:
			n += size
		}
		i += size
	}
	return n
}

// digits returns the number of decimal digits of n, which is not negative.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

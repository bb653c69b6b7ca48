package fetch

import (
	"bytes"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
)

// minInvalidToOverrideUTF8 is how many invalid sequences a page declared
// as UTF-8 must have before detection may overrule the declaration: a few
// stray bytes in a UTF-8 page are common, and with so little evidence the
// declaration is the better guess.
const minInvalidToOverrideUTF8 = 8

// metaPrescanBytes is how much of a page is searched for a <meta> charset
// declaration, as the WHATWG encoding sniffing algorithm prescribes.
const metaPrescanBytes = 1024

// DecodeHTML decodes an HTML body to UTF-8 and returns it with the WHATWG
// name of the encoding it used ("utf-8", "gb18030", "windows-1251", …).
// contentType is the response's Content-Type header, possibly empty.
//
// The encoding is chosen as browsers do, except that bytes which plainly
// contradict a declaration win over it, because a readable page matters
// more here than fidelity to a wrong label:
//
//  1. A byte order mark (UTF-8, UTF-16LE, UTF-16BE) decides, whatever the
//     header says, and is removed.
//  2. Otherwise the charset parameter of contentType, then a <meta charset>
//     or <meta http-equiv=Content-Type> in the first 1024 bytes. Labels
//     are mapped as WHATWG does (iso-8859-1 and ascii mean windows-1252)
//     and gb2312/gbk are read as gb18030, their superset. A meta that says
//     UTF-16 means UTF-8; labels that WHATWG maps to the "replacement"
//     encoding are ignored.
//  3. A declared legacy encoding is overridden by UTF-8 when the body is
//     UTF-8 with multi-byte sequences (at most one invalid sequence per ten
//     valid ones): real legacy text is practically never valid UTF-8. A
//     declared UTF-8 is overridden by detection when there are at least
//     eight invalid sequences and more than a tenth as many as valid ones.
//  4. Without a usable declaration, a body that is UTF-8 by the same
//     measure is UTF-8 (an all-ASCII one with ISO-2022-JP escapes is
//     ISO-2022-JP); otherwise the encoding is detected from the page's
//     text (github.com/saintfish/chardet, a port of ICU's detector), and
//     windows-1252 is the fallback, as in browsers.
//
// Bytes that are invalid in the chosen encoding become U+FFFD; DecodeHTML
// never fails and its result is always valid UTF-8. When body is already
// valid UTF-8 the result shares its memory. It is safe for concurrent use.
func DecodeHTML(body []byte, contentType string) (out []byte, charsetName string) {
	if enc, name, n := bomEncoding(body); name != "" {
		return decodeWith(body[n:], enc, name)
	}
	valid := utf8.Valid(body)
	var st utf8Stats
	if valid {
		// Only multi > 0 matters when nothing is invalid, and counting
		// high bytes is cheaper than counting sequences.
		st.multi = countHigh(body)
	} else {
		st = scanUTF8(body)
	}

	enc, name := declaredEncoding(body, contentType)
	switch {
	case name == "":
		if st.looksUTF8() {
			if st.multi == 0 && isISO2022JP(body) {
				return decodeWith(body, japanese.ISO2022JP, "iso-2022-jp")
			}
			return decodeUTF8(body, valid)
		}
		if enc, name := detect(body); name != "" {
			return decodeWith(body, enc, name)
		}
		return decodeWith(body, charmap.Windows1252, "windows-1252")
	case name == "utf-8":
		if st.looksUTF8() || st.invalid < minInvalidToOverrideUTF8 {
			return decodeUTF8(body, valid)
		}
		if enc, name := detect(body); name != "" && name != "utf-8" {
			return decodeWith(body, enc, name)
		}
		return decodeUTF8(body, valid)
	case name == "utf-16le" || name == "utf-16be":
		// UTF-16 text has NUL bytes in every ASCII character; a body
		// without any that is valid UTF-8 was labelled by mistake.
		if valid && bytes.IndexByte(body, 0) < 0 {
			return decodeUTF8(body, valid)
		}
		return decodeWith(body, enc, name)
	default:
		if st.mostlyUTF8() {
			return decodeUTF8(body, valid)
		}
		return decodeWith(body, enc, name)
	}
}

// utf8Stats counts how a body fares as UTF-8: multi is the number of valid
// multi-byte sequences, invalid the number of bytes that start no valid
// sequence.
type utf8Stats struct {
	multi, invalid int
}

// looksUTF8 reports whether the body reads as UTF-8: no invalid bytes, or
// at least ten valid multi-byte sequences for each invalid byte (a UTF-8
// page with a few stray legacy bytes). Legacy CJK text produces about as
// many accidental valid sequences as invalid ones, single-byte text almost
// none, so ten to one separates them with a wide margin.
func (s utf8Stats) looksUTF8() bool {
	return s.invalid == 0 || s.multi >= 10*s.invalid
}

// mostlyUTF8 is looksUTF8 with at least one multi-byte sequence: an
// all-ASCII body is no evidence against a declared legacy encoding.
func (s utf8Stats) mostlyUTF8() bool {
	return s.multi > 0 && s.looksUTF8()
}

func scanUTF8(b []byte) utf8Stats {
	var s utf8Stats
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			s.invalid++
		} else {
			s.multi++
		}
		i += n
	}
	return s
}

func countHigh(b []byte) int {
	n := 0
	for _, c := range b {
		if c >= utf8.RuneSelf {
			n++
		}
	}
	return n
}

// isISO2022JP reports whether an all-ASCII body switches to JIS X 0208,
// the mark of ISO-2022-JP, a 7-bit encoding that looks like ASCII.
func isISO2022JP(b []byte) bool {
	return bytes.Contains(b, []byte("\x1b$B")) || bytes.Contains(b, []byte("\x1b$@"))
}

// bomEncoding returns the encoding named by body's byte order mark and the
// mark's length, or an empty name when there is none.
func bomEncoding(body []byte) (encoding.Encoding, string, int) {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return encoding.Nop, "utf-8", 3
	case bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		return unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), "utf-16le", 2
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}):
		return unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), "utf-16be", 2
	}
	return nil, "", 0
}

// declaredEncoding returns the encoding declared by the Content-Type
// header or, failing that, by a <meta> in the first 1024 bytes, or an empty
// name when neither declares a usable one.
func declaredEncoding(body []byte, contentType string) (encoding.Encoding, string) {
	if label := contentTypeCharset(contentType); label != "" {
		if enc, name := lookupLabel(label); name != "" {
			return enc, name
		}
	}
	label := prescanMeta(body)
	if label == "" {
		return nil, ""
	}
	enc, name := lookupLabel(label)
	switch {
	case strings.HasPrefix(name, "utf-16"):
		// WHATWG: a meta can only be read if the page is ASCII-compatible,
		// so one that claims UTF-16 is wrong and UTF-8 is meant.
		return encoding.Nop, "utf-8"
	case name == "x-user-defined":
		return charmap.Windows1252, "windows-1252"
	}
	return enc, name
}

// lookupLabel maps an encoding label to its encoding and WHATWG name, with
// gbk widened to gb18030, and returns an empty name for unknown labels and
// for those that WHATWG maps to the "replacement" encoding, whose output
// would be a single U+FFFD.
func lookupLabel(label string) (encoding.Encoding, string) {
	enc, name := charset.Lookup(label)
	switch {
	case enc == nil || name == "replacement":
		return nil, ""
	case name == "gbk":
		return simplifiedchinese.GB18030, "gb18030"
	case name == "utf-8":
		return encoding.Nop, name
	}
	return enc, name
}

// contentTypeCharset returns the charset parameter of a Content-Type
// header. It falls back to a plain search when the header does not parse,
// since servers send things like "text/html; charset=utf-8;".
func contentTypeCharset(contentType string) string {
	if contentType == "" {
		return ""
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		return strings.TrimSpace(params["charset"])
	}
	return charsetFromContent(contentType)
}

// charsetFromContent extracts the charset from a Content-Type value as
// WHATWG's "extract a character encoding from a meta element" does.
func charsetFromContent(s string) string {
	for {
		i := indexASCIIFold(s, "charset")
		if i < 0 {
			return ""
		}
		s = strings.TrimLeft(s[i+len("charset"):], " \t\n\f\r")
		if !strings.HasPrefix(s, "=") {
			continue
		}
		s = strings.TrimLeft(s[1:], " \t\n\f\r")
		if s == "" {
			return ""
		}
		if q := s[0]; q == '"' || q == '\'' {
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return ""
			}
			return s[1 : 1+end]
		}
		if end := strings.IndexAny(s, "; \t\n\f\r"); end >= 0 {
			return s[:end]
		}
		return s
	}
}

// prescanMeta returns the charset label declared by the first <meta
// charset> or <meta http-equiv="Content-Type" content="…charset=…"> in the
// first 1024 bytes of body, or "".
func prescanMeta(body []byte) string {
	if len(body) > metaPrescanBytes {
		body = body[:metaPrescanBytes]
	}
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" {
				continue
			}
			var label, content string
			pragma, seen := false, map[string]bool{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				key := string(k)
				if seen[key] {
					continue // WHATWG: only the first of duplicate attributes counts
				}
				seen[key] = true
				switch key {
				case "charset":
					label = strings.TrimSpace(string(v))
				case "content":
					content = string(v)
				case "http-equiv":
					pragma = strings.EqualFold(string(v), "content-type")
				}
			}
			if label == "" && pragma {
				label = charsetFromContent(content)
			}
			if label != "" {
				if _, n := lookupLabel(label); n != "" || strings.HasPrefix(strings.ToLower(label), "utf-16") {
					return label
				}
			}
		}
	}
}

// decodeUTF8 returns body, with each run of invalid bytes replaced by
// U+FFFD when valid is false.
func decodeUTF8(body []byte, valid bool) ([]byte, string) {
	if valid {
		return body, "utf-8"
	}
	return bytes.ToValidUTF8(body, []byte("\uFFFD")), "utf-8"
}

// decodeWith decodes body with enc. The x/text decoders replace invalid
// input with U+FFFD rather than failing; should one fail all the same, the
// body is read as windows-1252, which maps every byte.
func decodeWith(body []byte, enc encoding.Encoding, name string) ([]byte, string) {
	if enc == encoding.Nop || name == "utf-8" {
		return decodeUTF8(body, utf8.Valid(body))
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		out, _ = charmap.Windows1252.NewDecoder().Bytes(body)
		name = "windows-1252"
	}
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return out, name
}

// indexASCIIFold is strings.Index ignoring ASCII case. Unlike an Index over
// strings.ToLower(s), its result is an index into s even when s holds
// characters whose lower case has another length.
func indexASCIIFold(s, lowerPattern string) int {
	for i := 0; i+len(lowerPattern) <= len(s); i++ {
		j := 0
		for ; j < len(lowerPattern); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerPattern[j] {
				break
			}
		}
		if j == len(lowerPattern) {
			return i
		}
	}
	return -1
}

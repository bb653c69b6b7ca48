package fetch

import (
	"bytes"
	"sort"
	"strings"

	"github.com/saintfish/chardet"
	"golang.org/x/text/encoding"
)

// detectSampleBytes bounds the text handed to the detector: enough for a
// confident answer, small enough that detection stays around a millisecond.
const detectSampleBytes = 32 << 10

// detect guesses the encoding of a body that declares none usable and is
// not UTF-8. It returns an empty name when it has no usable guess.
//
// The detector (github.com/saintfish/chardet, a port of ICU's) reads only
// the first 8 KiB it is given, and on a real page those are mostly markup
// and scripts, so it is given the page's text runs that contain non-ASCII
// bytes instead (see textSample). Its candidates are tried in order of
// confidence and the first that decodes the sample with almost no invalid
// sequences wins: a multi-byte guess that produces many U+FFFD is wrong.
func detect(body []byte) (encoding.Encoding, string) {
	sample := textSample(body, detectSampleBytes)
	if countHigh(sample) == 0 {
		// The non-ASCII bytes are only in attributes, comments or scripts.
		sample = highByteLines(body, detectSampleBytes)
	}
	high := countHigh(sample)
	if high == 0 {
		return nil, ""
	}
	results, err := chardet.NewTextDetector().DetectAll(sample)
	if err != nil {
		return nil, ""
	}
	// DetectAll runs its recognisers concurrently and sorts unstably, so
	// candidates of equal confidence come back in any order; a page must
	// decode the same way on every check, or its links would churn.
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Confidence != results[j].Confidence {
			return results[i].Confidence > results[j].Confidence
		}
		return results[i].Charset < results[j].Charset
	})
	var first encoding.Encoding
	firstName := ""
	for _, r := range results {
		enc, name := detectorEncoding(r.Charset)
		if name == "" {
			continue
		}
		if firstName == "" {
			first, firstName = enc, name
		}
		if invalidCount(sample, enc, name)*50 <= high {
			return enc, name
		}
	}
	return first, firstName
}

// detectorEncoding maps a charset name reported by the detector to an
// encoding we can decode, or returns an empty name.
func detectorEncoding(icuName string) (encoding.Encoding, string) {
	switch n := strings.ToUpper(icuName); {
	case n == "GB-18030":
		icuName = "gb18030"
	case strings.HasPrefix(n, "IBM42"), strings.HasPrefix(n, "UTF-32"):
		return nil, "" // EBCDIC and UTF-32: no HTML decoder, never seen on the web
	}
	return lookupLabel(icuName)
}

// invalidCount returns how many invalid sequences decoding b with enc meets.
func invalidCount(b []byte, enc encoding.Encoding, name string) int {
	if name == "utf-8" {
		return scanUTF8(b).invalid
	}
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		return len(b)
	}
	return bytes.Count(out, []byte("\uFFFD")) - bytes.Count(b, []byte("\uFFFD"))
}

// textSample returns up to max bytes of the text runs of an HTML body that
// contain non-ASCII bytes, each followed by a space. Markup, comments,
// scripts and styles are skipped: they are ASCII on nearly every page and
// would only dilute the detector's statistics.
func textSample(b []byte, max int) []byte {
	var out []byte
	for i := 0; i < len(b) && len(out) < max; {
		if b[i] != '<' {
			j := bytes.IndexByte(b[i:], '<')
			if j < 0 {
				j = len(b) - i
			}
			if run := b[i : i+j]; countHigh(run) > 0 {
				out = append(out, run...)
				out = append(out, ' ')
			}
			i += j
			continue
		}
		rest := b[i:]
		var end int
		switch {
		case bytes.HasPrefix(rest, []byte("<!--")):
			end = indexAfter(rest, "-->", false)
		case hasTagPrefix(rest, "<script"):
			end = indexAfter(rest, "</script", true)
		case hasTagPrefix(rest, "<style"):
			end = indexAfter(rest, "</style", true)
		default:
			end = indexAfter(rest, ">", false)
		}
		i += end
	}
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// indexAfter returns the index just past the first occurrence of pat in b
// (compared ASCII case-insensitively when fold is set), or len(b).
func indexAfter(b []byte, pat string, fold bool) int {
	if !fold {
		if j := bytes.Index(b, []byte(pat)); j >= 0 {
			return j + len(pat)
		}
		return len(b)
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], pat[0])
		if j < 0 {
			return len(b)
		}
		i += j
		if len(b)-i >= len(pat) && strings.EqualFold(string(b[i:i+len(pat)]), pat) {
			return i + len(pat)
		}
		i++
	}
}

// hasTagPrefix reports whether b starts with the start tag tag (like
// "<script"), case-insensitively and followed by a delimiter.
func hasTagPrefix(b []byte, tag string) bool {
	if len(b) <= len(tag) || !strings.EqualFold(string(b[:len(tag)]), tag) {
		return false
	}
	switch b[len(tag)] {
	case '>', '/', ' ', '\t', '\n', '\r', '\f':
		return true
	}
	return false
}

// highByteLines returns up to max bytes of the lines of b that contain
// non-ASCII bytes.
func highByteLines(b []byte, max int) []byte {
	var out []byte
	for len(b) > 0 && len(out) < max {
		line := b
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			line, b = b[:j+1], b[j+1:]
		} else {
			b = nil
		}
		if countHigh(line) > 0 {
			out = append(out, line...)
		}
	}
	if len(out) > max {
		out = out[:max]
	}
	return out
}

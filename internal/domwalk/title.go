package domwalk

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxTitleTokens bounds how far Title reads: a <title> lives in the head, a
// few dozen tokens in; a page that has not shown one by then is not going to.
const maxTitleTokens = 4096

// Title returns the text of the document's first <title>, with whitespace
// collapsed and cut to maxRunes runes (on a rune boundary), or "" when the
// page has none before its <body> or its first maxTitleTokens tokens. It
// tokenizes only the start of src and builds no tree, so it costs far less
// than a parse. src must be UTF-8, as the fetcher hands it over.
func Title(src []byte, maxRunes int) string {
	z := html.NewTokenizer(bytes.NewReader(src))
	for range maxTitleTokens {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			name, _ := z.TagName()
			switch atom.Lookup(name) {
			case atom.Body, atom.A:
				return ""
			case atom.Title:
				// The tokenizer reads a title's content as raw text, one
				// token up to </title>.
				if z.Next() != html.TextToken {
					return ""
				}
				return cutRunes(strings.Join(strings.Fields(string(z.Text())), " "), maxRunes)
			}
		}
	}
	return ""
}

func cutRunes(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}

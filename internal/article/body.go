package article

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/markusmobius/go-trafilatura"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// go-trafilatura's heap grows with the page: on pages made to hurt it
// (TestHostilePages) it took about 800 bytes per node (it clones the tree
// three times) and up to 45 per byte of text. bodyBudget bounds that estimate
// (nodeCost per node, textCost per byte of text) to keep the body's step
// within the crawler's parse budget (crawler.DefaultParseMemory, 64 MiB);
// the real pages of testdata cost under 9 MiB of it.
const (
	bodyBudget = 48 << 20
	nodeCost   = 1 << 10
	textCost   = 48
)

// extractBody returns the main text of doc, paragraphs separated by blank
// lines, or "" when none is found; skipped says why, for a person, when
// the page was not read for it at all (over bodyBudget, or the library
// failed on it). It removes
// doc's styles and scripts first (see bodyCost): they are never body text,
// and go-trafilatura would copy them and read all the JSON-LD.
func extractBody(doc *html.Node, pageURL *url.URL) (body, skipped string) {
	if bodyCost(doc) > bodyBudget {
		return "", "the page is too large for its text to be read within the memory budget"
	}
	defer func() {
		// A library's bug on a hostile page must not take the program down:
		// the page then has no body, and its metadata stands.
		if recover() != nil {
			body, skipped = "", "the text extractor failed on this page"
		}
	}()
	res, err := trafilatura.ExtractDocument(doc, trafilatura.Options{
		OriginalURL:     pageURL,
		ExcludeComments: true,
		// Dates are read by readMetadata; htmldate's scan of the whole
		// text is the slowest part of the library.
		HtmlDateMode: trafilatura.Disabled,
		Deduplicate:  true,
	})
	if err != nil || res == nil || res.ContentNode == nil {
		return "", ""
	}
	return renderText(res.ContentNode), ""
}

// blockAtoms start a paragraph of their own.
var blockAtoms = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Li: true, atom.Blockquote: true, atom.Pre: true,
	atom.Tr: true, atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Dd: true, atom.Dt: true,
	atom.Section: true, atom.Article: true, atom.Figcaption: true, atom.Hr: true,
}

// renderText renders n's text: one paragraph per block, separated by a
// blank line, whitespace collapsed within; <br> ends a line.
func renderText(n *html.Node) string {
	var paras []string
	var cur strings.Builder
	flush := func() {
		if t := strings.Join(strings.Fields(cur.String()), " "); t != "" {
			paras = append(paras, t)
		}
		cur.Reset()
	}
	type item struct {
		n   *html.Node
		end bool // leaving n
	}
	stack := []item{{n: n}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c := it.n
		if it.end {
			flush()
			continue
		}
		switch c.Type {
		case html.TextNode:
			writeText(&cur, c.Data)
			continue
		case html.ElementNode:
			a := c.DataAtom
			if a == 0 {
				// go-trafilatura builds elements by name alone.
				a = atom.Lookup([]byte(c.Data))
			}
			switch a {
			case atom.Script, atom.Style, atom.Noscript, atom.Template:
				continue
			case atom.Br:
				cur.WriteByte(' ')
				continue
			case atom.Td, atom.Th:
				cur.WriteByte(' ')
			}
			if blockAtoms[a] || c.Data == "head" {
				flush()
				stack = append(stack, item{n: c, end: true})
			}
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, item{n: k})
		}
	}
	flush()
	return strings.Join(paras, "\n\n")
}

// writeText appends text, a text node's data, to b. go-trafilatura trims
// the whitespace around the text of the elements it keeps ("for <a>Larry</a>"
// becomes "for" and "Larry"), so an element's edge is read as a word's
// edge, as its own plain-text output reads it, unless the text goes on with
// closing punctuation or b ends with opening punctuation.
func writeText(b *strings.Builder, text string) {
	if b.Len() > 0 && text != "" {
		last, _ := utf8.DecodeLastRuneInString(b.String())
		first, _ := utf8.DecodeRuneInString(text)
		if !unicode.IsSpace(last) && !unicode.IsSpace(first) &&
			!strings.ContainsRune(",.;:!?)]}%’”'\"", first) &&
			!strings.ContainsRune("([{‘“", last) {
			b.WriteByte(' ')
		}
	}
	b.WriteString(text)
}

// bodyCost removes doc's style elements and its scripts but the JSON-LD
// within the limits readMetadata reads (maxJSONLDBlocks, maxJSONLDBytes;
// go-trafilatura reads its metadata from it, and works harder without),
// and returns the estimate of go-trafilatura's heap on what is left (see
// bodyBudget), stopping once over it.
func bodyCost(doc *html.Node) int {
	cost, ldBlocks, ldBytes := 0, 0, 0
	keep := func(script *html.Node) bool {
		if !strings.Contains(strings.ToLower(attr(script, "type")), "ld+json") || ldBlocks == maxJSONLDBlocks {
			return false
		}
		t := text(script)
		if ldBytes+len(t) > maxJSONLDBytes {
			return false
		}
		ldBlocks, ldBytes = ldBlocks+1, ldBytes+len(t)
		return true
	}
	stack := []*html.Node{doc}
	for len(stack) > 0 && cost <= bodyBudget {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		cost += nodeCost
		if n.Type == html.TextNode {
			cost += textCost * len(n.Data)
		}
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode && (c.DataAtom == atom.Style || c.DataAtom == atom.Script && !keep(c)) {
				n.RemoveChild(c)
			} else {
				stack = append(stack, c)
			}
			c = next
		}
	}
	return cost
}

package article

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestRenderText(t *testing.T) {
	// el builds an element as go-trafilatura does: by name, no atom.
	el := func(name string, kids ...*html.Node) *html.Node {
		n := &html.Node{Type: html.ElementNode, Data: name}
		for _, k := range kids {
			n.AppendChild(k)
		}
		return n
	}
	txt := func(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }
	tests := []struct {
		name string
		root *html.Node
		want string
	}{
		{"items built by name are paragraphs",
			el("div", el("ul", el("li", txt("New tasks")), el("li", txt("Bugs fixed")))),
			"New tasks\n\nBugs fixed"},
		{"an element's edge is a word's edge",
			el("p", txt("3 for"), el("a", el("strong", txt("Larry Ogunjobi"))), txt(", then")),
			"3 for Larry Ogunjobi, then"},
		{"no space before closing or after opening punctuation",
			el("p", txt("Rudolph ("), el("a", txt("well")), txt(")."), el("b", txt("Vernon")), txt("’s injury")),
			"Rudolph (well). Vernon’s injury"},
		{"whitespace collapsed", el("p", txt("  a \n b "), txt(" c")), "a b c"},
	}
	for _, tt := range tests {
		if got := renderText(tt.root); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	// Parsed HTML keeps its atoms and reads the same.
	doc, _ := html.Parse(strings.NewReader("<ul><li>one</li><li>two</li></ul>"))
	if got := renderText(doc); got != "one\n\ntwo" {
		t.Errorf("parsed list: got %q", got)
	}
}

package domwalk

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// tagAtom reads names from raw tags; it must name every tag as the
// tokenizer's TagName does.
func TestTagAtomAgreesWithTagName(t *testing.T) {
	src := "<A HREF=x></P ><br/><noscript></NoScript\t><FigCaption x=1><a\x00b><img/src=x>" +
		"<x-very-long-custom-element-name-past-any-atom></template\n><base\fhref=/><area>"
	z := html.NewTokenizer(strings.NewReader(src))
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		if tt != html.StartTagToken && tt != html.EndTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		raw := string(z.Raw())
		got := tagAtom([]byte(raw))
		name, _ := z.TagName()
		if want := atom.Lookup(name); got != want {
			t.Errorf("tagAtom(%q) = %v, TagName gives %q (%v)", raw, got, name, want)
		}
	}
}

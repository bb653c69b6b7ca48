package domwalk

import (
	"bytes"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// flatDocument builds, from the tags of src alone, a document that holds what
// Links needs: the <base> elements in <head>, and every anchor as a child of
// <body> in document order, holding its text, <img> and word breaks. It
// serves pages that html.Parse refuses, which since CVE-2025-47911 means
// pages nesting more than 512 open elements (golang/go#76279): browsers
// render those, so their links are real. Building stops after lim.MaxNodes
// nodes; the second result reports that it did.
func flatDocument(src []byte, lim Limits) (*html.Node, bool) {
	doc := &html.Node{Type: html.DocumentNode}
	head := newElement(atom.Head, nil)
	body := newElement(atom.Body, nil)
	root := newElement(atom.Html, nil)
	root.AppendChild(head)
	root.AppendChild(body)
	doc.AppendChild(root)
	nodes := 4

	z := html.NewTokenizer(bytes.NewReader(src))
	var (
		anchor    *html.Node // the <a> whose content is being read, if any
		rawText   bool       // inside <script> or <style>: text is not content
		templates int        // depth of <template> nesting: inert content
		noscripts int        // depth of <noscript> nesting
		anchorNS  int        // noscripts when anchor opened; deeper is not its text
	)
	for {
		if nodes >= lim.MaxNodes {
			return doc, true
		}
		tt := z.Next()
		if tt == html.ErrorToken {
			return doc, false // io.EOF: src is in memory
		}
		if templates > 0 && tt != html.StartTagToken && tt != html.EndTagToken {
			continue
		}
		switch tt {
		case html.TextToken:
			if anchor != nil && !rawText && noscripts <= anchorNS {
				anchor.AppendChild(&html.Node{Type: html.TextNode, Data: string(z.Text())})
				nodes++
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			closed := tt == html.SelfClosingTagToken
			if tok.DataAtom == atom.Template {
				if !closed {
					templates++
				}
				continue
			}
			if templates > 0 {
				continue
			}
			switch tok.DataAtom {
			case atom.A:
				// A new <a> ends any open one, as the parser does.
				anchor, anchorNS = newElement(atom.A, tok.Attr), noscripts
				body.AppendChild(anchor)
				nodes++
				if closed {
					anchor = nil
				}
			case atom.Area:
				body.AppendChild(newElement(atom.Area, tok.Attr))
				nodes++
			case atom.Base:
				head.AppendChild(newElement(atom.Base, tok.Attr))
				nodes++
			case atom.Img:
				if anchor != nil && noscripts <= anchorNS {
					anchor.AppendChild(newElement(atom.Img, tok.Attr))
					nodes++
				}
			case atom.Script, atom.Style:
				rawText = !closed
			case atom.Noscript:
				// As html.Parse with scripting disabled: markup, not text.
				z.NextIsNotRawText()
				if !closed {
					noscripts++
				}
			default:
				if anchor != nil && breaksTextAtom(tok.DataAtom) {
					anchor.AppendChild(&html.Node{Type: html.TextNode, Data: " "})
					nodes++
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			switch a := atom.Lookup(name); {
			case a == atom.Template:
				templates = max(templates-1, 0)
			case templates > 0:
			case a == atom.A:
				anchor = nil
			case a == atom.Script || a == atom.Style:
				rawText = false
			case a == atom.Noscript:
				noscripts = max(noscripts-1, 0)
			case anchor != nil && breaksTextAtom(a):
				anchor.AppendChild(&html.Node{Type: html.TextNode, Data: " "})
				nodes++
			}
		}
	}
}

// newElement returns an HTML element; an SVG anchor's xlink:href, which the
// parser would have moved to the xlink namespace, becomes a plain href.
func newElement(a atom.Atom, attrs []html.Attribute) *html.Node {
	for i, at := range attrs {
		if at.Key == "xlink:href" && at.Namespace == "" {
			attrs[i].Key = "href"
		}
	}
	return &html.Node{Type: html.ElementNode, DataAtom: a, Data: a.String(), Attr: attrs}
}

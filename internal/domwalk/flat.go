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
// render those, so their links are real; and pages whose tree would be over
// lim.MaxTreeBytes. Building stops after lim.MaxNodes nodes or once the nodes
// and the text and attributes they copy take lim.MaxTreeBytes; the second
// result reports that it did.
func flatDocument(src []byte, lim Limits) (*html.Node, bool) {
	doc := &html.Node{Type: html.DocumentNode}
	head := newElement(atom.Head, nil)
	body := newElement(atom.Body, nil)
	root := newElement(atom.Html, nil)
	root.AppendChild(head)
	root.AppendChild(body)
	doc.AppendChild(root)
	nodes := 4
	spent := int64(nodes) * nodeBytes
	// add counts a node and the bytes it copied from src.
	add := func(copied int) { nodes++; spent += nodeBytes + int64(copied) }

	z := html.NewTokenizer(bytes.NewReader(src))
	var (
		anchor    *html.Node // the <a> whose content is being read, if any
		rawText   bool       // inside <script> or <style>: text is not content
		templates int        // depth of <template> nesting: inert content
		noscripts int        // depth of <noscript> nesting
		anchorNS  int        // noscripts when anchor opened; deeper is not its text
	)
	for {
		if nodes >= lim.MaxNodes || spent >= lim.MaxTreeBytes {
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
				text := string(z.Text())
				anchor.AppendChild(&html.Node{Type: html.TextNode, Data: text})
				add(len(text))
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := startTag(z)
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
				add(attrBytes(tok.Attr))
				if closed {
					anchor = nil
				}
			case atom.Area:
				body.AppendChild(newElement(atom.Area, tok.Attr))
				add(attrBytes(tok.Attr))
			case atom.Base:
				head.AppendChild(newElement(atom.Base, tok.Attr))
				add(attrBytes(tok.Attr))
			case atom.Img:
				if anchor != nil && noscripts <= anchorNS {
					anchor.AppendChild(newElement(atom.Img, tok.Attr))
					add(attrBytes(tok.Attr))
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
					add(0)
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
				add(0)
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

// attrBytes is the heap that the attributes attrs hold: their strings and
// the slice of them.
func attrBytes(attrs []html.Attribute) int {
	n := len(attrs) * 48 // an html.Attribute is three strings
	for _, a := range attrs {
		n += len(a.Namespace) + len(a.Key) + len(a.Val)
	}
	return n
}

// startTag returns the current start tag of z as z.Token would, but copies
// the attributes only of the elements flatDocument keeps: a page of millions
// of other tags then costs no allocation per tag.
func startTag(z *html.Tokenizer) html.Token {
	name, more := z.TagName()
	tok := html.Token{Type: html.StartTagToken, DataAtom: atom.Lookup(name)}
	switch tok.DataAtom {
	case atom.A, atom.Area, atom.Base, atom.Img:
	default:
		return tok
	}
	for more {
		var key, val []byte
		key, val, more = z.TagAttr()
		tok.Attr = append(tok.Attr, html.Attribute{Key: atom.String(key), Val: string(val)})
	}
	return tok
}

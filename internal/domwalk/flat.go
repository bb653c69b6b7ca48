package domwalk

import (
	"bytes"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// flatDocument builds, from the tags of src alone, a document that holds what
// Links needs: the <base> elements in <head>, and every anchor as a child of
// <body> in document order, holding its text, <img> and word breaks. An
// anchor opened inside an <h1>–<h6> is put in an element of that heading,
// and a heading opened inside an anchor is kept in it, so that Links finds
// headlines as in a parsed tree; role="heading" is not seen. An anchor
// opened inside a landmark element (<header>, <nav>, <main>, <aside>,
// <footer>, following the same rules as in a tree, with <article> and
// <section>) is put in an element of that landmark, so that Links places it
// as in a parsed tree; ARIA roles are not seen. It
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
		headings  int        // depth of <h1>–<h6> nesting outside anchors
		heading   atom.Atom  // the heading opened last outside anchors
		target    *html.Node // where the anchor's text goes: anchor, or a heading in it
		scopes    flatScopes // the landmark elements open
		holder    *html.Node // the element of body holding the anchors of scopes' landmark
		held      watch.Landmark
	)
	// container returns the element the next anchor goes in: body, or an
	// element of the open landmark, the last child of body.
	container := func() *html.Node {
		l := scopes.current().landmark
		if l == watch.LandmarkNone {
			return body
		}
		if holder == nil || held != l || body.LastChild != holder {
			holder, held = newElement(landmarkAtom(l), nil), l
			body.AppendChild(holder)
			add(0)
		}
		return holder
	}
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
				target.AppendChild(&html.Node{Type: html.TextNode, Data: text})
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
				target = anchor
				if headings > 0 {
					h := newElement(heading, nil)
					h.AppendChild(anchor)
					container().AppendChild(h)
					add(0)
				} else {
					container().AppendChild(anchor)
				}
				add(attrBytes(tok.Attr))
				if closed {
					anchor = nil
				}
			case atom.Area:
				container().AppendChild(newElement(atom.Area, tok.Attr))
				add(attrBytes(tok.Attr))
			case atom.Base:
				head.AppendChild(newElement(atom.Base, tok.Attr))
				add(attrBytes(tok.Attr))
			case atom.Img:
				if anchor != nil && noscripts <= anchorNS {
					target.AppendChild(newElement(atom.Img, tok.Attr))
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
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				switch {
				case closed:
				case anchor == nil:
					headings++
					heading = tok.DataAtom
				case target == anchor && noscripts <= anchorNS:
					target = newElement(tok.DataAtom, nil)
					anchor.AppendChild(target)
					add(0)
				}
			default:
				if !closed && isLandmarkAtom(tok.DataAtom) {
					scopes.open(tok.DataAtom)
				}
				if anchor != nil && breaksTextAtom(tok.DataAtom) {
					target.AppendChild(&html.Node{Type: html.TextNode, Data: " "})
					add(0)
				}
			}
		case html.EndTagToken:
			switch a := tagAtom(z.Raw()); {
			case a == atom.Template:
				templates = max(templates-1, 0)
			case templates > 0:
			case a == atom.A:
				anchor, target = nil, nil
			case isHeadingAtom(a) && anchor != nil && target != anchor:
				target = anchor
			case isHeadingAtom(a) && anchor == nil:
				headings = max(headings-1, 0)
			case a == atom.Script || a == atom.Style:
				rawText = false
			case a == atom.Noscript:
				noscripts = max(noscripts-1, 0)
			case anchor != nil && breaksTextAtom(a):
				target.AppendChild(&html.Node{Type: html.TextNode, Data: " "})
				add(0)
				if isLandmarkAtom(a) {
					scopes.close(a)
				}
			case isLandmarkAtom(a):
				scopes.close(a)
			}
		}
	}
}

// maxFlatScopes is the most landmark elements flatScopes holds open; the
// ones opened inside them are not seen, and neither are their end tags.
const maxFlatScopes = 64

// flatScopes follows the landmark elements open at a tag, as the tree's
// ancestors do in place: a stack of them, each with the scope of its
// content. An end tag closes the last element of its name open, and those
// opened in it that were not closed, as the parser would.
type flatScopes struct {
	stack []flatScope
	over  int // elements opened past maxFlatScopes, not closed yet
}

type flatScope struct {
	name  atom.Atom
	scope landmarkScope
}

func (f *flatScopes) current() landmarkScope {
	if len(f.stack) == 0 {
		return pageScope
	}
	return f.stack[len(f.stack)-1].scope
}

func (f *flatScopes) open(a atom.Atom) {
	if len(f.stack) >= maxFlatScopes {
		f.over++
		return
	}
	f.stack = append(f.stack, flatScope{a, f.current().element(a)})
}

func (f *flatScopes) close(a atom.Atom) {
	if f.over > 0 {
		f.over--
		return
	}
	for k := len(f.stack) - 1; k >= 0; k-- {
		if f.stack[k].name == a {
			f.stack = f.stack[:k]
			return
		}
	}
}

// landmarkAtom returns the element that stands for the landmark l.
func landmarkAtom(l watch.Landmark) atom.Atom {
	switch l {
	case watch.LandmarkHeader:
		return atom.Header
	case watch.LandmarkNav:
		return atom.Nav
	case watch.LandmarkMain:
		return atom.Main
	case watch.LandmarkAside:
		return atom.Aside
	case watch.LandmarkFooter:
		return atom.Footer
	}
	return atom.Div
}

func isHeadingAtom(a atom.Atom) bool {
	switch a {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return true
	}
	return false
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
// the attributes only of the elements flatDocument keeps, and reads the name
// from the raw tag (z.TagName copies it): a page of millions of other tags
// then costs no allocation per tag.
func startTag(z *html.Tokenizer) html.Token {
	tok := html.Token{Type: html.StartTagToken, DataAtom: tagAtom(z.Raw())}
	switch tok.DataAtom {
	case atom.A, atom.Area, atom.Base, atom.Img:
	default:
		return tok
	}
	for more := true; more; {
		var key, val []byte
		key, val, more = z.TagAttr()
		if key == nil && val == nil && !more {
			break // no attributes at all
		}
		tok.Attr = append(tok.Attr, html.Attribute{Key: atom.String(key), Val: string(val)})
	}
	return tok
}

// tagAtom returns the atom of the name of raw, a start or end tag as the
// tokenizer returned it ("<a href=x>", "</P >"), lower-cased as the tokenizer
// does, or 0 for a name that is no atom. Names longer than any element
// flatDocument looks for are 0 without a look-up.
func tagAtom(raw []byte) atom.Atom {
	var buf [16]byte
	n := 0
	for _, c := range raw[min(len(raw), 1):] {
		switch {
		case c == '/' && n == 0:
			continue // the slash of an end tag
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>':
			return atom.Lookup(buf[:n])
		case n == len(buf):
			return 0
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return atom.Lookup(buf[:n])
}

package domwalk

import (
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// landmarkScope is what the ancestors of a node say about its landmark:
// the nearest landmark, and whether a sectioning element (<article>,
// <aside>, <main>, <nav>, <section>, or their roles) stands between it and
// the body. Following HTML-AAM, a <header> or <footer> in such an element
// introduces that section, not the page: it is no banner or content-info
// landmark, and its links belong to the landmark around the section.
type landmarkScope struct {
	landmark  watch.Landmark
	sectioned bool
}

// pageScope is the scope of the document node.
var pageScope = landmarkScope{landmark: watch.LandmarkNone}

// enter returns the scope of the children of n, an element whose parent
// is in scope s. An ARIA role decides before the element: the first token
// of role that is banner, navigation, main, complementary or contentinfo
// makes n that landmark; article or region makes it a section; none,
// presentation or generic takes the meaning of its element away; any
// other first token leaves the element as it is.
func (s landmarkScope) enter(n *html.Node) landmarkScope {
	if role, ok := attr(n, "role"); ok {
		if t, ok := s.role(firstToken(role)); ok {
			return t
		}
	}
	if n.Namespace != "" {
		return s
	}
	return s.element(n.DataAtom)
}

// role returns the scope that the role token r gives an element in scope
// s, and whether r decides it.
func (s landmarkScope) role(r string) (landmarkScope, bool) {
	switch r {
	case "banner":
		return landmarkScope{watch.LandmarkHeader, s.sectioned}, true
	case "contentinfo":
		return landmarkScope{watch.LandmarkFooter, s.sectioned}, true
	case "navigation":
		return landmarkScope{watch.LandmarkNav, true}, true
	case "main":
		return landmarkScope{watch.LandmarkMain, true}, true
	case "complementary":
		return landmarkScope{watch.LandmarkAside, true}, true
	case "article", "region":
		return landmarkScope{s.landmark, true}, true
	case "none", "presentation", "generic":
		return s, true
	}
	return s, false
}

// element returns the scope that an HTML element a gives its content
// when its parent is in scope s.
func (s landmarkScope) element(a atom.Atom) landmarkScope {
	switch a {
	case atom.Nav:
		return landmarkScope{watch.LandmarkNav, true}
	case atom.Main:
		return landmarkScope{watch.LandmarkMain, true}
	case atom.Aside:
		return landmarkScope{watch.LandmarkAside, true}
	case atom.Article, atom.Section:
		return landmarkScope{s.landmark, true}
	case atom.Header:
		if !s.sectioned {
			return landmarkScope{watch.LandmarkHeader, false}
		}
	case atom.Footer:
		if !s.sectioned {
			return landmarkScope{watch.LandmarkFooter, false}
		}
	}
	return s
}

// isLandmarkAtom reports whether the element a can change a scope.
func isLandmarkAtom(a atom.Atom) bool {
	switch a {
	case atom.Nav, atom.Main, atom.Aside, atom.Article, atom.Section, atom.Header, atom.Footer:
		return true
	}
	return false
}

// firstToken returns the first token of s, separated by ASCII white
// space, without allocating.
func firstToken(s string) string {
	start := 0
	for start < len(s) && isASCIISpace(s[start]) {
		start++
	}
	end := start
	for end < len(s) && !isASCIISpace(s[end]) {
		end++
	}
	return s[start:end]
}

func isASCIISpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }

// openScope is a node whose content has a scope other than its parent's,
// and its parent's, which the walk takes back on leaving it.
type openScope struct {
	node   *html.Node
	parent landmarkScope
}

// place sets each link's Position and Landmark. The walk meets links
// breadth-first, which is not the order a reader meets them in: a teaser
// nested two levels deeper than the footer comes after it. So once the walk
// is done, one depth-first pass in document order over root (no deeper than
// MaxDepth, skipping <template> content, at most MaxNodes visits) ranks
// each link by the first of its recorded anchors it meets and takes that
// anchor's landmark; it stops as soon as every link is ranked. The anchors
// are looked up in a map built once, sized to them. A link the pass does
// not reach (its visits spent) is ranked after the others, in walk order,
// with no landmark.
func (w *walker) place(root *html.Node) {
	if len(w.links) == 0 {
		return
	}
	linkOf := make(map[*html.Node]int32, len(w.anchors))
	for _, a := range w.anchors {
		linkOf[a.node] = a.link
	}
	placed := 0
	var open []openScope
	scope := pageScope
	n, depth, budget := root, 0, w.lim.MaxNodes
	for placed < len(w.links) && budget > 0 {
		budget--
		if n.Type == html.ElementNode {
			if n.DataAtom == atom.A || n.DataAtom == atom.Area {
				if i, ok := linkOf[n]; ok && w.links[i].Position == 0 {
					placed++
					w.links[i].Position, w.links[i].Landmark = placed, scope.landmark
				}
			}
			if inner := scope.enter(n); inner != scope {
				open = append(open, openScope{n, scope})
				scope = inner
			}
		}
		if n.FirstChild != nil && depth < w.lim.MaxDepth && !isTemplate(n) {
			n, depth = n.FirstChild, depth+1
			continue
		}
		// Leave n, and its ancestors that end with it, for the next node
		// in document order.
		for {
			if k := len(open) - 1; k >= 0 && open[k].node == n {
				scope = open[k].parent
				open = open[:k]
			}
			if n == root {
				n = nil
				break
			}
			if n.NextSibling != nil {
				n = n.NextSibling
				break
			}
			n, depth = n.Parent, depth-1
		}
		if n == nil {
			break
		}
	}
	for i := range w.links {
		if w.links[i].Position == 0 {
			placed++
			w.links[i].Position, w.links[i].Landmark = placed, watch.LandmarkNone
		}
	}
}

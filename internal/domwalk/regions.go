package domwalk

import (
	"errors"
	"fmt"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ErrRegionsNeedTree is returned when a page with regions is too large or
// too deep to be parsed into a tree (Stats.Flattened): its links are read
// from its tags, where no selector can be evaluated. The check fails rather
// than ignoring the regions, since ignoring them would report every link of
// the navigation, footer and ad rails as new.
var ErrRegionsNeedTree = errors.New("the page's regions (within/exclude selectors) cannot be applied: the page is too large or nests too deep to be parsed into a tree, so its links are read from its tags")

// Regions are the parts of a page whose links count: with Within
// selectors, only anchors inside (or being) an element that one of them
// matches; never an anchor inside (or being) an element that an Exclude
// selector matches. The zero of *Regions (nil) is the whole page.
// A compiled Regions is safe for concurrent use.
type Regions struct {
	within  []cascadia.Sel
	exclude []cascadia.Sel
}

// CompileRegions compiles a page's Within and Exclude selectors (CSS, as
// cascadia reads them: type, class, id, attribute selectors, combinators,
// :not, :nth-child and the like, comma-separated groups). It refuses what
// watch.CheckRegions refuses (more than watch.MaxRegionSelectors, one
// longer than watch.MaxSelectorBytes, one using :has, :haschild, :contains
// or :matches) and one that does not parse. The error is one line naming the
// selector and the reason. It returns nil and no error when both lists are
// empty.
func CompileRegions(within, exclude []string) (*Regions, error) {
	if len(within)+len(exclude) == 0 {
		return nil, nil
	}
	if err := watch.CheckRegions(within, exclude); err != nil {
		return nil, err
	}
	r := &Regions{}
	var err error
	if r.within, err = compileSelectors("within", within); err != nil {
		return nil, err
	}
	if r.exclude, err = compileSelectors("exclude", exclude); err != nil {
		return nil, err
	}
	return r, nil
}

func compileSelectors(kind string, sels []string) ([]cascadia.Sel, error) {
	var out []cascadia.Sel
	for _, s := range sels {
		group, err := cascadia.ParseGroup(s)
		if err != nil {
			return nil, fmt.Errorf("%s selector %q is not a valid CSS selector: %v", kind, s, err)
		}
		for _, sel := range group {
			out = append(out, sel)
		}
	}
	return out, nil
}

// HasWithin reports whether r keeps only the anchors inside Within
// matches; false for nil.
func (r *Regions) HasWithin() bool { return r != nil && len(r.within) > 0 }

// regionState is where a node stands relative to a page's regions.
type regionState uint8

const (
	inWithin  regionState = 1 << iota // the node is, or is inside, a Within match
	inExclude                         // the node is, or is inside, an Exclude match
)

// enter returns the state of the element n, a child of a node in state s.
func (r *Regions) enter(s regionState, n *html.Node) regionState {
	if n.Type != html.ElementNode || s&inExclude != 0 {
		return s
	}
	for _, sel := range r.exclude {
		if sel.Match(n) {
			return s | inExclude
		}
	}
	if s&inWithin == 0 {
		for _, sel := range r.within {
			if sel.Match(n) {
				return s | inWithin
			}
		}
	}
	return s
}

// admits reports whether an anchor in state s counts.
func (r *Regions) admits(s regionState) bool {
	return s&inExclude == 0 && (len(r.within) == 0 || s&inWithin != 0)
}

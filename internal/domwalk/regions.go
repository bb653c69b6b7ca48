package domwalk

import (
	"errors"
	"fmt"
	"strings"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// Caps on a page's region selectors (LinkOptions.Within and Exclude). Every
// element of every check is matched against every selector, so, as for
// ignore patterns, the caps keep a page's selectors cheap.
const (
	// MaxRegionSelectors is the most selectors one page may have, Within
	// and Exclude together.
	MaxRegionSelectors = 10
	// MaxSelectorBytes is the longest selector, in bytes.
	MaxSelectorBytes = 256
)

// costlyPseudoClasses are the selector extensions of cascadia that are
// refused: :has and :haschild search the element's subtree, so matching
// them at every element costs the square of the page's size; :contains and
// :matches read and match the element's whole text.
var costlyPseudoClasses = [...]string{":has", ":contains", ":matches"}

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
// :not, :nth-child and the like, comma-separated groups). It refuses more
// than MaxRegionSelectors of them, one longer than MaxSelectorBytes, one
// that does not parse, and one using :has, :haschild, :contains or :matches
// (see costlyPseudoClasses). The error is one line naming the selector and
// the reason. It returns nil and no error when both lists are empty.
func CompileRegions(within, exclude []string) (*Regions, error) {
	if len(within)+len(exclude) == 0 {
		return nil, nil
	}
	if n := len(within) + len(exclude); n > MaxRegionSelectors {
		return nil, fmt.Errorf("%d region selectors (within and exclude); at most %d are allowed", n, MaxRegionSelectors)
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
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("%s selector %q is empty", kind, s)
		}
		if len(s) > MaxSelectorBytes {
			return nil, fmt.Errorf("%s selector %.60q... is %d bytes long; the longest allowed is %d", kind, s, len(s), MaxSelectorBytes)
		}
		lower := strings.ToLower(s)
		for _, pc := range costlyPseudoClasses {
			if strings.Contains(lower, pc) {
				return nil, fmt.Errorf("%s selector %q uses %s, which is not allowed: it costs a search of the element's subtree or text at every element", kind, s, pc)
			}
		}
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

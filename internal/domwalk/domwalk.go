// Package domwalk finds the links on an HTML page: every <a href> and
// <area href>, its URL resolved and normalised by package urlnorm, and its
// text.
//
// [Links] walks a parsed document breadth-first, siblings in document order,
// with an explicit queue rather than recursion, and honours the document's
// <base href>. Every walk is bounded by [Limits], so a hostile page (millions
// of nodes, nesting thousands of elements deep, megabytes inside one anchor)
// costs bounded time and memory; [Stats] says what was cut. [Parse] parses a
// page and walks it.
//
// Links and Parse keep no state between calls and are safe for concurrent
// use.
package domwalk

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Limits bound the work of one walk. A zero or negative field means its
// default; see WithDefaults.
type Limits struct {
	// MaxLinks is the most distinct links a walk returns; the distinct links
	// beyond it are counted in Stats.LinksOverCap, their texts not read.
	// Default 5000.
	MaxLinks int `env:"PORTALWATCH_MAX_LINKS"`
	// MaxDepth is the deepest level visited, counted from the node given to
	// Links (the document node, depth 0; <html> is at depth 1). Nodes
	// deeper than MaxDepth are neither searched for links nor read for text.
	// Default 512.
	MaxDepth int
	// MaxNodes is the most node visits of a walk, counting both the
	// breadth-first walk and the visits made to gather anchor text (so a node
	// inside an anchor can count twice). The walk stops when they are spent.
	// Default 1,000,000.
	MaxNodes int
	// MaxTextRunes is the longest link text, in runes (Unicode code points).
	// A longer text is cut on a rune boundary to MaxTextRunes-1 runes,
	// followed by "…" (U+2026). Default 300.
	MaxTextRunes int
	// MaxTreeBytes bounds the heap, in bytes, that parsing one page may
	// take. html.Parse builds the whole tree before any other limit applies
	// (10 MiB of "<p>" takes ~400 MiB), so a page whose tree is estimated
	// (see TreeBytes) above MaxTreeBytes is not parsed into a tree: its links
	// are read from its tags, as for a page nesting too deep, keeping no more
	// than MaxTreeBytes of anchors and their text, and Stats.OverTreeBudget
	// is set. Default 32 MiB: the corpus's largest page, 1.8 MB, is
	// estimated at 5.6 MiB.
	MaxTreeBytes int64 `env:"PORTALWATCH_MAX_TREE_BYTES"`
}

// Default limits; see Limits.
const (
	DefaultMaxLinks     = 5000
	DefaultMaxDepth     = 512
	DefaultMaxNodes     = 1_000_000
	DefaultMaxTextRunes = 300
	DefaultMaxTreeBytes = 32 << 20
)

// WithDefaults returns l with every zero or negative field set to its
// default: MaxLinks 5000, MaxDepth 512, MaxNodes 1,000,000, MaxTextRunes 300,
// MaxTreeBytes 32 MiB.
func (l Limits) WithDefaults() Limits {
	if l.MaxLinks <= 0 {
		l.MaxLinks = DefaultMaxLinks
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultMaxNodes
	}
	if l.MaxTextRunes <= 0 {
		l.MaxTextRunes = DefaultMaxTextRunes
	}
	if l.MaxTreeBytes <= 0 {
		l.MaxTreeBytes = DefaultMaxTreeBytes
	}
	return l
}

// Validate checks the limits an operator sets: MaxLinks from 1 to 100,000
// and MaxTreeBytes from 1 MiB to 4 GiB. The walks themselves take any
// Limits, giving a zero or negative field its default.
func (l Limits) Validate() error {
	return errors.Join(
		config.Between("MaxLinks", l.MaxLinks, 1, 100_000),
		config.Between("MaxTreeBytes", l.MaxTreeBytes, 1<<20, 4<<30),
	)
}

// Stats describes one walk.
type Stats struct {
	// Base is the URL relative links were resolved against, normalised: the
	// page URL or the document's <base href>. It is empty when neither is an
	// absolute http(s) URL, and then only absolute links are kept.
	Base string
	// Nodes is the number of nodes the breadth-first walk visited.
	Nodes int
	// TextNodes is the number of nodes visited to gather anchor text.
	TextNodes int
	// Anchors is the number of <a> and <area> elements with an href.
	Anchors int
	// Links is the number of distinct links returned.
	Links int
	// Duplicates is the number of anchors whose URL was already a link.
	Duplicates int
	// Dropped counts the anchors whose href was refused, by reason.
	Dropped Dropped
	// LinksCapped reports that the page has more than MaxLinks distinct
	// links; LinksOverCap of them were not returned.
	LinksCapped bool
	// LinksOverCap is the number of distinct links beyond MaxLinks. They
	// are told apart by a 64-bit hash, so a collision, about one in 10^10
	// pairs, undercounts by one.
	LinksOverCap int
	// DepthCapped reports that nodes deeper than MaxDepth were skipped.
	DepthCapped bool
	// NodesCapped reports that MaxNodes visits were spent before the walk
	// (or an anchor's text) was complete.
	NodesCapped bool
	// Flattened reports that Parse could not build the page's tree (it nests
	// elements deeper than the HTML parser's limit of 512) and read the
	// links from the page's tags instead, in document order.
	Flattened bool
	// OverTreeBudget reports that the page's tree was estimated above
	// MaxTreeBytes, so Parse read its links from its tags (Flattened is set
	// too) instead of building the tree.
	OverTreeBudget bool
	// OutsideRegions is the number of anchors left out because they are
	// outside the page's regions (see Regions); anchors inside an Exclude
	// match are not walked and not counted. They are not in Anchors.
	OutsideRegions int
	// WithinMatched counts the elements a Within selector matched, outside
	// Exclude matches and not inside another match, among the nodes walked.
	// 0 on a page with Within selectors says its regions matched nothing
	// (or the walk stopped at a cap before any): the watch sees no part of
	// the page it was told to.
	WithinMatched int
}

// Truncated reports whether any limit cut the walk short, so that the page
// may have links that were not returned.
func (s Stats) Truncated() bool { return s.LinksCapped || s.DepthCapped || s.NodesCapped }

// Dropped counts refused hrefs by the urlnorm error they gave.
type Dropped struct {
	Empty        int // urlnorm.ErrEmpty: href="" or blank
	FragmentOnly int // urlnorm.ErrFragmentOnly: href="#…"
	NotHTTP      int // urlnorm.ErrNotHTTP: javascript:, mailto:, tel:…
	Invalid      int // urlnorm.ErrInvalid: unparsable, no host
	TooLong      int // urlnorm.ErrTooLong: longer than urlnorm.MaxURLLength
}

// Total returns the number of refused hrefs.
func (d Dropped) Total() int { return d.Empty + d.FragmentOnly + d.NotHTTP + d.Invalid + d.TooLong }

// Parse parses the UTF-8 HTML page read from r and returns its links, as
// Links does. The page is parsed as by a browser with scripting disabled,
// since the crawler runs no scripts: the content of <noscript> is markup and
// its links count.
//
// The HTML parser refuses pages that nest more than 512 open elements, which
// sloppy real pages do and browsers render (they stop nesting at that depth).
// For such a page Parse reads the links from its tags instead: the same
// links, texts and limits, in document order rather than breadth-first, and
// Stats.Flattened is set.
//
// A page whose tree would take more than lim.MaxTreeBytes is read from its
// tags the same way, with Stats.OverTreeBudget set, so one parse takes at
// most about MaxTreeBytes beyond the page itself (see ParseCost).
//
// Parse reads r to the end into memory; bound its size before. The only
// error is one from reading r.
func Parse(r io.Reader, pageURL *url.URL, lim Limits) ([]watch.Link, Stats, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		page := "page"
		if pageURL != nil {
			page = pageURL.Redacted()
		}
		return nil, Stats{}, fmt.Errorf("domwalk: read HTML of %s: %w", page, err)
	}
	links, stats := ParseBytes(src, pageURL, lim)
	return links, stats, nil
}

// ParseBytes is Parse for a page already in memory, as the crawler has it:
// it spares Parse's copy. It cannot fail. src must not change until it
// returns.
func ParseBytes(src []byte, pageURL *url.URL, lim Limits) ([]watch.Link, Stats) {
	links, stats, _ := ParseBytesIn(src, pageURL, lim, nil)
	return links, stats
}

// ParseBytesIn is ParseBytes keeping only the anchors in regions (see
// Regions and LinksIn); nil regions are the whole page. A page with regions
// that must be read from its tags (Stats.Flattened: too large or too deep
// for a tree) yields no links and ErrRegionsNeedTree, with its Stats; that
// is the only error.
func ParseBytesIn(src []byte, pageURL *url.URL, lim Limits, regions *Regions) ([]watch.Link, Stats, error) {
	lim = lim.WithDefaults()
	if TreeBytes(src) > lim.MaxTreeBytes {
		links, stats := flatLinks(src, pageURL, lim)
		stats.OverTreeBudget = true
		return flatResult(links, stats, regions)
	}
	doc, err := html.ParseWithOptions(bytes.NewReader(src), html.ParseOptionEnableScripting(false))
	if err != nil {
		// Reading from memory cannot fail, so the parser refused the page.
		links, stats := flatLinks(src, pageURL, lim)
		return flatResult(links, stats, regions)
	}
	links, stats := LinksIn(doc, pageURL, lim, regions)
	return links, stats, nil
}

// flatResult returns the links read from a page's tags, or ErrRegionsNeedTree
// when the page has regions.
func flatResult(links []watch.Link, stats Stats, regions *Regions) ([]watch.Link, Stats, error) {
	if regions != nil {
		return nil, stats, ErrRegionsNeedTree
	}
	return links, stats, nil
}

// flatLinks returns the links of src read from its tags by flatDocument.
func flatLinks(src []byte, pageURL *url.URL, lim Limits) ([]watch.Link, Stats) {
	doc, capped := flatDocument(src, lim)
	links, stats := Links(doc, pageURL, lim)
	stats.Flattened = true
	stats.NodesCapped = stats.NodesCapped || capped
	return links, stats
}

// Links returns the links of the parsed document doc, served from pageURL,
// in the order a breadth-first walk first meets them: all links at one depth
// before any deeper one, siblings in document order.
//
// A link is an <a> or <area> element (or an SVG <a>) with an href. Its URL is
// resolved against the first <base href> of the document (in tree order,
// itself resolved against pageURL; a base that is not http(s) is ignored) or
// else against pageURL, and normalised by urlnorm.Resolve. Hrefs that urlnorm
// refuses (empty, fragment-only, not http(s), invalid, too long) are dropped
// and counted in Stats.Dropped; rel=nofollow links are kept. Content of
// <template> elements is inert and skipped.
//
// A link's text is the anchor's text content with <script>, <style>,
// <template> and <noscript> content left out; a <br> and the edges of block
// elements (<div>, <p>, <li>…) separate words, as in rendered text. When that
// text is empty, the text is the title attribute, then the alt of the first
// descendant <img> with a non-empty one (for <area>, its own alt), then the
// aria-label attribute. Runs of Unicode white space become one space and the
// text is trimmed; control characters are removed and invalid UTF-8 becomes
// U+FFFD; a text longer than MaxTextRunes is cut (see Limits).
//
// Each URL appears once. When several anchors share it, the best text wins:
//
//   - a headline first: the text of an anchor inside a heading (<h1>–<h6>
//     or role="heading", among its nearest MaxHeadingAncestors ancestors)
//     or with role="heading" itself, or the text of the first heading
//     inside an anchor; the first headline met wins;
//   - else an anchor's own text, the first met: breadth-first, the story's
//     headline link usually sits above its teaser and "more"/comment links;
//   - else a fallback attribute (title, alt, aria-label), the longest;
//   - else an own text that is only an image credit (see IsCredit).
//
// Link.Summary is the longest text of the link's anchors other than the
// chosen one (for an anchor holding a heading, its text outside the
// heading counts as one), empty when there is none. Fallback attributes and
// credits are never a summary.
//
// Links stops at the limits of lim (zero fields mean defaults) and reports
// them in Stats. pageURL should be the absolute http(s) URL the page was
// served from; with nil, relative links are dropped as invalid. Links does
// not modify doc or pageURL.
func Links(doc *html.Node, pageURL *url.URL, lim Limits) ([]watch.Link, Stats) {
	return LinksIn(doc, pageURL, lim, nil)
}

// LinksIn is Links keeping only the anchors in regions (see Regions); nil
// regions are the whole page. Anchors outside are counted in
// Stats.OutsideRegions.
func LinksIn(doc *html.Node, pageURL *url.URL, lim Limits, regions *Regions) ([]watch.Link, Stats) {
	lim = lim.WithDefaults()
	if doc == nil {
		return nil, Stats{}
	}
	pageBase := normalizedBase(pageURL)
	baseNode := headBase(doc)
	base := pageBase
	if baseNode != nil {
		base = elementBase(pageBase, baseNode)
	}
	w := newWalker(lim, base, baseNode, regions)
	w.walk(doc)
	if baseNode == nil && w.lateBase {
		// The parser leaves a <base> met after <body> has begun where it
		// stands; browsers still honour the first one in tree order. Such
		// pages are rare, so they pay for a second walk instead of every
		// page paying for a search ahead of the first.
		if n := firstBase(doc, lim); n != nil {
			if b := elementBase(pageBase, n); urlString(b) != w.stats.Base {
				w = newWalker(lim, b, n, regions)
				w.walk(doc)
			}
		}
	}
	for i := range w.links {
		w.links[i].Summary = w.texts[i].summary(w.links[i].Text)
		w.links[i].Heading = int(w.texts[i].score.heading)
	}
	w.place(doc)
	return w.links, w.stats
}

// normalizedBase returns the normalised form of u, or nil when u is not an
// absolute http(s) URL. Resolving hrefs against a normalised base keeps
// urlnorm on its fast path for the base's host.
func normalizedBase(u *url.URL) *url.URL {
	if u == nil {
		return nil
	}
	s, err := urlnorm.Normalize(u.String())
	if err != nil {
		return nil
	}
	n, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return n
}

func urlString(u *url.URL) string {
	if u == nil {
		return ""
	}
	return u.String()
}

// elementBase returns the base URL that the <base> element n sets, or
// pageBase when its href is not an absolute http(s) URL once resolved.
func elementBase(pageBase *url.URL, n *html.Node) *url.URL {
	href, _ := attr(n, "href")
	s, err := urlnorm.Resolve(pageBase, href)
	if err != nil {
		return pageBase
	}
	b, err := url.Parse(s)
	if err != nil {
		return pageBase
	}
	return b
}

// headBase returns the first <base href> among the children of <head>, where
// the parser puts every <base> met before <body>.
func headBase(doc *html.Node) *html.Node {
	root := childElement(doc, atom.Html)
	if root == nil {
		return nil
	}
	head := childElement(root, atom.Head)
	if head == nil {
		return nil
	}
	for c := head.FirstChild; c != nil; c = c.NextSibling {
		if isBase(c) {
			return c
		}
	}
	return nil
}

func childElement(n *html.Node, a atom.Atom) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == a && c.Namespace == "" {
			return c
		}
	}
	return nil
}

// firstBase returns the first <base href> in tree order (depth first), or
// nil, visiting at most lim.MaxNodes nodes no deeper than lim.MaxDepth.
func firstBase(doc *html.Node, lim Limits) *html.Node {
	n, depth, budget := doc, 0, lim.MaxNodes
	for n != nil && budget > 0 {
		budget--
		if isBase(n) {
			return n
		}
		if n.FirstChild != nil && depth < lim.MaxDepth && !isTemplate(n) {
			n, depth = n.FirstChild, depth+1
			continue
		}
		for n != doc && n.NextSibling == nil {
			n, depth = n.Parent, depth-1
		}
		if n == doc {
			return nil
		}
		n = n.NextSibling
	}
	return nil
}

func isBase(n *html.Node) bool {
	if n.Type != html.ElementNode || n.DataAtom != atom.Base || n.Namespace != "" {
		return false
	}
	_, ok := attr(n, "href")
	return ok
}

func isTemplate(n *html.Node) bool {
	return n.Type == html.ElementNode && n.DataAtom == atom.Template && n.Namespace == ""
}

// attr returns the value of the attribute key (in no namespace) of n.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val, true
		}
	}
	return "", false
}

// MaxHeadingAncestors is how many ancestors of an anchor are searched for
// a heading. Real teasers put the anchor one to three elements inside its
// heading (<h2><span><a>); the bound keeps a page of thousands of anchors
// nested hundreds deep from costing a search to the root per anchor.
const MaxHeadingAncestors = 8

// textKind ranks where a link's text came from; a higher kind wins.
type textKind uint8

const (
	noText      textKind = iota
	creditText           // own text that is only an image's credit
	attrText             // title, img alt or aria-label
	ownText              // the anchor's text content
	headingText          // the text of a heading the anchor is in or holds
)

// textScore ranks a link text: kind first, then length in runes (at most
// MaxTextRunes+1, since text beyond that is not gathered). heading is not
// ranked: it is the level of the heading a headingText came from (0 for
// the other kinds), which becomes the link's Place.Heading.
type textScore struct {
	kind    textKind
	runes   int
	heading uint8
}

// beats reports whether s wins over t, met earlier: among fallback
// attributes the longer, among other texts of a kind the first.
func (s textScore) beats(t textScore) bool {
	return s.kind > t.kind || s.kind == t.kind && s.kind == attrText && s.runes > t.runes
}

// rankedText is a text and its length in runes.
type rankedText struct {
	s     string
	runes int
}

// linkTexts is what a walk keeps of a link's texts: the score of the
// chosen one, and the two longest distinct own texts met, the summary's
// candidates. Two are enough: the summary is the longest that is not the
// chosen text, and the chosen text is one of them when it is an own text.
type linkTexts struct {
	score textScore
	long  [2]rankedText
}

// offer makes b, of runes runes, a summary candidate. b is copied only when
// it is kept, so that the anchors of a link that repeat a text cost no
// allocation.
func (lt *linkTexts) offer(b []byte, runes int) {
	switch {
	case runes == 0 || runes <= lt.long[1].runes || string(b) == lt.long[0].s || string(b) == lt.long[1].s:
	case runes > lt.long[0].runes:
		lt.long[1], lt.long[0] = lt.long[0], rankedText{string(b), runes}
	default:
		lt.long[1] = rankedText{string(b), runes}
	}
}

// offerChosen makes s, the link's chosen text, a candidate without copying it.
func (lt *linkTexts) offerChosen(s string, runes int) {
	switch {
	case runes == 0 || runes <= lt.long[1].runes || s == lt.long[0].s || s == lt.long[1].s:
	case runes > lt.long[0].runes:
		lt.long[1], lt.long[0] = lt.long[0], rankedText{s, runes}
	default:
		lt.long[1] = rankedText{s, runes}
	}
}

// summary returns the longest candidate other than text.
func (lt *linkTexts) summary(text string) string {
	if lt.long[0].s != text {
		return lt.long[0].s
	}
	return lt.long[1].s
}

// walker holds the state of one walk.
type walker struct {
	lim      Limits
	base     *url.URL
	baseNode *html.Node // the <base> that set base, if any
	lateBase bool       // a <base href> was met outside <head> while baseNode is nil
	regions  *Regions   // nil: the whole page
	budget   int        // node visits left
	stats    Stats
	links    []watch.Link
	texts    []linkTexts // texts[i] ranks links[i].Text and holds its summary's candidates
	index    map[string]int
	overCap  map[uint64]struct{} // hashes of the links beyond MaxLinks
	seed     maphash.Seed
	text     textBuilder // the anchor's text, or its text outside its heading
	head     textBuilder // the text of the heading inside the anchor
	headNode *html.Node  // the heading whose text is in head
	// anchors are the anchors recorded for links, met breadth-first, which
	// place ranks in document order.
	anchors []anchorOf
}

// anchorOf is an anchor and the index of its link.
type anchorOf struct {
	node *html.Node
	link int32
}

func newWalker(lim Limits, base *url.URL, baseNode *html.Node, regions *Regions) *walker {
	w := &walker{
		regions:  regions,
		lim:      lim,
		base:     base,
		baseNode: baseNode,
		budget:   lim.MaxNodes,
		index:    make(map[string]int, 64),
		anchors:  make([]anchorOf, 0, 64),
		text:     textBuilder{max: lim.MaxTextRunes},
		head:     textBuilder{max: lim.MaxTextRunes},
	}
	w.stats.Base = urlString(base)
	return w
}

// walk visits root and its descendants breadth-first. The queue holds the
// nodes whose children form the next level, so its length is bounded by the
// width of one level, not by the size of the document.
//
// With regions, each queued node carries its region state, the subtrees of
// Exclude matches are not walked, and anchors outside the regions are
// counted in Stats.OutsideRegions instead of recorded.
func (w *walker) walk(root *html.Node) {
	if !w.visit(root, 0, true) {
		return
	}
	var parents, next []*html.Node
	var states, nextStates []regionState // states[i] is that of parents[i], with regions
	if root.FirstChild != nil && !isTemplate(root) {
		parents = append(parents, root)
		states = append(states, 0)
	}
	for depth := 1; len(parents) > 0; depth++ {
		if depth > w.lim.MaxDepth {
			w.stats.DepthCapped = true
			return
		}
		next, nextStates = next[:0], nextStates[:0]
		for i, p := range parents {
			for c := p.FirstChild; c != nil; c = c.NextSibling {
				var st regionState
				admitted := true
				if w.regions != nil {
					st = w.regions.enter(states[i], c)
					admitted = w.regions.admits(st)
					if st&inWithin != 0 && states[i]&inWithin == 0 {
						w.stats.WithinMatched++
					}
				}
				if !w.visit(c, depth, admitted) {
					return
				}
				if c.FirstChild != nil && !isTemplate(c) && st&inExclude == 0 {
					next = append(next, c)
					if w.regions != nil {
						nextStates = append(nextStates, st)
					}
				}
			}
		}
		parents, next = next, parents
		states, nextStates = nextStates, states
	}
}

// visit handles one node of the breadth-first walk and reports whether the
// walk goes on. An anchor that is not admitted (outside the page's
// regions) is counted, not recorded.
func (w *walker) visit(n *html.Node, depth int, admitted bool) bool {
	if w.budget <= 0 {
		w.stats.NodesCapped = true
		return false
	}
	w.budget--
	w.stats.Nodes++
	if n.Type != html.ElementNode {
		return true
	}
	switch n.DataAtom {
	case atom.A, atom.Area:
		if n.Namespace == "" || n.Namespace == "svg" && n.DataAtom == atom.A {
			if !admitted {
				w.stats.OutsideRegions++
				return true
			}
			return w.anchor(n, depth)
		}
	case atom.Base:
		if w.baseNode == nil && isBase(n) {
			w.lateBase = true
		}
	}
	return true
}

// anchor records the link of the anchor n, if any, and reports whether the
// walk goes on.
func (w *walker) anchor(n *html.Node, depth int) bool {
	href, ok := attr(n, "href")
	if !ok && n.Namespace == "svg" {
		href, ok = xlinkHref(n)
	}
	if !ok {
		return true
	}
	w.stats.Anchors++
	u, err := urlnorm.Resolve(w.base, href)
	if err != nil {
		w.drop(err)
		return true
	}
	if i, seen := w.index[u]; seen {
		w.stats.Duplicates++
		w.anchors = append(w.anchors, anchorOf{n, int32(i)})
		if w.stats.LinksCapped {
			return true // past the cap the walk only counts: texts stay as at the cap
		}
		lt := &w.texts[i]
		text, score, other := w.anchorText(n, depth)
		if score.beats(lt.score) {
			w.links[i].Text = string(text)
			lt.score = score
			if score.kind >= ownText {
				lt.offerChosen(w.links[i].Text, score.runes)
			}
		} else if score.kind >= ownText {
			lt.offer(text, score.runes)
		}
		if len(other) > 0 {
			lt.offer(other, w.text.runes)
		}
		return true
	}
	if len(w.links) >= w.lim.MaxLinks {
		w.countOverCap(u)
		return true
	}
	text, score, other := w.anchorText(n, depth)
	w.anchors = append(w.anchors, anchorOf{n, int32(len(w.links))})
	w.index[u] = len(w.links)
	w.links = append(w.links, watch.Link{URL: u, Text: string(text)})
	w.texts = append(w.texts, linkTexts{score: score})
	lt := &w.texts[len(w.texts)-1]
	// Fallback attributes and credits are not shown as a summary.
	if score.kind >= ownText {
		lt.offerChosen(w.links[len(w.links)-1].Text, score.runes)
	}
	if len(other) > 0 {
		lt.offer(other, w.text.runes)
	}
	w.stats.Links++
	return true
}

// countOverCap counts u, a link beyond MaxLinks, once. Only its hash is
// kept, so counting costs 16 bytes a link, however long the URLs are, and
// at most MaxNodes links.
func (w *walker) countOverCap(u string) {
	if w.overCap == nil {
		w.stats.LinksCapped = true
		w.overCap = make(map[uint64]struct{})
		w.seed = maphash.MakeSeed()
	}
	h := maphash.String(w.seed, u)
	if _, seen := w.overCap[h]; !seen {
		w.overCap[h] = struct{}{}
		w.stats.LinksOverCap++
	}
}

func xlinkHref(n *html.Node) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == "href" && a.Namespace == "xlink" {
			return a.Val, true
		}
	}
	return "", false
}

func (w *walker) drop(err error) {
	d := &w.stats.Dropped
	switch {
	case errors.Is(err, urlnorm.ErrFragmentOnly):
		d.FragmentOnly++
	case errors.Is(err, urlnorm.ErrNotHTTP):
		d.NotHTTP++
	case errors.Is(err, urlnorm.ErrEmpty):
		d.Empty++
	case errors.Is(err, urlnorm.ErrTooLong):
		d.TooLong++
	default:
		d.Invalid++
	}
}

// anchorText gathers the text of the anchor n, at depth, and returns it
// with its score, and other: the anchor's text outside its heading when the
// text is that of a heading inside the anchor, else nil. Both stay valid
// until the next call.
func (w *walker) anchorText(n *html.Node, depth int) (text []byte, score textScore, other []byte) {
	t := &w.text
	t.reset()
	w.head.reset()
	var alt string
	if n.DataAtom == atom.Area {
		alt, _ = attr(n, "alt")
	}
	around := headingAround(n)
	alt = w.gatherText(n, depth, alt, around == nil)
	if w.head.runes > 0 {
		if t.runes > 0 {
			other = t.finish()
		}
		return w.head.finish(), textScore{headingText, w.head.runes, headingLevel(w.headNode)}, other
	}
	if t.runes > 0 {
		text = t.finish()
		switch {
		case around != nil:
			return text, textScore{headingText, t.runes, headingLevel(around)}, nil
		case isCredit(text, alt):
			score = textScore{creditText, t.runes, 0}
		default:
			return text, textScore{ownText, t.runes, 0}, nil
		}
	}
	title, _ := attr(n, "title")
	aria, _ := attr(n, "aria-label")
	for _, s := range [...]string{title, alt, aria} {
		if visible(s) {
			t.reset()
			t.add(s)
			return t.finish(), textScore{attrText, t.runes, 0}, nil
		}
	}
	return text, score, nil
}

// headingAround returns n when it is a heading, else the nearest heading
// among its nearest MaxHeadingAncestors ancestors, else nil.
func headingAround(n *html.Node) *html.Node {
	if isHeading(n) {
		return n
	}
	for i, p := 0, n.Parent; i < MaxHeadingAncestors && p != nil; i, p = i+1, p.Parent {
		if isHeading(p) {
			return p
		}
	}
	return nil
}

// headingLevel returns the level of the heading h: its aria-level when
// that is a whole number from 1 (above 6 counting as 6, the deepest level
// a place records), else that of its element, <h1> to <h6>, else 2, the
// level ARIA gives role="heading" by default.
func headingLevel(h *html.Node) uint8 {
	if v, ok := attr(h, "aria-level"); ok {
		if l, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && l >= 1 {
			return uint8(min(l, watch.MaxHeading))
		}
	}
	if h.Namespace == "" {
		switch h.DataAtom {
		case atom.H1:
			return 1
		case atom.H2:
			return 2
		case atom.H3:
			return 3
		case atom.H4:
			return 4
		case atom.H5:
			return 5
		case atom.H6:
			return 6
		}
	}
	return 2
}

// isHeading reports whether n is an HTML heading element or has
// role="heading".
func isHeading(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if n.Namespace == "" {
		switch n.DataAtom {
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			return true
		}
	}
	role, _ := attr(n, "role")
	return role == "heading"
}

// creditPrefixes start the texts IsCredit takes for an image credit, lower
// case.
var creditPrefixes = [...]string{"©", "(c)", "copyright", "foto:", "fotos:", "photo:", "photos:",
	"bild:", "bilder:", "image:", "images:", "credit:", "credits:", "quelle:", "source:"}

// IsCredit reports whether text, an anchor's own text, is only the credit
// of the anchor's image, which a reader does not take for the link's text:
// after an optional leading copy of alt (the alt of the anchor's image, a
// caption repeating it) and an opening parenthesis, it starts with "©",
// "(c)", "Copyright", or one of "Foto:", "Fotos:", "Photo:", "Photos:",
// "Bild:", "Bilder:", "Image:", "Images:", "Credit:", "Credits:",
// "Quelle:", "Source:" (case ignored), as in "Foto: dpa", "© Reuters" or
// "Olaf Scholz (Bild: picture alliance)".
func IsCredit(text, alt string) bool { return isCredit([]byte(text), alt) }

// isCredit is IsCredit on the walk's text buffer, without copying it.
func isCredit(text []byte, alt string) bool {
	rest := text
	if a := strings.TrimSpace(alt); a != "" && len(rest) >= len(a) && string(rest[:len(a)]) == a {
		rest = rest[len(a):]
	}
	rest = bytes.TrimLeft(rest, " ")
	for _, s := range [...][]byte{rest, bytes.TrimLeft(rest, "([ ")} {
		for _, p := range creditPrefixes {
			if len(s) >= len(p) && bytes.EqualFold(s[:len(p)], []byte(p)) {
				return true
			}
		}
	}
	return false
}

// gatherText adds the text of n's descendants to w.text, depth first in
// document order, until the text is longer than MaxTextRunes or the node
// budget is spent. With findHeading, the text of the first heading among
// them goes to w.head instead (until it is longer than MaxTextRunes); a
// heading after MaxTextRunes of other text is not looked for, which keeps
// the walk of a huge anchor as short as before. It returns alt, or if alt is blank, the first
// non-blank alt of a descendant <img>.
func (w *walker) gatherText(n *html.Node, depth int, alt string, findHeading bool) string {
	t := &w.text
	var heading *html.Node // the heading being read into w.head
	if depth >= w.lim.MaxDepth {
		if n.FirstChild != nil {
			w.stats.DepthCapped = true
		}
		return alt
	}
	altFound := visible(alt)
	c, d := n.FirstChild, depth+1
	for c != nil {
		if w.budget <= 0 {
			w.stats.NodesCapped = true
			return alt
		}
		w.budget--
		w.stats.TextNodes++
		descend := false
		switch c.Type {
		case html.TextNode:
			if t.add(c.Data); t.full() {
				return alt
			}
		case html.ElementNode:
			switch {
			case skipsText(c):
			case findHeading && isHeading(c):
				// Read this heading into w.head; the text around it stays
				// in w.text.
				findHeading, heading, t = false, c, &w.head
				w.headNode = c
				descend = c.FirstChild != nil
			case c.DataAtom == atom.Img && !altFound:
				if a, _ := attr(c, "alt"); visible(a) {
					alt, altFound = a, true
				}
			case breaksText(c):
				t.space()
				descend = c.FirstChild != nil
			default:
				descend = c.FirstChild != nil
			}
		}
		if descend {
			if d >= w.lim.MaxDepth {
				w.stats.DepthCapped = true
			} else {
				c, d = c.FirstChild, d+1
				continue
			}
		}
		// Move on to the next node in document order, leaving the elements
		// that end here.
		for {
			if c.Type == html.ElementNode && breaksText(c) {
				t.space()
			}
			if c == heading {
				heading, t = nil, &w.text
				t.space()
				if t.full() {
					return alt
				}
			}
			if c.NextSibling != nil {
				c = c.NextSibling
				break
			}
			if c, d = c.Parent, d-1; c == n || c == nil {
				return alt
			}
		}
	}
	return alt
}

// skipsText reports whether the content of n is not rendered text.
func skipsText(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Template, atom.Noscript:
		return true
	}
	return false
}

// breaksText reports whether n separates words in rendered text: a <br> or a
// block element.
func breaksText(n *html.Node) bool {
	return n.Namespace == "" && breaksTextAtom(n.DataAtom)
}

func breaksTextAtom(a atom.Atom) bool {
	switch a {
	case atom.Br, atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Caption,
		atom.Dd, atom.Details, atom.Dialog, atom.Div, atom.Dl, atom.Dt, atom.Fieldset,
		atom.Figcaption, atom.Figure, atom.Footer, atom.Form, atom.H1, atom.H2, atom.H3,
		atom.H4, atom.H5, atom.H6, atom.Header, atom.Hgroup, atom.Hr, atom.Legend, atom.Li,
		atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.Option, atom.P, atom.Pre, atom.Section,
		atom.Summary, atom.Table, atom.Tbody, atom.Td, atom.Tfoot, atom.Th, atom.Thead,
		atom.Tr, atom.Ul:
		return true
	}
	return false
}

// visible reports whether s has a character that is neither white space nor
// a control character, that is, whether its cleaned text is non-empty.
func visible(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// textBuilder accumulates a link text: white space collapsed, controls
// removed, invalid UTF-8 replaced, and no more than max+1 runes kept, which is
// enough to know that the text must be cut.
type textBuilder struct {
	buf     []byte
	max     int  // MaxTextRunes
	runes   int  // runes in buf
	cutAt   int  // len(buf) when it held max-1 runes
	pending bool // a space is due before the next rune
}

func (t *textBuilder) reset() {
	t.buf, t.runes, t.cutAt, t.pending = t.buf[:0], 0, 0, false
}

// full reports whether the text is known to need cutting; more text changes
// nothing.
func (t *textBuilder) full() bool { return t.runes > t.max }

// space notes white space: one space separates the runes around it, and none
// is kept at either end.
func (t *textBuilder) space() {
	if len(t.buf) > 0 {
		t.pending = true
	}
}

func (t *textBuilder) add(s string) {
	for i := 0; i < len(s) && !t.full(); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch {
			case c == ' ' || '\t' <= c && c <= '\r':
				t.space()
			case c < ' ' || c == 0x7f:
			default:
				t.push(rune(c))
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case unicode.IsSpace(r):
			t.space()
		case unicode.IsControl(r):
		default:
			t.push(r) // invalid UTF-8 decodes as utf8.RuneError, U+FFFD
		}
	}
}

func (t *textBuilder) push(r rune) {
	if t.pending {
		t.pending = false
		t.push(' ')
		if t.full() {
			return
		}
	}
	t.buf = utf8.AppendRune(t.buf, r)
	t.runes++
	if t.runes == t.max-1 {
		t.cutAt = len(t.buf)
	}
}

// finish returns the text, cut to max runes. It stays valid until the next
// reset.
func (t *textBuilder) finish() []byte {
	if !t.full() {
		return t.buf
	}
	b := t.buf[:t.cutAt]
	if n := len(b); n > 0 && b[n-1] == ' ' {
		b = b[:n-1]
	}
	return append(b, "…"...)
}

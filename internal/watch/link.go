package watch

import (
	"fmt"
	"strings"
	"time"
)

// LinkOptions are a page's per-page link filters. Every field is optional
// in the JSON: options stored before a field existed read as its zero,
// which filters nothing.
type LinkOptions struct {
	// SameSiteOnly keeps only links to the page's host and its subdomains.
	SameSiteOnly bool `json:"sameSiteOnly,omitempty"`
	// Ignore holds regular expressions (RE2 syntax); a link whose normalised
	// URL matches any of them is dropped as churn, not content.
	Ignore []string `json:"ignore,omitempty"`

	// Within holds CSS selectors: when any is given, only the anchors
	// inside (or being) an element that one of them matches count, e.g.
	// "#latest-news" or "main .teaser-list". Exclude holds CSS selectors
	// whose elements' anchors never count, e.g. "nav", "footer",
	// ".ad-rail"; Exclude wins over Within. Caps and the selectors refused
	// are those of domwalk.CompileRegions (10 selectors together, 256 bytes
	// each, no :has, :contains or :matches). A page too large or too deep
	// to be parsed into a tree cannot be checked with regions: its checks
	// fail with a message saying so.
	Within  []string `json:"within,omitempty"`
	Exclude []string `json:"exclude,omitempty"`

	// Keyword rules, regular expressions (RE2 syntax) under the caps of
	// ignore patterns (see CompilePatterns). Text rules are matched,
	// ignoring case, against a link's text and its summary; URL rules
	// against its normalised URL, as written.
	//
	// When IncludeText or IncludeURL holds any pattern, a link is kept only
	// when its text or summary matches one of IncludeText or its URL one of
	// IncludeURL. A link whose text or summary matches one of ExcludeText,
	// or whose URL matches one of ExcludeURL, is dropped, whatever the
	// include rules say.
	IncludeText []string `json:"includeText,omitempty"`
	ExcludeText []string `json:"excludeText,omitempty"`
	IncludeURL  []string `json:"includeUrl,omitempty"`
	ExcludeURL  []string `json:"excludeUrl,omitempty"`
}

// Link is one link found on a page: its normalised absolute URL, the text a
// reader sees for it (the headline, when one of its anchors is in or holds a
// heading) and, when its anchors show more than one text, the longest other
// one (the teaser).
type Link struct {
	URL  string `json:"url"`
	Text string `json:"text"`
	// Summary is the longest text of the link's anchors other than Text,
	// empty when there is none. It is optional in the message: a task
	// without it is the one crawlers sent before it existed.
	Summary string `json:"summary,omitempty"`
	// Place is where the link stood on the page. Its fields are optional
	// in the message: a link without them is one sent by a crawler older
	// than places, and its place is not known.
	Place
	// PublishedAt is when a feed or news sitemap says its item was
	// published; nil when it says nothing, and for homepage links.
	PublishedAt *time.Time `json:"publishedAt,omitempty"`
}

// NewLink is a link to record: its 64-bit key (internal/shortlink), URL, text
// and short code.
type NewLink struct {
	Key  uint64
	URL  string
	Text string
	Code string
	// Summary is the link's teaser (Link.Summary); it goes into the link's
	// update, not into links.
	Summary string
	// Place is where the link stood on the page (Link.Place); it goes into
	// the link's update.
	Place Place
	// PublishedAt is Link.PublishedAt; it goes into the link's update.
	PublishedAt *time.Time
}

// Caps on a page's region selectors (Within and Exclude). Every element of
// every check is matched against every selector, so, as for ignore
// patterns, the caps keep a page's selectors cheap.
const (
	// MaxRegionSelectors is the most selectors one page may have, Within
	// and Exclude together.
	MaxRegionSelectors = 10
	// MaxSelectorBytes is the longest selector, in bytes.
	MaxSelectorBytes = 256
)

// costlyPseudoClasses are the selector extensions of the crawler's
// selector engine (cascadia) that are refused: :has and :haschild search
// the element's subtree, so matching them at every element costs the square
// of the page's size; :contains and :matches read and match the element's
// whole text.
var costlyPseudoClasses = [...]string{":has", ":contains", ":matches"}

// CheckSelector checks one region selector of list kind ("within" or
// "exclude") against the caps: not empty, at most MaxSelectorBytes, none of
// the costly pseudo-classes. Its grammar is the selector engine's to check
// (domwalk.CompileRegions), which this package does not import.
func CheckSelector(kind, sel string) error {
	if strings.TrimSpace(sel) == "" {
		return fmt.Errorf("%s selector %q is empty", kind, sel)
	}
	if len(sel) > MaxSelectorBytes {
		return fmt.Errorf("%s selector %.60q... is %d bytes long; the longest allowed is %d", kind, sel, len(sel), MaxSelectorBytes)
	}
	lower := strings.ToLower(sel)
	for _, pc := range costlyPseudoClasses {
		if strings.Contains(lower, pc) {
			return fmt.Errorf("%s selector %q uses %s, which is not allowed: it costs a search of the element's subtree or text at every element", kind, sel, pc)
		}
	}
	return nil
}

// CheckRegions checks a page's region selectors against the caps: at most
// MaxRegionSelectors together, each passing CheckSelector.
func CheckRegions(within, exclude []string) error {
	if n := len(within) + len(exclude); n > MaxRegionSelectors {
		return fmt.Errorf("%d region selectors (within and exclude); at most %d are allowed", n, MaxRegionSelectors)
	}
	for _, l := range []struct {
		kind string
		sels []string
	}{{"within", within}, {"exclude", exclude}} {
		for _, sel := range l.sels {
			if err := CheckSelector(l.kind, sel); err != nil {
				return err
			}
		}
	}
	return nil
}

// optionList is one list of a page's options: its name in the options'
// JSON, and a LinkOptions holding that list alone, which is how one list is
// checked on its own.
type optionList struct {
	field string
	alone LinkOptions
}

// lists returns o's lists, each alone.
func (o LinkOptions) lists() []optionList {
	return []optionList{
		{"ignore", LinkOptions{Ignore: o.Ignore}},
		{"within", LinkOptions{Within: o.Within}},
		{"exclude", LinkOptions{Exclude: o.Exclude}},
		{"includeText", LinkOptions{IncludeText: o.IncludeText}},
		{"excludeText", LinkOptions{ExcludeText: o.ExcludeText}},
		{"includeUrl", LinkOptions{IncludeURL: o.IncludeURL}},
		{"excludeUrl", LinkOptions{ExcludeURL: o.ExcludeURL}},
	}
}

// caps checks what spans o's lists: the count of each pattern list, the
// patterns' compiled size together, and the regions' caps.
func (o LinkOptions) caps() error {
	for _, l := range []struct {
		kind string
		n    int
	}{{"ignore", len(o.Ignore)}, {"include-text", len(o.IncludeText)}, {"exclude-text", len(o.ExcludeText)},
		{"include-url", len(o.IncludeURL)}, {"exclude-url", len(o.ExcludeURL)}} {
		if l.n > MaxIgnorePatterns {
			return fmt.Errorf("%d %s patterns; at most %d are allowed", l.n, l.kind, MaxIgnorePatterns)
		}
	}
	if _, errs := CompilePatterns(o); len(errs) > 0 {
		return errs[0]
	}
	return CheckRegions(o.Within, o.Exclude)
}

// Validate reports whether o may be stored: each list on its own (a
// refusal names the list), then the caps that span the lists (a refusal
// names "options"): ignore patterns and keyword rules within the caps of
// CompilePatterns, region selectors within CheckRegions. Every error is a
// *RefusedError whose message is one line naming the first pattern or
// selector refused (quoted, shortened when long) and why. The selectors'
// grammar is checked by domwalk.CompileRegions, which needs a selector
// parser this package does not import.
func (o LinkOptions) Validate() error {
	var errs []error
	for _, l := range o.lists() {
		errs = append(errs, Refused(l.field, l.alone.caps()))
	}
	if err := JoinRefused(errs...); err != nil {
		return err
	}
	return Refused("options", o.caps())
}

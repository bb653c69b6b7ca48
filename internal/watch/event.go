package watch

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// EventKind names what happened to a watched page besides a new link. The
// words are those of events.kind (migration 00022), of the API, and the
// type of the message a subscription receives.
type EventKind string

// The kinds of event.
const (
	// LinkRewritten: a known link of the page shows another headline (a
	// revision of its text).
	LinkRewritten EventKind = "link.rewritten"
	// PageDegraded: a check found the watch blind to the page (Health).
	PageDegraded EventKind = "page.degraded"
	// PageRecovered: a healthy check ended the page's degraded run.
	PageRecovered EventKind = "page.recovered"
)

// EventKinds are the kinds a subscription may ask for, in the order
// messages and forms list them.
var EventKinds = []EventKind{LinkRewritten, PageDegraded, PageRecovered}

// ParseEventKinds reads a comma-separated list of event kinds
// ("link.rewritten,page.degraded"); "" is none. Kinds are kept in
// EventKinds' order, each once.
func ParseEventKinds(s string) ([]EventKind, error) {
	var kinds []EventKind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(EventKinds, EventKind(f)) {
			return nil, fmt.Errorf("event %q: want link.rewritten, page.degraded or page.recovered", f)
		}
		kinds = append(kinds, EventKind(f))
	}
	return SortedEventKinds(kinds), nil
}

// EventKindsOf reads a list of event kinds, one a word, as the API takes
// them; nil or empty is none. Kinds are kept in EventKinds' order, each
// once. Its error names the first word that is not a kind and says what
// each kind is, so that a person can pick one.
func EventKindsOf(words []string) ([]EventKind, error) {
	var kinds []EventKind
	for _, w := range words {
		k := EventKind(strings.TrimSpace(w))
		if !slices.Contains(EventKinds, k) {
			return nil, fmt.Errorf("%q is not a kind of event: want link.rewritten (a known link's headline changed), "+
				"page.degraded (the watch may be blind to the page) or page.recovered (a healthy check after that)", w)
		}
		kinds = append(kinds, k)
	}
	return SortedEventKinds(kinds), nil
}

// SortedEventKinds returns kinds in EventKinds' order, each once.
func SortedEventKinds(kinds []EventKind) []EventKind {
	var sorted []EventKind
	for _, k := range EventKinds {
		if slices.Contains(kinds, k) {
			sorted = append(sorted, k)
		}
	}
	return sorted
}

// Event is one thing that happened to a watched page besides a new link,
// recorded by the check that saw it.
//
// Its JSON is the event object of a webhook body: the fields of its kind
// only, so a receiver tells the kinds apart by which fields it finds too.
type Event struct {
	ID     int64     `json:"id"`
	PageID int64     `json:"page_id"`
	Kind   EventKind `json:"kind"`
	// At is when the check that saw it fetched the page.
	At time.Time `json:"at"`
	// The link and its headline before and after, for LinkRewritten.
	URL     string `json:"url,omitempty"`
	OldText string `json:"old_text,omitempty"`
	NewText string `json:"new_text,omitempty"`
	// Why the page is degraded, for PageDegraded.
	Reason Degradation `json:"reason,omitempty"`
	Detail string      `json:"detail,omitempty"`
}

// Published returns e as it leaves portalwatch: its time in UTC.
func (e Event) Published() Event {
	e.At = e.At.UTC()
	return e
}

// Revision is a headline rewrite as the API and feeds show it: an Event of
// kind LinkRewritten.
type Revision struct {
	ID      int64     `json:"id"`
	PageID  int64     `json:"page_id"`
	URL     string    `json:"url"`
	OldText string    `json:"old_text"`
	NewText string    `json:"new_text"`
	At      time.Time `json:"at"`
}

// RevisionCaps bound the revisions the checks of a page record. A redesign
// rewrites many headlines at once: a check that rewrites more than PerCheck
// records none (the texts are still brought up to date), and a link keeps
// at most PerLink revisions, so a live ticker whose teaser changes every
// minute does not flood its page. Zero fields record no revisions.
type RevisionCaps struct {
	PerCheck int `env:"PORTALWATCH_REVISIONS_PER_CHECK"`
	PerLink  int `env:"PORTALWATCH_REVISIONS_PER_LINK"`
}

// DefaultRevisionCaps are the caps the programs use.
var DefaultRevisionCaps = RevisionCaps{PerCheck: 50, PerLink: 20}

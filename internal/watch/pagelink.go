package watch

import (
	"errors"
	"fmt"
	"time"
)

// LinkState names a part of a page's links list: the links on the page now
// or those taken down from it.
type LinkState string

// The states of LinkFilter.
const (
	// LinksCurrent is the links of the page's followed set: those its last
	// whole check found, and the new links of truncated checks since. A
	// link that has left but is not yet recorded as removed (absent for
	// fewer than the removal count of checks, or due and waiting for the
	// next claim) is in neither state.
	LinksCurrent LinkState = "current"
	// LinksRemoved is the links whose latest recorded removal still
	// stands: taken down and not back on the page.
	LinksRemoved LinkState = "removed"
)

// ParseLinkState reads a state as the API and watchctl take it; empty is
// LinksCurrent.
func ParseLinkState(s string) (LinkState, error) {
	switch st := LinkState(s); st {
	case "":
		return LinksCurrent, nil
	case LinksCurrent, LinksRemoved:
		return st, nil
	}
	return "", fmt.Errorf("state %q: want current (the links on the page now) or removed (those taken down from it)", s)
}

// ErrPageNotFollowed is returned for the current links of a page whose
// followed set is not kept: which of its links are on it now is not known.
var ErrPageNotFollowed = errors.New("which of its links are on it now is not known: removals are off " +
	"(PORTALWATCH_REMOVAL_CHECKS=0), or no whole check has run since the page was added or re-baselined; " +
	"the next whole check with removals on starts following it")

// PageLink is one link of a page in its links list (LinkFilter): on the
// page now, or taken down from it.
type PageLink struct {
	URL  string `json:"url"`
	Text string `json:"text"`
	Code string `json:"code"`
	// FirstSeenAt is when the link was first seen on the page; for a link
	// found by the first check of the page (or a silent re-baseline), when
	// watching began, so its time on the page is longer. LastSeenAt is the
	// latest refresh of the links of the page that found it (about daily,
	// see PORTALWATCH_LINKS_RETENTION), else FirstSeenAt. Both are nil for
	// a removed link whose row was pruned by link retention.
	FirstSeenAt *time.Time `json:"first_seen_at"`
	LastSeenAt  *time.Time `json:"last_seen_at"`
	// RemovedAt is the link's latest removal; nil for a current link.
	RemovedAt *time.Time `json:"removed_at,omitempty"`
	// DwellSeconds is its time on the page (see Dwell of Update): to
	// RemovedAt for a removed link, to the time of the answer for a
	// current one; nil when FirstSeenAt is.
	DwellSeconds *int64 `json:"dwell_seconds"`
	// Cursor is the link's place in its list, for the next call.
	Cursor LinkCursor `json:"-"`
}

// Published returns l as it leaves portalwatch: its times in UTC.
func (l PageLink) Published() PageLink {
	for _, t := range []**time.Time{&l.FirstSeenAt, &l.LastSeenAt, &l.RemovedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return l
}

// LinkCursor is a place in a page's links list: for current links the
// (FirstSeenAt, link key) of the last one seen, newest first; for removed
// ones the (RemovedAt, removal id).
type LinkCursor struct {
	At time.Time
	ID int64
}

// IsZero reports whether c is the start of a list.
func (c LinkCursor) IsZero() bool { return c.At.IsZero() }

// LinkFilter selects a page of one page's links list.
type LinkFilter struct {
	PageID int64
	State  LinkState // "" is LinksCurrent
	// After is the Cursor of the last link of the previous call; the zero
	// LinkCursor starts with the newest.
	After LinkCursor
	Limit int // 1..MaxUpdatesLimit; 0 means 100
}

// LimitOrDefault returns f's Limit within 1..MaxUpdatesLimit, 100 for 0.
func (f LinkFilter) LimitOrDefault() int { return limitOrDefault(f.Limit) }

package watch

import (
	"net/url"
	"strings"
	"time"
)

// Slot is a fetch slot the scheduler booked for a check in the fleet's
// per-origin budget (package hostgate): the check fetches its page at At,
// not before, and the origin's next booking is Spacing after At. A crawler
// that takes the slot does not book another, so a page is fetched at the
// rate its origin allows without its worker sleeping for it.
type Slot struct {
	At time.Time `json:"at"`
	// Spacing is what the booking kept between this slot and the next:
	// the larger of the fleet's host spacing and the Crawl-delay the
	// crawlers last read for the origin. A crawler that reads a longer
	// Crawl-delay books again instead of taking the slot.
	Spacing time.Duration `json:"spacingNs"`
}

// Stale reports whether the slot passed so long ago, by more than its
// spacing, that others may have fetched the origin since: a job that sat in
// a queue books again.
func (s Slot) Stale(now time.Time) bool { return now.After(s.At.Add(s.Spacing)) }

// Origin returns the scheme and host of raw, the unit that robots.txt and
// the per-origin budget are kept by, and whether raw has one.
func Origin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), true
}

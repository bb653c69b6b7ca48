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

// FetchClass ranks the fetches that share an origin's budget (package
// hostgate). Checks of the watched pages come first; the fetches that later
// sources add (feeds and sitemaps, articles) get classes below it and use an
// origin only where the pages' checks leave room: they book only a slot
// that is free now, and leave one in-flight place to the first class.
type FetchClass uint8

// HomepageFetch is the first class: checks of watched pages, a rendered
// page's document included.
const HomepageFetch FetchClass = 0

// SlotRequest asks the budget for N slots of one origin.
type SlotRequest struct {
	Origin string
	N      int
}

// Booking is what the budget booked for one SlotRequest: the slots, in
// order (fewer than asked when the origin's later slots lie beyond the
// horizon), the spacing it kept, and Next, the first slot it did not book.
// Times are by the budget's clock (Redis's), which every booking shares,
// so that two slots booked by different processes are a spacing apart
// exactly.
type Booking struct {
	Slots   []time.Time
	Spacing time.Duration
	Next    time.Time
}

package watch

import (
	"fmt"
	"time"
)

// Time on the front page (dwell) is how long a link stayed on its page:
// from its first sighting (DiscoveredAt of an update, FirstSeenAt of a link)
// to its removal as recorded (Removal). Two things make it coarser than a
// stopwatch, and readers are told so:
//
//   - portalwatch records when a link leaves but not when it comes back,
//     so a link that left, came back and left again is measured from its
//     first sighting to its latest removal, the time away included;
//   - a removal is recorded by the claim of the check after the one that
//     found the link absent for the removal count (K) in a row, so the end
//     falls K+1 check intervals after the link was last seen, K to K+1
//     after it left: 10 to 15 minutes late at the defaults (K = 2, every
//     5 minutes).
//
// A link still on its page has no dwell in an update (no removal is known;
// readers count from discovered_at), and its time so far in the links list
// of its page.

// DwellSeconds returns the whole seconds from first to end, nil when
// either is unknown (zero). A clock that went backwards gives 0, never a
// negative time.
func DwellSeconds(first, end time.Time) *int64 {
	if first.IsZero() || end.IsZero() {
		return nil
	}
	s := max(int64(end.Sub(first)/time.Second), 0)
	return &s
}

// Dwell returns how long u's link was on its page, from its discovery to
// its latest removal, and false while no removal of it is recorded.
func (u Update) Dwell() (time.Duration, bool) {
	if u.RemovedAt == nil {
		return 0, false
	}
	return max(u.RemovedAt.Sub(u.DiscoveredAt), 0), true
}

// HumanDuration says d as a reader of a page wants it, cut (not rounded)
// to its two largest units: "under a minute", "45 min", "3 h 20 min",
// "1 day 4 h", "12 days".
func HumanDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d < day:
		h, m := d/time.Hour, d%time.Hour/time.Minute
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	days, h := d/day, d%day/time.Hour
	unit := "days"
	if days == 1 {
		unit = "day"
	}
	if h == 0 {
		return fmt.Sprintf("%d %s", days, unit)
	}
	return fmt.Sprintf("%d %s %d h", days, unit, h)
}

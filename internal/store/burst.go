package store

import "math"

// Burst says when a check's new links are a redesign flood rather than news:
// at least Min new links and more than Share of the check's whole link set
// (Check.Links). The updates of such a check are stored with burst = true,
// so readers are shown the check as one event. The zero Burst flags
// nothing. A page with burst detection off (watch.Page.BurstDetection) is
// never flagged; a baseline or a re-baseline records no updates at all.
type Burst struct {
	// Share is the part of the page's links, from 0 to 1, that new links
	// must exceed (PORTALWATCH_BURST_SHARE, default 0.5); 0 turns
	// detection off.
	Share float64
	// Min is the fewest new links a burst has (PORTALWATCH_BURST_MIN,
	// default 20).
	Min int
}

// sql returns the rule's minimum and share for the recording statement,
// where detection off is a minimum no check reaches.
func (b Burst) sql() (int64, float64) {
	if b.Share <= 0 {
		return math.MaxInt64, 1
	}
	return int64(max(b.Min, 1)), b.Share
}

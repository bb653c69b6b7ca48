package web

import (
	"fmt"
	"strings"
)

// sparkBins is how many bars a sparkline draws: a week in 4-hour bins, few
// enough to see one at a glance and to tell a quiet night from a dead page.
const sparkBins = 42

// sparkline is a page's new links per hour over the last week, drawn as an
// inline SVG path of bars (no image request, nothing for the CSP to allow),
// with its sums for the text people and screen readers read.
type sparkline struct {
	// Path is the SVG path of the bars in a 0..sparkBins × 0..20 box.
	Path  string
	Total int
	// Peak is the most new links of one hour.
	Peak int
}

// newSparkline draws hourly, oldest first (nil: no new link all week).
func newSparkline(hourly []int) sparkline {
	var sp sparkline
	if len(hourly) == 0 {
		return sp
	}
	per := (len(hourly) + sparkBins - 1) / sparkBins
	bins := make([]int, sparkBins)
	for i, n := range hourly {
		sp.Total += n
		sp.Peak = max(sp.Peak, n)
		bins[min(i/per, sparkBins-1)] += n
	}
	top := 0
	for _, n := range bins {
		top = max(top, n)
	}
	if top == 0 {
		return sp
	}
	var b strings.Builder
	for i, n := range bins {
		if n == 0 {
			continue
		}
		// At least a sliver, so an hour of one link still shows.
		h := max(1.5, 20*float64(n)/float64(top))
		fmt.Fprintf(&b, "M%d.5 20V%.1f", i, 20-h)
	}
	sp.Path = b.String()
	return sp
}

// Label says what the sparkline shows, for screen readers and as its
// tooltip.
func (sp sparkline) Label() string {
	if sp.Total == 0 {
		return "no new links in the last 7 days"
	}
	return fmt.Sprintf("%d new %s in the last 7 days, at most %d in one hour", sp.Total, plural(sp.Total, "link", "links"), sp.Peak)
}

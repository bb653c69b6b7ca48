package processor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// BenchmarkRemovalTracking is the price of removals: the processor's
// per-task path on real pages (at least 100 links) as a front page
// rotates, with removals off and on (K = 2). Each task's page shows its
// links minus the 3 oldest stories plus 3 new ones, so every check changes
// the link set: removals-on reads the page's live links against the check's
// keys in the check's statement, holds the 3 links that left as pending in
// the page's row and, once they have been absent for two checks, records
// them. This is the worst case: a page whose set does not change is sent as
// "unchanged" and only ages its pending absences. Compare the two ns/op.
func BenchmarkRemovalTracking(b *testing.B) {
	corpus := corpusLinks(b, 100, 30)
	if len(corpus) == 0 {
		b.Skip("no corpus page with 100 links")
	}
	for _, k := range []int{0, 2} {
		name := "removals-off"
		if k > 0 {
			name = "removals-on"
		}
		b.Run(name, func(b *testing.B) {
			bp := newBenchProcessorWith(b, "", len(corpus), processor.Config{RemovalChecks: k})
			at := time.Now().Add(-time.Hour)
			for i, links := range corpus {
				bp.handle(b, bp.pages[i], links, at)
			}
			round := 0
			b.ReportAllocs()
			for b.Loop() {
				i := round % len(corpus)
				at = at.Add(time.Millisecond)
				bp.handle(b, bp.pages[i], rotated(corpus[i], round/len(corpus)+1), at)
				round++
			}
		})
	}
}

// rotated is links as the page shows them after r rotations: the first
// 3*r links gone (at most half of them), 3*r new stories on top.
func rotated(links []watch.Link, r int) []watch.Link {
	gone := min(3*r, len(links)/2)
	out := make([]watch.Link, 0, len(links))
	for j := range 3 * r {
		out = append(out, watch.Link{URL: fmt.Sprintf("https://news.example/%d.html", j), Text: "Breaking story"})
	}
	return append(out, links[gone:]...)
}

package domwalk_test

import (
	"bytes"
	"fmt"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// allocated returns the bytes f allocated on the heap. Everything a parse
// builds is allocated by it, so this bounds the parse's peak heap from above.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTreeBudget: 10 MiB of "<p>" or "<br>" took ~400 MiB and ~300 MiB in one
// html.Parse; over MaxTreeBytes, the page is read from its tags instead and
// its links are still found.
func TestTreeBudget(t *testing.T) {
	const size = 10 << 20
	// The tag reader keeps only anchors, so a page of none allocates next to
	// nothing; html.Parse allocated 300-400 MiB.
	const limit = 4 << 20
	for _, tag := range []string{"<p>", "<br>", "<div>x</div>"} {
		t.Run(tag, func(t *testing.T) {
			page := []byte(`<base href="https://example.org/b/"><a href="first">First</a>` +
				strings.Repeat(tag, size/len(tag)) + `<a href="/last">Last</a>`)
			var links []watch.Link
			var stats domwalk.Stats
			heap := allocated(func() {
				links, stats = domwalk.ParseBytes(page, mustURL(t, pageURL), domwalk.Limits{})
			})
			t.Logf("allocated %d KiB", heap>>10)
			if heap > limit {
				t.Errorf("one parse of 10 MiB of %s allocated %d MiB, want at most %d MiB", tag, heap>>20, limit>>20)
			}
			want := []watch.Link{
				{URL: "https://example.org/b/first", Text: "First", Place: watch.Place{Position: 1, Landmark: watch.LandmarkNone}},
				{URL: "https://example.org/last", Text: "Last", Place: watch.Place{Position: 2, Landmark: watch.LandmarkNone}},
			}
			if !slices.Equal(links, want) || !stats.OverTreeBudget || !stats.Flattened {
				t.Errorf("links %v, stats %+v; want %v, OverTreeBudget and Flattened", links, stats, want)
			}
		})
	}
}

// TestFlatBudget: a page of nothing but anchors, over the budget, keeps at
// most MaxTreeBytes of them however many it has.
func TestFlatBudget(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 8<<20; i++ {
		fmt.Fprintf(&b, `<a href="/%d">%s</a>`, i%100, strings.Repeat("x", 200))
	}
	page := []byte(b.String())
	lim := domwalk.Limits{MaxTreeBytes: 4 << 20}
	var stats domwalk.Stats
	heap := allocated(func() { _, stats = domwalk.ParseBytes(page, mustURL(t, pageURL), lim) })
	if heap > 2*uint64(lim.MaxTreeBytes) {
		t.Errorf("allocated %d MiB for MaxTreeBytes %d MiB", heap>>20, lim.MaxTreeBytes>>20)
	}
	if !stats.OverTreeBudget || !stats.NodesCapped || !stats.Truncated() || stats.Links != 100 {
		t.Errorf("stats %+v; want OverTreeBudget, NodesCapped and the 100 links", stats)
	}
}

// TestTreeBudgetKeepsRealPages: the default budget leaves every page of the
// corpus (real homepages up to a few MiB) to the parser, links unchanged.
func TestTreeBudgetKeepsRealPages(t *testing.T) {
	page, _ := url.Parse("https://portal.example/")
	for _, p := range corpus.Pages(t) {
		if est := domwalk.TreeBytes(p.Body); est > domwalk.DefaultMaxTreeBytes {
			t.Errorf("%s (%d KiB): tree estimated at %d MiB, over the default budget", p.Name, len(p.Body)>>10, est>>20)
			continue
		}
		got, stats := domwalk.ParseBytes(p.Body, page, domwalk.Limits{})
		want, _ := domwalk.ParseBytes(p.Body, page, domwalk.Limits{MaxTreeBytes: 1 << 40})
		if stats.OverTreeBudget || !slices.Equal(got, want) {
			t.Errorf("%s: %d links (OverTreeBudget %v), want the parser's %d", p.Name, len(got), stats.OverTreeBudget, len(want))
		}
	}
}

// liveHeap returns the heap that the tree of src takes once built.
func liveHeap(src []byte) int64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	doc, _ := html.Parse(bytes.NewReader(src))
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(doc)
	return int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// TreeBytes is an estimate from above: the budget it is compared with must
// bound the real tree, for real pages and for pages built to be expensive.
func TestTreeBytesBoundsRealTrees(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what the heap holds")
	}
	pages := map[string][]byte{}
	for _, tag := range []string{"<p>", "<br>", "<td>x", "<option>x", `<a href=x>y</a>`,
		`<span class="a b c" id=x data-x="a long attribute value">t</span>`} {
		pages[tag] = []byte("<table><tr>" + strings.Repeat(tag, 1<<17))
	}
	for _, p := range corpus.Pages(t) {
		pages[p.Name] = p.Body
	}
	for name, src := range pages {
		if live, est := liveHeap(src), domwalk.TreeBytes(src); live > est {
			t.Errorf("%s: the tree took %d KiB, over its estimate of %d KiB", name, live>>10, est>>10)
		}
	}
}

func TestTreeBytes(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int64
	}{
		{"", 0},
		{"plain text", 2 * 10},
		{"a < b", 2 * 5},
		{"<p>", 384 + 2*3},
		{"<P><br/></p><!-- x --><", 2*384 + 2*23},
	} {
		if got := domwalk.TreeBytes([]byte(c.src)); got != c.want {
			t.Errorf("TreeBytes(%q) = %d, want %d", c.src, got, c.want)
		}
	}
}

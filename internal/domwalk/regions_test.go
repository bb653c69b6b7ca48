package domwalk_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/watch"
)

const regionsPage = `<html><body>
<nav class="main-nav"><a href="/politik">Politik</a><a href="/sport">Sport</a></nav>
<main>
  <section id="latest">
    <article><h2><a href="/news/1">First story</a></h2></article>
    <article class="sponsored"><h2><a href="/ad/1">Sponsored story</a></h2></article>
    <a class="more" href="/latest">All the latest</a>
  </section>
  <section id="opinion"><article><h2><a href="/opinion/1">A column</a></h2></article></section>
  <aside class="ad-rail"><a href="/ad/2">Buy now</a></aside>
</main>
<footer><a href="/imprint">Imprint</a><a href="/news/1">First story (footer)</a></footer>
</body></html>`

func regionURLs(t *testing.T, within, exclude []string) ([]string, domwalk.Stats) {
	t.Helper()
	regions, err := domwalk.CompileRegions(within, exclude)
	if err != nil {
		t.Fatalf("CompileRegions(%q, %q): %v", within, exclude, err)
	}
	links, stats, err := domwalk.ParseBytesIn([]byte(regionsPage), mustURL(t, pageURL), domwalk.Limits{}, regions)
	if err != nil {
		t.Fatalf("ParseBytesIn: %v", err)
	}
	var urls []string
	for _, l := range links {
		urls = append(urls, strings.TrimPrefix(l.URL, "https://example.com"))
	}
	slices.Sort(urls)
	return urls, stats
}

func TestRegions(t *testing.T) {
	tests := []struct {
		name            string
		within, exclude []string
		want            []string
		outside         int
	}{
		{"none: the whole page", nil, nil,
			[]string{"/ad/1", "/ad/2", "/imprint", "/latest", "/news/1", "/opinion/1", "/politik", "/sport"}, 0},
		{"within one section", []string{"#latest"}, nil,
			[]string{"/ad/1", "/latest", "/news/1"}, 6},
		{"within two selectors", []string{"#latest", "section#opinion"}, nil,
			[]string{"/ad/1", "/latest", "/news/1", "/opinion/1"}, 5},
		{"a group is one selector", []string{"#latest, #opinion"}, nil,
			[]string{"/ad/1", "/latest", "/news/1", "/opinion/1"}, 5},
		{"within and exclude", []string{"main"}, []string{".sponsored", "aside.ad-rail"},
			[]string{"/latest", "/news/1", "/opinion/1"}, 4},
		{"exclude only", nil, []string{"nav", "footer", "[class*=ad-]"},
			[]string{"/ad/1", "/latest", "/news/1", "/opinion/1"}, 0},
		{"the anchor itself may match", []string{"article a"}, []string{"a.more"},
			[]string{"/ad/1", "/news/1", "/opinion/1"}, 6},
		{"exclude wins over within", []string{"#latest"}, []string{"main"},
			nil, 4},
		{"no match: no links", []string{"#nothing"}, nil,
			nil, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stats := regionURLs(t, tt.within, tt.exclude)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("links %q, want %q", got, tt.want)
			}
			if stats.OutsideRegions != tt.outside {
				t.Fatalf("OutsideRegions %d, want %d", stats.OutsideRegions, tt.outside)
			}
		})
	}
	t.Run("the text of a link met in the footer too comes from inside", func(t *testing.T) {
		regions, err := domwalk.CompileRegions([]string{"main"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		links, _, err := domwalk.ParseBytesIn([]byte(regionsPage), mustURL(t, pageURL), domwalk.Limits{}, regions)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if strings.HasSuffix(l.URL, "/news/1") && (l.Text != "First story" || l.Summary != "") {
				t.Fatalf("link %v, want text %v and no summary", l, "First story")
			}
		}
	})
}

func TestCompileRegionsRefuses(t *testing.T) {
	many := make([]string, watch.MaxRegionSelectors+1)
	for i := range many {
		many[i] = "div"
	}
	tests := []struct {
		name            string
		within, exclude []string
		want            string
	}{
		{"invalid", []string{"div[class="}, nil, "not a valid CSS selector"},
		{"left-over bytes", []string{"div )"}, nil, "not a valid CSS selector"},
		{"pseudo-element", nil, []string{"p::before"}, "not a valid CSS selector"},
		{"empty", []string{" "}, nil, "is empty"},
		{"too long", []string{strings.Repeat("div ", watch.MaxSelectorBytes/4+1)}, nil, "bytes long"},
		{"too many", many[:6], many[6:], "at most 10"},
		{":has", []string{"article:has(h2)"}, nil, "uses :has"},
		{":haschild", []string{"div:haschild(a)"}, nil, "uses :has"},
		{":contains", nil, []string{`div:contains("Anzeige")`}, "uses :contains"},
		{":matches", nil, []string{`a:matches(^ad)`}, "uses :matches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := domwalk.CompileRegions(tt.within, tt.exclude)
			if err == nil || !strings.Contains(err.Error(), tt.want) || r != nil {
				t.Fatalf("CompileRegions(%q, %q) = %v, %v; want an error saying %q", tt.within, tt.exclude, r, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q is not one line", err)
			}
		})
	}
	if r, err := domwalk.CompileRegions(nil, nil); r != nil || err != nil {
		t.Fatalf("CompileRegions(nil, nil) = %v, %v; want nil, nil", r, err)
	}
}

// A page read from its tags has no tree to match selectors against: with
// regions the check fails with ErrRegionsNeedTree instead of reporting the
// whole page's links; without regions it is read as before.
func TestRegionsOnFlatPage(t *testing.T) {
	page := []byte(strings.Repeat("<div>", 600) + `<main><a href="/in">In</a></main><nav><a href="/out">Out</a></nav>`)
	regions, err := domwalk.CompileRegions([]string{"main"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	links, stats, err := domwalk.ParseBytesIn(page, mustURL(t, pageURL), domwalk.Limits{}, regions)
	if !errors.Is(err, domwalk.ErrRegionsNeedTree) || links != nil || !stats.Flattened {
		t.Fatalf("ParseBytesIn with regions = %v, %+v, %v; want no links, Flattened and ErrRegionsNeedTree", links, stats, err)
	}
	links, _, err = domwalk.ParseBytesIn(page, mustURL(t, pageURL), domwalk.Limits{}, nil)
	if err != nil || len(links) != 2 {
		t.Fatalf("ParseBytesIn without regions = %v, %v; want both links", links, err)
	}
	over := []byte(`<main><a href="/in">In</a></main>`)
	_, stats, err = domwalk.ParseBytesIn(over, mustURL(t, pageURL), domwalk.Limits{MaxTreeBytes: 1}, regions)
	if !errors.Is(err, domwalk.ErrRegionsNeedTree) || !stats.OverTreeBudget {
		t.Fatalf("page over the tree budget: %+v, %v; want OverTreeBudget and ErrRegionsNeedTree", stats, err)
	}
}

// WithinMatched counts the outermost Within matches outside Exclude
// matches, so 0 says the page's regions matched nothing.
func TestWithinMatched(t *testing.T) {
	for _, tc := range []struct {
		within, exclude []string
		want            int
	}{
		{[]string{"#latest"}, nil, 1},
		{[]string{"section"}, nil, 2},
		{[]string{"main", "section"}, nil, 1}, // sections inside main are no new region
		{[]string{"#gone"}, nil, 0},
		{[]string{"#latest"}, []string{"main"}, 0}, // inside an Exclude match
		{nil, []string{"footer"}, 0},
	} {
		_, stats := regionURLs(t, tc.within, tc.exclude)
		if stats.WithinMatched != tc.want {
			t.Errorf("within %q exclude %q: WithinMatched = %d, want %d", tc.within, tc.exclude, stats.WithinMatched, tc.want)
		}
	}
	r, _ := domwalk.CompileRegions([]string{"#x"}, nil)
	e, _ := domwalk.CompileRegions(nil, []string{"#x"})
	if !r.HasWithin() || e.HasWithin() || (*domwalk.Regions)(nil).HasWithin() {
		t.Error("HasWithin: want true only for regions with Within selectors")
	}
}

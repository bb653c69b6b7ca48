package crawler_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/watch"
)

const optionsPage = `<html><body>
<nav><a href="/politik">Politik</a><a href="/sport">Sport</a></nav>
<main id="latest">
  <article><a href="/news/ukraine-talks"><img alt=""></a><h2><a href="/news/ukraine-talks">Ukraine: talks resume</a></h2>
    <p><a href="/news/ukraine-talks">Delegations met in Istanbul on Tuesday.</a></p></article>
  <article><h2><a href="/news/budget">Budget passes</a></h2></article>
  <article class="sponsored"><h2><a href="/news/offer">Anzeige: Ein Angebot</a></h2></article>
  <article><h2><a href="/politik/wahl">Wahl: Ergebnisse</a></h2></article>
</main>
<footer><a href="/imprint">Imprint</a></footer>
</body></html>`

func checkWith(t *testing.T, page string, opts *watch.LinkOptions) watch.Task {
	t.Helper()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(page))
	})
	return newService(t, &recorder{}).Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/", Options: opts})
}

func paths(task watch.Task) []string {
	var out []string
	for _, l := range task.Context {
		_, p, _ := strings.Cut(strings.TrimPrefix(l.URL, "http://"), "/")
		out = append(out, "/"+p)
	}
	slices.Sort(out)
	return out
}

func TestCheckAppliesRegionsAndKeywordRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts *watch.LinkOptions
		want []string
	}{
		{"no options", nil,
			[]string{"/imprint", "/news/budget", "/news/offer", "/news/ukraine-talks", "/politik", "/politik/wahl", "/sport"}},
		{"within main, sponsored excluded", &watch.LinkOptions{Within: []string{"main#latest"}, Exclude: []string{".sponsored"}},
			[]string{"/news/budget", "/news/ukraine-talks", "/politik/wahl"}},
		{"include text (headline or teaser) or URL", &watch.LinkOptions{IncludeText: []string{`istanbul`}, IncludeURL: []string{`/politik/`}},
			[]string{"/news/ukraine-talks", "/politik/wahl"}},
		{"exclude text and URL", &watch.LinkOptions{ExcludeText: []string{`^anzeige\b`}, ExcludeURL: []string{`/(politik|sport|imprint)$`}},
			[]string{"/news/budget", "/news/ukraine-talks", "/politik/wahl"}},
		{"regions and rules together", &watch.LinkOptions{Within: []string{"main"}, IncludeText: []string{`ukraine`, `budget`}},
			[]string{"/news/budget", "/news/ukraine-talks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := checkWith(t, optionsPage, tt.opts)
			if task.Failed() {
				t.Fatalf("check failed: %s", task.Error)
			}
			if got := paths(task); !slices.Equal(got, tt.want) {
				t.Fatalf("links %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("headline and summary", func(t *testing.T) {
		task := checkWith(t, optionsPage, &watch.LinkOptions{IncludeURL: []string{`ukraine`}})
		if len(task.Context) != 1 || task.Context[0].Text != "Ukraine: talks resume" || task.Context[0].Summary != "Delegations met in Istanbul on Tuesday." {
			t.Fatalf("links %+v, want the headline with the teaser as summary", task.Context)
		}
	})
}

func TestCheckFailsWhenRegionsCannotBeApplied(t *testing.T) {
	t.Parallel()
	// A row stored by hand with a selector registration refuses: skipping
	// it would widen the page, so the check fails, saying why.
	task := checkWith(t, optionsPage, &watch.LinkOptions{Within: []string{"main["}})
	if !task.Failed() || !strings.Contains(task.Error, "within selector") || !strings.Contains(task.Error, "not checked") || len(task.Context) != 0 {
		t.Fatalf("task = %+v, want a failed check naming the selector", task)
	}
	// A page that nests too deep for a tree is read from its tags, where no
	// selector applies.
	deep := strings.Repeat("<div>", 600) + optionsPage
	task = checkWith(t, deep, &watch.LinkOptions{Within: []string{"main"}})
	if !task.Failed() || !strings.Contains(task.Error, domwalk.ErrRegionsNeedTree.Error()) || len(task.Context) != 0 {
		t.Fatalf("task = %+v, want a failed check with ErrRegionsNeedTree", task)
	}
	// Without regions the same page is checked.
	if task = checkWith(t, deep, &watch.LinkOptions{ExcludeURL: []string{`imprint`}}); task.Failed() || len(task.Context) != 6 {
		t.Fatalf("task = %+v, want the deep page's 6 links", task)
	}
}

// TestCheckRanksKeptLinks holds that positions count the links the page's
// options keep, in document order, from 1, and that a kept link keeps its
// landmark and heading.
func TestCheckRanksKeptLinks(t *testing.T) {
	t.Parallel()
	places := func(task watch.Task) map[string]watch.Place {
		out := map[string]watch.Place{}
		for _, l := range task.Context {
			_, p, _ := strings.Cut(strings.TrimPrefix(l.URL, "http://"), "/")
			out["/"+p] = l.Place
		}
		return out
	}
	main := watch.LandmarkMain
	tests := []struct {
		name string
		opts *watch.LinkOptions
		want map[string]watch.Place
	}{
		{"no options: every link", nil, map[string]watch.Place{
			"/politik": {Position: 1, Landmark: watch.LandmarkNav}, "/sport": {Position: 2, Landmark: watch.LandmarkNav},
			"/news/ukraine-talks": {Position: 3, Heading: 2, Landmark: main}, "/news/budget": {Position: 4, Heading: 2, Landmark: main},
			"/news/offer": {Position: 5, Heading: 2, Landmark: main}, "/politik/wahl": {Position: 6, Heading: 2, Landmark: main},
			"/imprint": {Position: 7, Landmark: watch.LandmarkFooter}}},
		{"ignore patterns and keyword rules", &watch.LinkOptions{Ignore: []string{`/(politik|sport)$`}, ExcludeText: []string{`^anzeige\b`}},
			map[string]watch.Place{
				"/news/ukraine-talks": {Position: 1, Heading: 2, Landmark: main}, "/news/budget": {Position: 2, Heading: 2, Landmark: main},
				"/politik/wahl": {Position: 3, Heading: 2, Landmark: main}, "/imprint": {Position: 4, Landmark: watch.LandmarkFooter}}},
		{"regions and rules", &watch.LinkOptions{Within: []string{"main"}, IncludeURL: []string{`wahl|budget`}},
			map[string]watch.Place{"/news/budget": {Position: 1, Heading: 2, Landmark: main}, "/politik/wahl": {Position: 2, Heading: 2, Landmark: main}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := checkWith(t, optionsPage, tt.opts)
			if task.Failed() {
				t.Fatalf("check failed: %s", task.Error)
			}
			if got := places(task); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("places\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

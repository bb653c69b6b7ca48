package domwalk_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// placesOf parses page, served from http://example.com/, with regions
// and returns each link's place by its path.
func placesOf(t *testing.T, page string, regions *domwalk.Regions) map[string]watch.Place {
	t.Helper()
	base, _ := url.Parse("http://example.com/")
	links, _, err := domwalk.ParseBytesIn([]byte(page), base, domwalk.Limits{}, regions)
	if err != nil {
		t.Fatal(err)
	}
	places := make(map[string]watch.Place, len(links))
	for _, l := range links {
		if err := l.Place.Validate(); err != nil || !l.Known() {
			t.Errorf("link %s: place %+v is not a known valid place (%v)", l.URL, l.Place, err)
		}
		places[strings.TrimPrefix(l.URL, "http://example.com")] = l.Place
	}
	return places
}

// place is a short way to write a known place.
func place(position, heading int, landmark watch.Landmark) watch.Place {
	return watch.Place{Position: position, Heading: heading, Landmark: landmark}
}

// TestPlace holds positions (document order, whatever the walk's order),
// landmarks by element and by role, the rules of nested headers and
// footers, and heading levels.
func TestPlace(t *testing.T) {
	tests := []struct {
		name string
		page string
		want map[string]watch.Place
	}{
		{"document order, not breadth-first",
			// Breadth-first meets /shallow first: it is one level up.
			`<div><div><a href="/deep">Deep</a></div></div><a href="/shallow">Shallow</a>`,
			map[string]watch.Place{"/deep": place(1, 0, watch.LandmarkNone), "/shallow": place(2, 0, watch.LandmarkNone)}},
		{"each landmark by its element",
			`<header><a href="/h">H</a></header><nav><a href="/n">N</a></nav><main><a href="/m">M</a></main>
			<aside><a href="/a">A</a></aside><footer><a href="/f">F</a></footer><div><a href="/x">X</a></div>`,
			map[string]watch.Place{"/h": place(1, 0, watch.LandmarkHeader), "/n": place(2, 0, watch.LandmarkNav),
				"/m": place(3, 0, watch.LandmarkMain), "/a": place(4, 0, watch.LandmarkAside),
				"/f": place(5, 0, watch.LandmarkFooter), "/x": place(6, 0, watch.LandmarkNone)}},
		{"each landmark by its role",
			`<div role="banner"><a href="/h">H</a></div><div role="navigation"><a href="/n">N</a></div>
			<div role="main"><a href="/m">M</a></div><div role="complementary"><a href="/a">A</a></div>
			<div role="contentinfo"><a href="/f">F</a></div>`,
			map[string]watch.Place{"/h": place(1, 0, watch.LandmarkHeader), "/n": place(2, 0, watch.LandmarkNav),
				"/m": place(3, 0, watch.LandmarkMain), "/a": place(4, 0, watch.LandmarkAside), "/f": place(5, 0, watch.LandmarkFooter)}},
		{"a role decides over the element, none takes it away",
			`<nav role="main"><a href="/m">M</a></nav><nav role="presentation"><a href="/p">P</a></nav>
			<div role="button navigation"><a href="/b">B</a></div><main><nav role="none"><a href="/i">I</a></nav></main>`,
			map[string]watch.Place{"/m": place(1, 0, watch.LandmarkMain), "/p": place(2, 0, watch.LandmarkNone),
				"/b": place(3, 0, watch.LandmarkNone), "/i": place(4, 0, watch.LandmarkMain)}},
		{"the nearest landmark holds a link",
			`<header><nav><a href="/n">N</a></nav><a href="/h">H</a></header><main><aside><a href="/a">A</a></aside></main>`,
			map[string]watch.Place{"/n": place(1, 0, watch.LandmarkNav), "/h": place(2, 0, watch.LandmarkHeader),
				"/a": place(3, 0, watch.LandmarkAside)}},
		{"a header or footer of a section is not the page's",
			`<main><article><header><h2><a href="/story">Story</a></h2></header><footer><a href="/comments">Comments</a></footer></article></main>
			<section><header><a href="/s">S</a></header></section><div><footer><a href="/f">F</a></footer></div>
			<article><div role="banner"><a href="/b">B</a></div></article>`,
			map[string]watch.Place{"/story": place(1, 2, watch.LandmarkMain), "/comments": place(2, 0, watch.LandmarkMain),
				"/s": place(3, 0, watch.LandmarkNone), "/f": place(4, 0, watch.LandmarkFooter), "/b": place(5, 0, watch.LandmarkHeader)}},
		{"first anchor in nav, later one in main: the first places the link",
			`<nav><a href="/x">Menu</a></nav><main><h1><a href="/x">Headline</a></h1><a href="/y">Y</a></main>`,
			map[string]watch.Place{"/x": place(1, 1, watch.LandmarkNav), "/y": place(2, 0, watch.LandmarkMain)}},
		{"a link placed by its earliest anchor though the walk meets a later one first",
			`<main><div><div><a href="/x">Early, deep</a></div></div><a href="/y">Y</a></main><a href="/x">Late, shallow</a>`,
			map[string]watch.Place{"/x": place(1, 0, watch.LandmarkMain), "/y": place(2, 0, watch.LandmarkMain)}},
		{"heading levels",
			`<h1><a href="/1">1</a></h1><h3><span><a href="/3">3</a></span></h3><h6><a href="/6">6</a></h6>
			<div role="heading"><a href="/r">R</a></div><div role="heading" aria-level="4"><a href="/r4">R4</a></div>
			<h2 aria-level="5"><a href="/a5">A5</a></h2><div role="heading" aria-level="9"><a href="/deepest">D</a></div>
			<a href="/card"><h4>Card</h4>teaser</a><a href="/own">Own</a><a href="/own"><h2>Later headline</h2></a>`,
			map[string]watch.Place{"/1": place(1, 1, watch.LandmarkNone), "/3": place(2, 3, watch.LandmarkNone),
				"/6": place(3, 6, watch.LandmarkNone), "/r": place(4, 2, watch.LandmarkNone), "/r4": place(5, 4, watch.LandmarkNone),
				"/a5": place(6, 5, watch.LandmarkNone), "/deepest": place(7, 6, watch.LandmarkNone),
				"/card": place(8, 4, watch.LandmarkNone), "/own": place(9, 2, watch.LandmarkNone)}},
		{"template content is not walked",
			`<template><a href="/t">T</a></template><a href="/x">X</a>`,
			map[string]watch.Place{"/x": place(1, 0, watch.LandmarkNone)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := placesOf(t, tt.page, nil)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("places\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

// TestPlaceCountsRegionLinksOnly holds that positions count the links a
// page's regions admit, and that a region is not a landmark.
func TestPlaceCountsRegionLinksOnly(t *testing.T) {
	regions, err := domwalk.CompileRegions([]string{"#news"}, []string{".ad"})
	if err != nil {
		t.Fatal(err)
	}
	page := `<nav><a href="/menu">Menu</a></nav><div id="news"><a href="/1">One</a><div class="ad"><a href="/ad">Ad</a></div>
		<main><a href="/2">Two</a></main></div><footer><a href="/f">F</a></footer>`
	got := placesOf(t, page, regions)
	want := map[string]watch.Place{"/1": place(1, 0, watch.LandmarkNone), "/2": place(2, 0, watch.LandmarkMain)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("places\n got %v\nwant %v", got, want)
	}
}

// TestPlaceFlat holds places on a page read from its tags (nesting past
// the parser's limit): document order, landmark elements and heading
// levels as in a tree; roles are not seen there.
func TestPlaceFlat(t *testing.T) {
	deep := strings.Repeat("<div>", 600)
	page := `<header><a href="/h">H</a><nav><a href="/n">N</a></nav></header>` + deep +
		`<main><article><header><h3><a href="/story">Story</a></h3></header></article><a href="/m">M</a></main>
		<div role="navigation"><a href="/r">R</a></div><footer><a href="/f">F</a></footer>` + strings.Repeat("</div>", 600)
	base, _ := url.Parse("http://example.com/")
	links, stats := domwalk.ParseBytes([]byte(page), base, domwalk.Limits{})
	if !stats.Flattened {
		t.Fatalf("page not read from its tags: %+v", stats)
	}
	got := map[string]watch.Place{}
	for _, l := range links {
		got[strings.TrimPrefix(l.URL, "http://example.com")] = l.Place
	}
	want := map[string]watch.Place{"/h": place(1, 0, watch.LandmarkHeader), "/n": place(2, 0, watch.LandmarkNav),
		"/story": place(3, 3, watch.LandmarkMain), "/m": place(4, 0, watch.LandmarkMain), "/r": place(5, 0, watch.LandmarkNone),
		"/f": place(6, 0, watch.LandmarkFooter)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("places\n got %v\nwant %v", got, want)
	}
}

// TestPlaceBeyondBudget holds that links the place pass does not reach,
// its visits spent, still get distinct positions after the others.
func TestPlaceBeyondBudget(t *testing.T) {
	base, _ := url.Parse("http://example.com/")
	// The walk meets /3 before the paragraph's children; the pass in
	// document order spends its visits in them.
	page := `<a href="/1">1</a><a href="/2">2</a><div><p>` + strings.Repeat("<i></i>", 50) + `</p></div><a href="/3">3</a>`
	links, _ := domwalk.ParseBytes([]byte(page), base, domwalk.Limits{MaxNodes: 12})
	if len(links) != 3 {
		t.Fatalf("links %v, want 3", links)
	}
	seen := map[int]bool{}
	for _, l := range links {
		if !l.Known() || seen[l.Position] || l.Position > len(links) {
			t.Errorf("link %s: position %d (links %d, seen %v)", l.URL, l.Position, len(links), seen)
		}
		seen[l.Position] = true
	}
}

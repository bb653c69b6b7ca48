package domwalk_test

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

const pageURL = "https://example.com/dir/page.html"

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func parse(t testing.TB, page string, lim domwalk.Limits) ([]watch.Link, domwalk.Stats) {
	t.Helper()
	links, stats, err := domwalk.Parse(strings.NewReader(page), mustURL(t, pageURL), lim)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	checkLinks(t, links, lim)
	return unplaced(links), stats
}

// unplaced returns links without their places, which most tests leave to
// place_test.go.
func unplaced(links []watch.Link) []watch.Link {
	for i := range links {
		links[i].Place = watch.Place{}
	}
	return links
}

// checkLinks holds for every result: bounded, absolute http(s) URLs without
// fragment, each once, texts of valid UTF-8 without control characters or
// stray white space, no longer than MaxTextRunes, each placed at a
// distinct position from 1 to the number of links.
func checkLinks(t testing.TB, links []watch.Link, lim domwalk.Limits) {
	t.Helper()
	lim = lim.WithDefaults()
	if len(links) > lim.MaxLinks {
		t.Fatalf("%d links, more than MaxLinks %d", len(links), lim.MaxLinks)
	}
	seen := make(map[string]bool, len(links))
	positions := make(map[int]bool, len(links))
	for _, l := range links {
		if err := l.Place.Validate(); err != nil || !l.Known() || l.Position > len(links) || positions[l.Position] {
			t.Fatalf("link %q: place %+v is not a known valid position from 1 to %d, once (%v)", l.URL, l.Place, len(links), err)
		}
		positions[l.Position] = true
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Contains(l.URL, "#") {
			t.Fatalf("link URL %q is not an absolute http(s) URL without fragment (%v)", l.URL, err)
		}
		if seen[l.URL] {
			t.Fatalf("link URL %q appears twice", l.URL)
		}
		seen[l.URL] = true
		if !utf8.ValidString(l.Text) {
			t.Fatalf("link text %q is not valid UTF-8", l.Text)
		}
		if n := utf8.RuneCountInString(l.Text); n > lim.MaxTextRunes {
			t.Fatalf("link text has %d runes, more than MaxTextRunes %d", n, lim.MaxTextRunes)
		}
		if strings.TrimSpace(l.Text) != l.Text || strings.Contains(l.Text, "  ") {
			t.Fatalf("link text %q has stray white space", l.Text)
		}
		for _, r := range l.Text {
			if unicode.IsControl(r) || r != ' ' && unicode.IsSpace(r) {
				t.Fatalf("link text %q has %U", l.Text, r)
			}
		}
	}
}

func TestLinks(t *testing.T) {
	type L struct{ URL, Text string }
	tests := []struct {
		name string
		page string
		want []L
	}{
		{
			name: "relative and absolute",
			page: `<a href="story.html">Story</a><a href="/top">Top</a><a href="https://other.example/x">Other</a>`,
			want: []L{{"https://example.com/dir/story.html", "Story"}, {"https://example.com/top", "Top"}, {"https://other.example/x", "Other"}},
		},
		{
			name: "breadth first: shallow before deep",
			page: `<div><div><div><a href="/deep">Deep</a></div></div></div><p><a href="/mid">Mid</a></p><a href="/shallow">Shallow</a>`,
			want: []L{{"https://example.com/shallow", "Shallow"}, {"https://example.com/mid", "Mid"}, {"https://example.com/deep", "Deep"}},
		},
		{
			name: "siblings in document order",
			page: `<ul><li><a href="/1">1</a></li><li><a href="/2">2</a></li></ul><ul><li><a href="/3">3</a></li></ul>`,
			want: []L{{"https://example.com/1", "1"}, {"https://example.com/2", "2"}, {"https://example.com/3", "3"}},
		},
		{
			name: "base href relative to page",
			page: `<head><base href="/other/"></head><body><a href="x">X</a><a href="/abs">Abs</a></body>`,
			want: []L{{"https://example.com/other/x", "X"}, {"https://example.com/abs", "Abs"}},
		},
		{
			name: "base href absolute",
			page: `<head><base href="HTTP://CDN.Example.org/a/b"></head><a href="c">C</a><a href="//third.example/">T</a>`,
			want: []L{{"http://cdn.example.org/a/c", "C"}, {"http://third.example/", "T"}},
		},
		{
			name: "first base href wins",
			page: `<head><base target="_blank"><base href="/first/"><base href="/second/"></head><a href="x">X</a>`,
			want: []L{{"https://example.com/first/x", "X"}},
		},
		{
			name: "base href in body honoured",
			page: `<body><a href="x">X</a><div><base href="https://b.example/dir/"></div></body>`,
			want: []L{{"https://b.example/dir/x", "X"}},
		},
		{
			name: "first base in tree order, not breadth-first order",
			page: `<body><div><div><base href="/deep-first/"></div></div><base href="/shallow-second/"><a href="x">X</a></body>`,
			want: []L{{"https://example.com/deep-first/x", "X"}},
		},
		{
			name: "non-http base ignored",
			page: `<head><base href="javascript:alert(1)"></head><a href="x">X</a>`,
			want: []L{{"https://example.com/dir/x", "X"}},
		},
		{
			name: "fragment-only base ignored",
			page: `<head><base href="#top"></head><a href="x">X</a>`,
			want: []L{{"https://example.com/dir/x", "X"}},
		},
		{
			name: "base inside template ignored",
			page: `<head><template><base href="/tpl/"></template></head><a href="x">X</a>`,
			want: []L{{"https://example.com/dir/x", "X"}},
		},
		{
			name: "area and svg anchors",
			page: `<map><area href="/region" alt="Region"></map>` +
				`<svg><a href="/svg2"><text>SVG 2</text></a><a xlink:href="/svg1"><text>SVG 1</text></a></svg>`,
			want: []L{{"https://example.com/region", "Region"}, {"https://example.com/svg2", "SVG 2"}, {"https://example.com/svg1", "SVG 1"}},
		},
		{
			name: "dropped hrefs",
			page: `<a href="javascript:void(0)">JS</a><a href="mailto:a@example.com">Mail</a><a href="#top">Top</a>` +
				`<a href="">Self</a><a href="tel:+15550100">Tel</a><a href="http://[::1">Bad</a><a>No href</a><a href="/kept">Kept</a>`,
			want: []L{{"https://example.com/kept", "Kept"}},
		},
		{
			name: "nofollow kept",
			page: `<a rel="nofollow" href="/nf">NF</a>`,
			want: []L{{"https://example.com/nf", "NF"}},
		},
		{
			name: "template content skipped",
			page: `<template><a href="/tpl">T</a></template><a href="/real">R</a>`,
			want: []L{{"https://example.com/real", "R"}},
		},
		{
			name: "noscript links kept",
			page: `<noscript><a href="/nojs">No JS</a></noscript>`,
			want: []L{{"https://example.com/nojs", "No JS"}},
		},
		{
			name: "normalised URLs deduplicated",
			page: `<a href="/x?b=1&a=2">One</a><a href="/x?a=2&b=1&utm_source=z#c">Two</a><a href="HTTPS://EXAMPLE.COM:443/x?a=2&b=1">Six</a>`,
			want: []L{{"https://example.com/x?a=2&b=1", "One"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			links, _ := parse(t, tt.page, domwalk.Limits{})
			var got []L
			for _, l := range links {
				got = append(got, L{l.URL, l.Text})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("links\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name string
		a    string // the anchor's markup, with href="/x"
		want string
	}{
		{"plain", `<a href="/x">Hello</a>`, "Hello"},
		{"white space collapsed and trimmed", "<a href=\"/x\">  Hello \n\t  world  </a>", "Hello world"},
		{"unicode spaces collapsed", "<a href=\"/x\">Hello&nbsp;&nbsp;world\u3000\u2003!</a>", "Hello world !"},
		{"nested inline elements", `<a href="/x"><b>Bold</b> and <i>italic</i></a>`, "Bold and italic"},
		{"inline boundary joins", `<a href="/x"><span>Foo</span><span>Bar</span></a>`, "FooBar"},
		{"block boundary separates", `<a href="/x"><div>Title</div><div>Summary</div></a>`, "Title Summary"},
		{"br separates", `<a href="/x">Line<br>two</a>`, "Line two"},
		{"headline card: the heading's text", `<a href="/x"><h3> Big news </h3><p>Details <em>here</em>.</p></a>`, "Big news"},
		{"script and style skipped", `<a href="/x">Go<script>var x = 1;</script><style>.a{}</style>!</a>`, "Go!"},
		{"template and noscript skipped", `<a href="/x">A<template>tpl</template><noscript>ns</noscript>B</a>`, "AB"},
		{"comment skipped", `<a href="/x">A<!-- c -->B</a>`, "AB"},
		{"entities decoded", `<a href="/x">Tom &amp; Jerry &lt;3</a>`, "Tom & Jerry <3"},
		{"title when no text", `<a href="/x" title=" The  title "><img src="i.png"></a>`, "The title"},
		{"img alt when no title", `<a href="/x"><img alt=""><img alt="  "><span><img alt="Logo"></span><img alt="Second"></a>`, "Logo"},
		{"title beats alt", `<a href="/x" title="Title"><img alt="Alt"></a>`, "Title"},
		{"blank title falls through", `<a href="/x" title="  "><img alt="Alt"></a>`, "Alt"},
		{"aria-label last", `<a href="/x" aria-label="Close"></a>`, "Close"},
		{"alt beats aria-label", `<a href="/x" aria-label="Aria"><img alt="Alt"></a>`, "Alt"},
		{"own text beats everything", `<a href="/x" title="T" aria-label="L"><img alt="A">Text</a>`, "Text"},
		{"fallback text cleaned", "<a href=\"/x\" title=\"\tTwo\n  lines\x01\"></a>", "Two lines"},
		{"no text at all", `<a href="/x"><img src="i.png"></a>`, ""},
		{"area alt", `<map><area href="/x" alt="Region"></map>`, "Region"},
		{"area title beats alt", `<map><area href="/x" alt="Region" title="Title"></map>`, "Title"},
		{"svg icon title", `<a href="/x"><svg><title>Share</title><path d="M0"/></svg></a>`, "Share"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := parse(t, tt.a, domwalk.Limits{})
			want := []watch.Link{{URL: "https://example.com/x", Text: tt.want}}
			for i := range got {
				got[i].Summary = "" // TestHeadline covers summaries
			}
			if !slices.Equal(got, want) {
				t.Errorf("links\n got %v\nwant %v", got, want)
			}
		})
	}
}

// element builds an element node with the given attributes (key, value
// pairs) and children, bypassing the parser's repairs.
func element(a atom.Atom, attrs []string, children ...*html.Node) *html.Node {
	n := &html.Node{Type: html.ElementNode, DataAtom: a, Data: a.String()}
	for i := 0; i+1 < len(attrs); i += 2 {
		n.Attr = append(n.Attr, html.Attribute{Key: attrs[i], Val: attrs[i+1]})
	}
	for _, c := range children {
		n.AppendChild(c)
	}
	return n
}

func text(s string) *html.Node { return &html.Node{Type: html.TextNode, Data: s} }

func document(children ...*html.Node) *html.Node {
	doc := &html.Node{Type: html.DocumentNode}
	for _, c := range children {
		doc.AppendChild(c)
	}
	return doc
}

// TestTextCleaning feeds text the parser would never produce (controls,
// invalid UTF-8) straight into the DOM.
func TestTextCleaning(t *testing.T) {
	tests := []struct {
		name  string
		texts []string
		title string
		want  string
	}{
		{"C0 controls removed", []string{"A\x00B\x01C\x1bD\x7fE"}, "", "ABCDE"},
		{"C1 controls removed, NEL is space", []string{"A\u0080B\u0085C\u009fD"}, "", "AB CD"},
		{"format characters kept", []string{"a\u200bb\u200dc"}, "", "a\u200bb\u200dc"},
		{"invalid UTF-8 replaced", []string{"a\xffb\xc3"}, "", "a\uFFFDb\uFFFD"},
		{"controls do not split a space run", []string{"a \x01 \x02 b"}, "", "a b"},
		{"text nodes joined", []string{"Hel", "lo ", " world"}, "", "Hello world"},
		{"only controls falls back", []string{"\x01\x02"}, "Title", "Title"},
		{"title with controls", nil, "\x01 T\x00i\u0085tle \x7f", "Ti tle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kids []*html.Node
			for _, s := range tt.texts {
				kids = append(kids, text(s))
			}
			a := element(atom.A, []string{"href", "/x", "title", tt.title}, kids...)
			got, _ := domwalk.Links(document(a), mustURL(t, pageURL), domwalk.Limits{})
			checkLinks(t, got, domwalk.Limits{})
			if len(got) != 1 || got[0].Text != tt.want {
				t.Fatalf("links %v, want one with text %v", got, tt.want)
			}
		})
	}
}

func TestTextCut(t *testing.T) {
	tests := []struct {
		name string
		max  int
		text string
		want string
	}{
		{"fits exactly", 5, "abcde", "abcde"},
		{"one over", 5, "abcdef", "abcd…"},
		{"multibyte cut on rune boundary", 5, "日本語のテキストです", "日本語の…"},
		{"emoji cut on rune boundary", 3, "😀😁😂🤣", "😀😁…"},
		{"space before the cut dropped", 5, "abc defgh", "abc…"},
		{"collapsed spaces count once", 5, "a    b    c", "a b c"},
		{"max one", 1, "abc", "…"},
		{"max one fits", 1, "a", "a"},
		{"huge text node", 10, strings.Repeat("é", 1<<20), "ééééééééé…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := domwalk.Limits{MaxTextRunes: tt.max}
			a := element(atom.A, []string{"href", "/x"}, text(tt.text))
			got, _ := domwalk.Links(document(a), mustURL(t, pageURL), lim)
			checkLinks(t, got, lim)
			if len(got) != 1 || got[0].Text != tt.want {
				t.Fatalf("links %v, want one with text %v", got, tt.want)
			}
		})
	}
	t.Run("default limit", func(t *testing.T) {
		got, _ := parse(t, `<a href="/x">`+strings.Repeat("Слово ", 200)+`</a>`, domwalk.Limits{})
		if n := utf8.RuneCountInString(got[0].Text); n != domwalk.DefaultMaxTextRunes || !strings.HasSuffix(got[0].Text, "…") {
			t.Fatalf("text of %d runes %q…, want %d runes ending in …", n, got[0].Text[:20], domwalk.DefaultMaxTextRunes)
		}
	})
}

func TestBestText(t *testing.T) {
	tests := []struct {
		name string
		page string
		want string
	}{
		{"own text beats earlier alt", `<a href="/x"><img alt="A picture"></a><a href="/x">Story</a>`, "Story"},
		{"own text beats later title", `<a href="/x">Story</a><a href="/x" title="A much longer title"></a>`, "Story"},
		{"first own text wins", `<a href="/x">Short</a><a href="/x">A longer text</a>`, "Short"},
		{"first wins a tie", `<a href="/x">Same</a><a href="/x">Sam2</a>`, "Same"},
		{"longer fallback wins", `<a href="/x" title="T"></a><a href="/x" aria-label="Longer"></a>`, "Longer"},
		{"any text beats empty", `<a href="/x"></a><a href="/x" title="T"></a>`, "T"},
		{"empty does not replace", `<a href="/x">Text</a><a href="/x"></a>`, "Text"},
		{"rune length, not bytes", `<a href="/x" title="ééé"></a><a href="/x" title="abcd"></a>`, "abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stats := parse(t, tt.page, domwalk.Limits{})
			if len(got) != 1 || got[0].Text != tt.want {
				t.Fatalf("links %v, want one with text %v", got, tt.want)
			}
			if stats.Duplicates != 1 || stats.Links != 1 || stats.Anchors != 2 {
				t.Fatalf("stats %+v, want 2 anchors, 1 link, 1 duplicate", stats)
			}
		})
	}
	t.Run("position of first appearance kept", func(t *testing.T) {
		got, _ := parse(t, `<a href="/a"></a><a href="/b">B</a><a href="/a">A</a>`, domwalk.Limits{})
		want := []watch.Link{{URL: "https://example.com/a", Text: "A"}, {URL: "https://example.com/b", Text: "B"}}
		for i := range got {
			got[i].Summary = ""
		}
		if !slices.Equal(got, want) {
			t.Fatalf("links %v, want %v", got, want)
		}
	})
}

func TestStats(t *testing.T) {
	page := `<head><base href="/b/"></head><body>` +
		`<a href="javascript:void(0)">JS</a><a href="mailto:a@example.com">M</a><a href="#top">T</a>` +
		`<a href=" ">E</a><a href="http://exa mple.com/">I</a><a href="/` + strings.Repeat("x", urlnorm.MaxURLLength) + `">L</a>` +
		`<a href="/1">1</a><a href="/1#again">1</a><a name="anchor">no href</a></body>`
	_, stats := parse(t, page, domwalk.Limits{})
	want := domwalk.Dropped{Empty: 1, FragmentOnly: 1, NotHTTP: 2, Invalid: 1, TooLong: 1}
	if stats.Dropped != want || stats.Dropped.Total() != 6 {
		t.Errorf("Dropped = %+v, want %+v", stats.Dropped, want)
	}
	if stats.Anchors != 8 || stats.Links != 1 || stats.Duplicates != 1 {
		t.Errorf("Anchors %d, Links %d, Duplicates %d; want 8, 1, 1", stats.Anchors, stats.Links, stats.Duplicates)
	}
	if stats.Base != "https://example.com/b/" {
		t.Errorf("Base = %q", stats.Base)
	}
	if stats.Truncated() {
		t.Errorf("Truncated() on a small page: %+v", stats)
	}
	if stats.Nodes == 0 || stats.TextNodes == 0 {
		t.Errorf("no nodes counted: %+v", stats)
	}
}

func TestNoPageURL(t *testing.T) {
	doc, err := html.Parse(strings.NewReader(`<a href="/rel">R</a><a href="https://example.org/abs">A</a>`))
	if err != nil {
		t.Fatal(err)
	}
	got, stats := domwalk.Links(doc, nil, domwalk.Limits{})
	want := []watch.Link{{URL: "https://example.org/abs", Text: "A", Place: watch.Place{Position: 1, Landmark: watch.LandmarkNone}}}
	if !slices.Equal(got, want) || stats.Dropped.Invalid != 1 || stats.Base != "" {
		t.Fatalf("links %v, stats %+v; want %v and one invalid", got, stats, want)
	}
	if got, stats := domwalk.Links(nil, nil, domwalk.Limits{}); got != nil || stats != (domwalk.Stats{}) {
		t.Fatalf("Links(nil) = %v, %+v", got, stats)
	}
}

func TestParseError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := domwalk.Parse(iotest.ErrReader(boom), mustURL(t, pageURL), domwalk.Limits{})
	if !errors.Is(err, boom) || err.Error() != "domwalk: read HTML of "+pageURL+": boom" {
		t.Fatalf("Parse error = %v, want it to wrap the read error and name the page", err)
	}
}

func TestWithDefaults(t *testing.T) {
	want := domwalk.Limits{MaxLinks: 5000, MaxDepth: 512, MaxNodes: 1_000_000, MaxTextRunes: 300, MaxTreeBytes: 32 << 20}
	if got := (domwalk.Limits{}).WithDefaults(); got != want {
		t.Errorf("zero Limits: %+v, want %+v", got, want)
	}
	if got := (domwalk.Limits{MaxLinks: -1, MaxDepth: -1, MaxNodes: -1, MaxTextRunes: -1, MaxTreeBytes: -1}).WithDefaults(); got != want {
		t.Errorf("negative Limits: %+v, want %+v", got, want)
	}
	set := domwalk.Limits{MaxLinks: 1, MaxDepth: 2, MaxNodes: 3, MaxTextRunes: 4, MaxTreeBytes: 5}
	if got := set.WithDefaults(); got != set {
		t.Errorf("set Limits changed: %+v, want %+v", got, set)
	}
}

// fast fails the test when f takes longer than limit: the caps must bound
// time, not just output.
func fast(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > limit && !raceEnabled {
		t.Fatalf("took %v, want under %v", d, limit)
	}
}

func TestMaxLinks(t *testing.T) {
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, `<a href="/%d">%d</a><a href="/0">dup</a>`, i, i)
	}
	lim := domwalk.Limits{MaxLinks: 5}
	got, stats := parse(t, b.String(), lim)
	if len(got) != 5 || got[4].URL != "https://example.com/4" || !stats.LinksCapped || !stats.Truncated() || stats.LinksOverCap != 15 {
		t.Fatalf("%d links (last %q), stats %+v; want 5 ending at /4, LinksCapped, 15 over the cap", len(got), got[len(got)-1].URL, stats)
	}
}

func TestDeepPage(t *testing.T) {
	// The parser refuses pages nesting more than 512 elements; Parse then
	// reads the links from the tags, in document order.
	const depth = 100_000
	page := `<a href="/top">Top</a>` + strings.Repeat("<span>", depth) + `<a href="/bottom">Bottom</a>` + strings.Repeat("</span>", depth) +
		`<a href="/end">End</a>`
	fast(t, 5*time.Second, func() {
		got, stats := parse(t, page, domwalk.Limits{})
		want := []watch.Link{
			{URL: "https://example.com/top", Text: "Top"},
			{URL: "https://example.com/bottom", Text: "Bottom"},
			{URL: "https://example.com/end", Text: "End"},
		}
		if !slices.Equal(got, want) || !stats.Flattened {
			t.Fatalf("links %v, stats %+v; want %v and Flattened", got, stats, want)
		}
	})
	fast(t, 5*time.Second, func() {
		lim := domwalk.Limits{MaxNodes: 1000}
		got, stats := parse(t, strings.Repeat("<span>", depth)+strings.Repeat(`<a href="/a">a</a>`, depth), lim)
		if len(got) != 1 || !stats.Flattened || !stats.NodesCapped {
			t.Fatalf("links %v, stats %+v; want one link, Flattened and NodesCapped", got, stats)
		}
	})
}

func TestMaxDepth(t *testing.T) {
	page := `<a href="/top">Top</a>` + strings.Repeat("<div>", 300) + `<a href="/bottom">Bottom</a>` + strings.Repeat("</div>", 300)
	got, stats := parse(t, page, domwalk.Limits{MaxDepth: 100})
	want := []watch.Link{{URL: "https://example.com/top", Text: "Top"}}
	if !slices.Equal(got, want) || !stats.DepthCapped || stats.Flattened {
		t.Fatalf("links %v, stats %+v; want only /top and DepthCapped", got, stats)
	}
	if stats.Nodes > 110 {
		t.Fatalf("visited %d nodes, want about MaxDepth", stats.Nodes)
	}
	got, stats = parse(t, page, domwalk.Limits{})
	if len(got) != 2 || stats.DepthCapped {
		t.Fatalf("links %v, stats %+v; want both links within the default depth", got, stats)
	}
}

// TestFlattened checks that the links read from the tags of a page the parser
// refuses are those the tree gives for the same markup.
func TestFlattened(t *testing.T) {
	tests := []struct{ name, page string }{
		{"texts", `<a href="/1">  One <b>bold</b>  </a><a href="/2"><div>Title</div><p>Para</p></a><a href="/3">a<br>b</a>`},
		{"fallbacks", `<a href="/t" title="Title"></a><a href="/i"><img alt="Alt"></a><a href="/l" aria-label="Label"></a><map><area href="/m" alt="Map"></map>`},
		{"skipped content", `<a href="/s">A<script>x<y</script><style>.c{}</style>B</a><template><a href="/tpl">T</a></template><a href="/n">N<noscript>ns</noscript></a>`},
		{"noscript markup", `<noscript><a href="/ns">No script</a></noscript>`},
		{"base href", `<head><base href="/b/"></head><body><a href="x">X</a></body>`},
		{"dropped and duplicates", `<a href="javascript:x">J</a><a href="#t">T</a><a href="/d"><img alt="Img"></a><a href="/d">Own</a>`},
		{"svg", `<svg><a xlink:href="/x">X</a></svg>`},
		{"unclosed anchor", `<a href="/u">Unclosed<a href="/v">Next</a>`},
	}
	deep := strings.Repeat("<div>", 600)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, _ := parse(t, tt.page, domwalk.Limits{})
			got, stats := parse(t, deep+tt.page, domwalk.Limits{})
			if !stats.Flattened {
				t.Fatalf("stats %+v, want Flattened", stats)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("flattened links\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestDeepAnchor(t *testing.T) {
	// One anchor wrapping a chain 100,000 elements deep with the text at the
	// bottom: the text walk stops at MaxDepth.
	const depth = 100_000
	nodes := make([]html.Node, depth)
	for i := range nodes {
		nodes[i] = html.Node{Type: html.ElementNode, DataAtom: atom.Span, Data: "span"}
		if i > 0 {
			nodes[i-1].AppendChild(&nodes[i])
		}
	}
	nodes[depth-1].AppendChild(text("bottom text"))
	a := element(atom.A, []string{"href", "/deep", "title", "Fallback"}, &nodes[0])
	fast(t, 2*time.Second, func() {
		got, stats := domwalk.Links(document(a), mustURL(t, pageURL), domwalk.Limits{MaxDepth: 50})
		want := []watch.Link{{URL: "https://example.com/deep", Text: "Fallback", Place: watch.Place{Position: 1, Landmark: watch.LandmarkNone}}}
		if !slices.Equal(got, want) || !stats.DepthCapped {
			t.Fatalf("links %v, stats %+v; want the title as text and DepthCapped", got, stats)
		}
		if stats.Nodes+stats.TextNodes > 200 {
			t.Fatalf("visited %d+%d nodes, want about 2×MaxDepth", stats.Nodes, stats.TextNodes)
		}
	})
}

// millionAnchors returns a document with n anchors under <body>, linking to
// distinct URLs in turns of 10,000, built directly: parsing a page that size
// takes longer than the walk under test.
func millionAnchors(n int) *html.Node {
	const distinct = 10_000
	attrs := make([][]html.Attribute, distinct)
	for i := range attrs {
		attrs[i] = []html.Attribute{{Key: "href", Val: fmt.Sprintf("/story/%d", i)}}
	}
	body := element(atom.Body, nil)
	nodes := make([]html.Node, n)
	for i := range nodes {
		nodes[i] = html.Node{Type: html.ElementNode, DataAtom: atom.A, Data: "a", Attr: attrs[i%distinct]}
		body.AppendChild(&nodes[i])
	}
	return document(element(atom.Html, nil, element(atom.Head, nil), body))
}

func TestMillionAnchors(t *testing.T) {
	doc := millionAnchors(1_000_000)
	t.Run("default limits keep MaxLinks and count the rest", func(t *testing.T) {
		// Past the cap the walk goes on to count the links left out, so a
		// user can be told how many; MaxNodes still bounds it.
		fast(t, 3*time.Second, func() {
			got, stats := domwalk.Links(doc, mustURL(t, pageURL), domwalk.Limits{})
			checkLinks(t, got, domwalk.Limits{})
			if len(got) != domwalk.DefaultMaxLinks || !stats.LinksCapped || stats.LinksOverCap != 10_000-domwalk.DefaultMaxLinks {
				t.Fatalf("%d links, stats %+v; want MaxLinks, LinksCapped and 5,000 over the cap", len(got), stats)
			}
		})
	})
	t.Run("MaxNodes stops the walk", func(t *testing.T) {
		lim := domwalk.Limits{MaxLinks: 1 << 30, MaxNodes: 50_000}
		fast(t, 2*time.Second, func() {
			got, stats := domwalk.Links(doc, mustURL(t, pageURL), lim)
			checkLinks(t, got, lim)
			if !stats.NodesCapped || stats.Nodes+stats.TextNodes != lim.MaxNodes || len(got) != 10_000 || stats.Duplicates == 0 {
				t.Fatalf("%d links, stats %+v; want NodesCapped after MaxNodes visits, 10,000 links", len(got), stats)
			}
		})
	})
}

func TestHugeAnchor(t *testing.T) {
	// A million children under one <a>: gathering its text stops once the
	// text is long enough...
	const n = 1_000_000
	nodes := make([]html.Node, n)
	a := element(atom.A, []string{"href", "/big"})
	for i := range nodes {
		nodes[i] = html.Node{Type: html.TextNode, Data: "word "}
		a.AppendChild(&nodes[i])
	}
	after := element(atom.A, []string{"href", "/after"}, text("After"))
	doc := document(element(atom.Div, nil, a), after)
	fast(t, time.Second, func() {
		lim := domwalk.Limits{MaxTextRunes: 20}
		got, stats := domwalk.Links(doc, mustURL(t, pageURL), lim)
		if len(got) != 2 || got[1].Text != "word word word word…" || stats.TextNodes > 10 {
			t.Fatalf("links %v, stats %+v; want a cut text after a few text nodes", got, stats)
		}
	})
	// ...and a million empty elements spend the node budget, not more. The
	// same nodes serve again, to keep the test's memory down.
	b := element(atom.A, []string{"href", "/empty", "title", "Empty"})
	for i := range nodes {
		nodes[i] = html.Node{Type: html.ElementNode, DataAtom: atom.I, Data: "i"}
		b.AppendChild(&nodes[i])
	}
	doc = document(b)
	fast(t, time.Second, func() {
		lim := domwalk.Limits{MaxNodes: 100_000}
		got, stats := domwalk.Links(doc, mustURL(t, pageURL), lim)
		if len(got) != 1 || got[0].Text != "Empty" || !stats.NodesCapped || stats.Nodes+stats.TextNodes != lim.MaxNodes {
			t.Fatalf("links %v, stats %+v; want the title and NodesCapped after MaxNodes visits", got, stats)
		}
	})
}

func TestManyAnchorsParsed(t *testing.T) {
	// The same through the parser, at a size that parses quickly.
	var b strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&b, `<a href="/s/%d">Story %d</a>`, i, i)
	}
	fast(t, 5*time.Second, func() {
		got, stats := parse(t, b.String(), domwalk.Limits{})
		if len(got) != domwalk.DefaultMaxLinks || !stats.LinksCapped {
			t.Fatalf("%d links, stats %+v; want MaxLinks and LinksCapped", len(got), stats)
		}
	})
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		`<a href="/x">X</a>`,
		`<head><base href="//other.example/"></head><a href="y">Y</a>`,
		`<body><a href=x>x</a><base href="https://b.example/">`,
		`<a href="javascript:x">j</a><a href="#t">t</a><a href="">e</a>`,
		`<a href="/x"><img alt="A"></a><a href="/x" title="T">`,
		"<a href=\"/\xff\">\x00\x01\xfe text \u0085</a>",
		`<svg><a xlink:href="/s"><title>S</title></a></svg><map><area href="/m" alt="M">`,
		`<table><a href="/t">foster</a><tr><td><a href="/u">u</a>`,
		`<template><a href="/no">no</a></template><noscript><a href="/ns">ns</a></noscript>`,
		strings.Repeat("<div>", 600) + `<a href="/d">d</a>`,
		strings.Repeat(`<a href="/r">r</a>`, 50),
		`<header><nav role="main x"><article><footer><a href=/f>f</a></footer></article></nav><a href=/h>h</a></header>` +
			`<div role=" contentinfo"><h3 aria-level=x><a href=/f>F</a></h3></div>`,
		strings.Repeat("<main><aside>", 300) + `<a href="/deep">d</a></aside>`,
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, page string, small bool) {
		lim := domwalk.Limits{}
		if small {
			lim = domwalk.Limits{MaxLinks: 3, MaxDepth: 8, MaxNodes: 200, MaxTextRunes: 7}
		}
		start := time.Now()
		links, stats, err := domwalk.Parse(strings.NewReader(page), mustURL(t, pageURL), lim)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if d := time.Since(start); d > time.Second+time.Duration(len(page))*time.Microsecond && !raceEnabled {
			t.Fatalf("Parse of %d bytes took %v", len(page), d)
		}
		checkLinks(t, links, lim)
		if stats.Links != len(links) || stats.Links+stats.Duplicates+stats.Dropped.Total() > stats.Anchors {
			t.Fatalf("inconsistent stats %+v for %d links", stats, len(links))
		}
		if lim := lim.WithDefaults(); stats.Nodes+stats.TextNodes > lim.MaxNodes {
			t.Fatalf("%d+%d node visits, more than MaxNodes %d", stats.Nodes, stats.TextNodes, lim.MaxNodes)
		}
		for _, l := range links {
			if again, err := urlnorm.Normalize(l.URL); err != nil || again != l.URL {
				t.Fatalf("link URL %q is not normalised: %q, %v", l.URL, again, err)
			}
		}
	})
}

func Example() {
	page := `<html><head><base href="/news/"></head><body>
		<nav><a href="/">Home</a> <a href="javascript:menu()">Menu</a></nav>
		<main><article><a href="2024/05/story.html?utm_source=home">
			<h2>Big   story</h2><p>What happened.</p></a></article></main>
		<a href="https://other.example/" title="Partner"><img src="p.png"></a>
	</body></html>`
	from, _ := url.Parse("https://example.com/index.html")
	links, stats, err := domwalk.Parse(strings.NewReader(page), from, domwalk.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range links {
		fmt.Printf("%s %q %q\n", l.URL, l.Text, l.Summary)
	}
	fmt.Println("dropped:", stats.Dropped.Total())
	// Output:
	// https://other.example/ "Partner" ""
	// https://example.com/ "Home" ""
	// https://example.com/news/2024/05/story.html "Big story" "What happened."
	// dropped: 1
}

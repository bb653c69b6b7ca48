package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// placedPage serves one homepage whose markup a test replaces between
// checks.
type placedPage struct {
	mu   sync.Mutex
	body string
	srv  *httptest.Server
}

func (p *placedPage) set(body string) {
	p.mu.Lock()
	p.body = "<!DOCTYPE html><html><head><title>Placed</title></head><body>" + body + "</body></html>"
	p.mu.Unlock()
}

func (p *placedPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	body := p.body
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, body)
}

type placedUpdate struct {
	URL      string
	Position *int
	Heading  *int
	Landmark *string
}

func (u placedUpdate) String() string {
	return fmt.Sprintf("%s #%v h%v %v", u.URL, deref(u.Position), deref(u.Heading), deref(u.Landmark))
}

// TestPlacesAsServed: the real programs record each new link with the
// position, heading and landmark it had on the page as served, while links
// move between landmarks from check to check; positions count only the
// links the page's options keep.
func TestPlacesAsServed(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	page := &placedPage{}
	page.srv = httptest.NewServer(page)
	t.Cleanup(page.srv.Close)
	page.set(`<header><a href="/">Home</a><nav><a href="/politics">Politics</a><a href="/ads/1">Ad</a></nav></header>
		<main><article><h2><a href="/a">Story A</a></h2></article><article><h2><a href="/b">Story B</a></h2></article></main>
		<footer><a href="/imprint">Imprint</a></footer>`)
	id := sys.add(page.srv.URL+"/", "--interval", "1h", "--ignore", "/ads/")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("processor")
	sys.checkNow(id)
	testsvc.Eventually(t, 60*time.Second, "the baseline", sys.baselineDone(id))

	// Second check: A moves to the footer and B to an aside (old links, no
	// news); C leads main under an h3 after an ignored ad; D is first
	// anchored in the navigation and again as a headline in main; E sits in
	// an article header, which is no page banner.
	page.set(`<header><a href="/">Home</a><nav><a href="/ads/2">Ad</a><a href="/d">D</a><a href="/politics">Politics</a></nav></header>
		<main><a href="/ads/3">Ad</a><h3><span><a href="/c">Story C</a></span></h3>
		<article><header><a href="/e">Story E</a></header></article><h1><a href="/d">Story D</a></h1></main>
		<aside><a href="/b">Story B</a></aside><footer><a href="/a">Story A</a><a href="/imprint">Imprint</a></footer>`)
	sys.waitForCheck(id)
	// Third check: C moves up into the banner, a new link F by role in a
	// complementary part, G in the footer, H in no landmark at all.
	page.set(`<div role="banner"><a href="/c">Story C</a><a href="/">Home</a></div><a href="/h">Story H</a>
		<div role="complementary"><div role="heading" aria-level="4"><a href="/f">Story F</a></div></div>
		<nav><a href="/politics">Politics</a></nav><main><a href="/e">Story E</a><a href="/d">Story D</a></main>
		<footer><a href="/imprint">Imprint</a><a href="/g">Story G</a><a href="/a">Story A</a></footer>`)
	sys.waitForCheck(id)

	rows, err := sys.db.Query(t.Context(), `SELECT url, position, heading, landmark FROM updates WHERE page_id = $1`, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []placedUpdate
	for rows.Next() {
		var u placedUpdate
		if err := rows.Scan(&u.URL, &u.Position, &u.Heading, &u.Landmark); err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	ptr := func(v int) *int { return &v }
	mark := func(s string) *string { return &s }
	base := page.srv.URL
	want := []placedUpdate{
		// Kept links of check 2: /, /d, /politics, /c, /e, /b, /a, /imprint.
		{base + "/c", ptr(4), ptr(3), mark("main")},
		{base + "/d", ptr(2), ptr(1), mark("nav")},
		{base + "/e", ptr(5), ptr(0), mark("main")},
		// Kept links of check 3: /c, /, /h, /f, /politics, /e, /d, /imprint, /g, /a.
		{base + "/f", ptr(4), ptr(4), mark("aside")},
		{base + "/g", ptr(9), ptr(0), mark("footer")},
		{base + "/h", ptr(3), ptr(0), mark("none")},
	}
	sort.Slice(got, func(i, j int) bool { return got[i].URL < got[j].URL })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates:\n got %v\nwant %v", got, want)
	}
}

// TestRevisionsAndHealthAsServed: the real programs record a rewritten
// headline as a revision, once, a page that shows no link as degraded and
// then recovered, as events in the order of their checks, and the new link
// of a check that also rewrote one as an update; a link taken down
// carries its time on the page.
func TestRevisionsAndHealthAsServed(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	page := &placedPage{}
	page.srv = httptest.NewServer(page)
	t.Cleanup(page.srv.Close)
	story := func(path, text string) string {
		return `<article><h2><a href="` + path + `">` + text + `</a></h2></article>`
	}
	page.set(`<main>` + story("/a", "Storm nears") + story("/b", "Budget passes") + `</main>`)
	id := sys.add(page.srv.URL+"/", "--interval", "1h")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("processor")
	sys.checkNow(id)
	testsvc.Eventually(t, 60*time.Second, "the baseline", sys.baselineDone(id))
	baselineAt, err := sys.lastChecked(id)
	if err != nil {
		t.Fatal(err)
	}

	page.set(`<main>` + story("/c", "Fire in the port") + story("/a", "Storm hits the coast") + story("/b", "Budget passes") + `</main>`)
	sys.waitForCheck(id)
	sys.waitForCheck(id) // the same page again: nothing more
	page.set(`<main><p>Maintenance</p></main>`)
	sys.waitForCheck(id)
	page.set(`<main>` + story("/c", "Fire in the port") + story("/a", "Storm hits the coast") +
		story("/b", "Budget passes, narrowly") + `</main>`)
	sys.waitForCheck(id)

	rows, err := sys.db.Query(t.Context(), `
		SELECT kind || ' ' || coalesce(url || ' ' || old_text || ' → ' || new_text, reason, '')
		FROM events WHERE page_id = $1 ORDER BY xact, kind, id`, id) // one check's events in no set order
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	base := page.srv.URL
	want := []string{
		"link.rewritten " + base + "/a Storm nears → Storm hits the coast",
		"page.degraded no_links",
		"link.rewritten " + base + "/b Budget passes → Budget passes, narrowly",
		"page.recovered ",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	var news []string
	if err := sys.db.QueryRow(t.Context(), `SELECT array_agg(url || ' ' || text) FROM updates WHERE page_id = $1`, id).Scan(&news); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(news) != fmt.Sprint([]string{base + "/c Fire in the port"}) {
		t.Fatalf("updates %q, want the one new link", news)
	}

	// Story A leaves the page: two checks without it (the default count)
	// make its removal due, the claim of the next check records it, and
	// its time on the page runs from the baseline that first served it to
	// that removal.
	lastSighting, err := sys.lastChecked(id)
	if err != nil {
		t.Fatal(err)
	}
	page.set(`<main>` + story("/c", "Fire in the port") + story("/b", "Budget passes, narrowly") + `</main>`)
	sys.waitForCheck(id)
	sys.waitForCheck(id)
	sys.waitForCheck(id)
	removedBy, err := sys.lastChecked(id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := sys.watchctl("links", strconv.FormatInt(id, 10), "--removed", "--json")
	if err != nil {
		t.Fatalf("watchctl links --removed: %v\n%s", err, out)
	}
	var removed []watch.PageLink
	for dec := json.NewDecoder(strings.NewReader(out)); dec.More(); { // one object a line
		var l watch.PageLink
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("watchctl links --removed --json: %v\n%s", err, out)
		}
		removed = append(removed, l)
	}
	if len(removed) != 1 || removed[0].URL != base+"/a" || removed[0].DwellSeconds == nil {
		t.Fatalf("removed links %s, want story A with its time on the page", out)
	}
	dwell := time.Duration(*removed[0].DwellSeconds) * time.Second
	if low, high := lastSighting.Sub(baselineAt)-time.Second, removedBy.Sub(baselineAt)+time.Second; dwell < low || dwell > high {
		t.Fatalf("story A on the page for %s, want between %s (baseline to its last sighting) and %s (to the check that removed it)",
			dwell, low, high)
	}
}

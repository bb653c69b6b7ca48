package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// linksAnswer is the answer of GET /api/v1/pages/{id}/links.
type linksAnswer struct {
	State      string
	Links      []watch.PageLink
	NextCursor string `json:"next_cursor"`
}

// dwellPage registers a page and records three whole checks of it with
// removals after one absence (K = 1): links a and b (the baseline), then
// a, b and the new story c, then a, b and the new story d, which leaves c
// due; then it records the due removal, as the next claim would. It
// returns the page and the URLs by letter.
func (e *env) dwellPage(name string) (watch.Page, map[string]string) {
	e.t.Helper()
	ctx := context.Background()
	page, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "https://" + name + ".example/"})
	if err != nil {
		e.t.Fatal(err)
	}
	urls := map[string]string{}
	link := func(letter string) watch.NewLink {
		u := page.BaseURL + letter
		urls[letter] = u
		k := shortlink.Key(u)
		return watch.NewLink{Key: k, URL: u, Text: "Story " + letter, Code: shortlink.Code(k, 8)}
	}
	a, b, c, d := link("a"), link("b"), link("c"), link("d")
	at := time.Now().Add(-time.Minute)
	for i, check := range []struct{ set, fresh []watch.NewLink }{
		{[]watch.NewLink{a, b}, []watch.NewLink{a, b}},
		{[]watch.NewLink{a, b, c}, []watch.NewLink{c}},
		{[]watch.NewLink{a, b, d}, []watch.NewLink{d}},
	} {
		var keys []uint64
		for _, l := range check.set {
			keys = append(keys, l.Key)
		}
		c := watch.Check{PageID: page.ID, FetchedAt: at.Add(time.Duration(i) * time.Second), Status: 200, FullSet: true,
			Removals: watch.Removals{Checks: 1, Keys: keys}}
		if _, err := e.st.RecordCheck(ctx, c, check.fresh); err != nil {
			e.t.Fatal(err)
		}
	}
	if n, err := e.st.RecordRemovals(ctx, []int64{page.ID}); err != nil || n != 1 {
		e.t.Fatalf("RecordRemovals = %d, %v; want c recorded", n, err)
	}
	return page, urls
}

// setDwell makes the first sighting of the link of url (its links row and
// its update) first, and its latest removal first plus d.
func (e *env) setDwell(page int64, u string, first time.Time, d time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	key := int64(shortlink.Key(u))
	removed := first.Add(d)
	for _, st := range []struct {
		sql string
		at  time.Time
	}{
		{`UPDATE links SET first_seen_at = $3 WHERE page_id = $1 AND link_key = $2`, first},
		{`UPDATE updates SET discovered_at = $3 WHERE page_id = $1 AND link_key = $2`, first},
		{`UPDATE removals SET removed_at = $3 WHERE page_id = $1 AND link_key = $2`, removed},
	} {
		if _, err := e.pool.Exec(ctx, st.sql, page, key, st.at); err != nil {
			e.t.Fatalf("%s: %v", st.sql, err)
		}
	}
}

// TestAPIPageLinksAndDwell: the current links of a page, newest first,
// with their time so far; the removed ones with their time on the page to
// the second, which the update of the link carries too; pages of results
// that join up; and a refusal that says what to send instead for each bad
// request.
func TestAPIPageLinksAndDwell(t *testing.T) {
	e := newEnv(t)
	page, urls := e.dwellPage("dwell")
	first := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	e.setDwell(page.ID, urls["c"], first, 3*time.Hour+20*time.Minute)
	path := fmt.Sprintf("/api/v1/pages/%d/links", page.ID)

	resp, b := e.do("GET", path, e.readTok, "")
	cur := decode[linksAnswer](t, b)
	if resp.StatusCode != 200 || cur.State != "current" || len(cur.Links) != 3 || cur.Links[0].URL != urls["d"] || cur.NextCursor != "" {
		t.Fatalf("current links: %d %s; want a, b and d, d first", resp.StatusCode, b)
	}
	for _, l := range cur.Links {
		if l.RemovedAt != nil || l.DwellSeconds == nil || *l.DwellSeconds > 120 || l.FirstSeenAt == nil || l.Code == "" || l.Text == "" {
			t.Errorf("current link %+v: want its text, code, first sighting and a time so far of a minute or two, no removal", l)
		}
	}
	if strings.Contains(string(b), "removed_at") {
		t.Errorf("current links carry removed_at: %s", b)
	}

	resp, b = e.do("GET", path+"?state=removed", e.readTok, "")
	gone := decode[linksAnswer](t, b)
	if resp.StatusCode != 200 || gone.State != "removed" || len(gone.Links) != 1 || gone.Links[0].URL != urls["c"] ||
		gone.Links[0].DwellSeconds == nil || *gone.Links[0].DwellSeconds != 12000 || !gone.Links[0].FirstSeenAt.Equal(first) {
		t.Fatalf("removed links: %d %s; want c, 12000 s on the page from %s", resp.StatusCode, b, first)
	}

	_, b = e.do("GET", fmt.Sprintf("/api/v1/removals?page=%d", page.ID), e.readTok, "")
	rms := decode[struct{ Removals []watch.Removal }](t, b)
	if len(rms.Removals) != 1 || rms.Removals[0].URL != urls["c"] || rms.Removals[0].DwellSeconds == nil || *rms.Removals[0].DwellSeconds != 12000 {
		t.Errorf("removals: %s; want c with dwell_seconds 12000", b)
	}

	_, b = e.do("GET", fmt.Sprintf("/api/v1/updates?page=%d", page.ID), e.readTok, "")
	ups := decode[struct{ Updates []watch.Update }](t, b)
	for _, u := range ups.Updates {
		switch {
		case u.URL == urls["c"] && (u.DwellSeconds == nil || *u.DwellSeconds != 12000):
			t.Errorf("the update of c, taken down: %+v, want dwell_seconds 12000", u)
		case u.URL == urls["d"] && u.DwellSeconds != nil:
			t.Errorf("the update of d, on the page: %+v, want no dwell_seconds", u)
		}
	}
	if len(ups.Updates) != 2 {
		t.Errorf("updates: %s, want c and d", b)
	}

	// One at a time, the pages join up to the whole list.
	var got []string
	next := path + "?limit=1"
	for range 10 {
		resp, b := e.do("GET", next, e.readTok, "")
		page := decode[linksAnswer](t, b)
		if resp.StatusCode != 200 || len(page.Links) > 1 {
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, b)
		}
		for _, l := range page.Links {
			got = append(got, l.URL)
		}
		if page.NextCursor == "" {
			break
		}
		next = path + "?limit=1&cursor=" + url.QueryEscape(page.NextCursor)
	}
	want := []string{}
	for _, l := range cur.Links {
		want = append(want, l.URL)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("current links one at a time: %v, want %v", got, want)
	}

	_, b = e.do("GET", path+"?limit=1", e.readTok, "")
	curCursor := url.QueryEscape(decode[linksAnswer](t, b).NextCursor)
	for _, tt := range []struct {
		query, want string
	}{
		{"?state=gone", "want current"},
		{"?state=removed&cursor=" + curCursor, "state=current"},
		{"?cursor=bm90IGEgY3Vyc29y", "next_cursor"},
		{"?limit=0", "from 1 to 1000"},
		{"?limit=1001", "from 1 to 1000"},
		{"?since=1h", "state, limit and cursor only"},
	} {
		resp, b := e.do("GET", path+tt.query, e.readTok, "")
		if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s%s: %d %s, want 400 saying %q", path, tt.query, resp.StatusCode, b, tt.want)
		}
	}
	for _, p := range []string{"/api/v1/pages/999999/links", "/api/v1/pages/abc/links"} {
		if resp, b := e.do("GET", p, e.readTok, ""); resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: %d %s, want a 404 problem", p, resp.StatusCode, b)
		}
	}
	if resp, _ := e.do("GET", path, "", ""); resp.StatusCode != 401 {
		t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
	}
	pub := e.serve(e.st, publicRead)
	if resp, _ := e.doAt(pub, "GET", path, "", ""); resp.StatusCode != 200 {
		t.Errorf("GET %s without a token, reads public: %d, want 200", path, resp.StatusCode)
	}
}

// TestAPIPageLinksOfAPageNotFollowed: a page checked with removals off
// cannot say which links are on it now, and says why; its removed links
// are listed all the same.
func TestAPIPageLinksOfAPageNotFollowed(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	page, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "https://off.example/"})
	if err != nil {
		t.Fatal(err)
	}
	k := shortlink.Key(page.BaseURL + "a")
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: page.ID, FetchedAt: time.Now(), Status: 200, FullSet: true,
		Removals: watch.Removals{Keys: []uint64{k}}}, []watch.NewLink{{Key: k, URL: page.BaseURL + "a", Text: "A", Code: "a"}}); err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/pages/%d/links", page.ID)
	if resp, b := e.do("GET", path, e.readTok, ""); resp.StatusCode != 409 || !strings.Contains(string(b), "PORTALWATCH_REMOVAL_CHECKS") {
		t.Errorf("current links of a page not followed: %d %s, want 409 naming the setting", resp.StatusCode, b)
	}
	if resp, b := e.do("GET", path+"?state=removed", e.readTok, ""); resp.StatusCode != 200 || len(decode[linksAnswer](t, b).Links) != 0 {
		t.Errorf("removed links of a page not followed: %d %s, want 200 and none", resp.StatusCode, b)
	}
}

// TestPageViewShowsTimeOnThePage: the page view says how long a story
// taken down was on the page, and how long one still there has been so
// far; the start page says the first too.
func TestPageViewShowsTimeOnThePage(t *testing.T) {
	e := newEnv(t)
	page, urls := e.dwellPage("view")
	e.setDwell(page.ID, urls["c"], time.Now().Add(-5*time.Hour), 3*time.Hour+20*time.Minute)
	e.setDwell(page.ID, urls["d"], time.Now().Add(-2*time.Hour-time.Minute), 0)
	_, body := e.get(fmt.Sprintf("/pages/%d", page.ID), e.readTok)
	if !strings.Contains(body, "On the page for 3 h 20 min<") {
		t.Errorf("the page view does not say how long story c was on the page:\n%s", body)
	}
	if !strings.Contains(body, "On the page for 2 h 1 min so far") {
		t.Errorf("the page view does not say how long story d has been on the page:\n%s", body)
	}
	if _, body := e.get("/", e.readTok); !strings.Contains(body, "On the page for 3 h 20 min<") || strings.Contains(body, "so far") {
		t.Errorf("the start page: want the time on the page of story c, and no time so far (it does not read the pages):\n%s", body)
	}
}

package web

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// revisionsAnswer is the answer of GET /api/v1/pages/{id}/revisions.
type revisionsAnswer struct {
	Revisions  []watch.Revision
	NextCursor string `json:"next_cursor"`
}

// insertRevision writes a link.rewritten event as the check statement
// does, for the tests to read.
func (e *env) insertRevision(pageID int64, at time.Time, u, oldText, newText string) int64 {
	e.t.Helper()
	var id int64
	if err := e.pool.QueryRow(context.Background(), `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text)
		VALUES ($1, 'link.rewritten', $2, hashtextextended($3, 0), $3, $4, $5) RETURNING id`,
		pageID, at, u, oldText, newText).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// revisedPage registers a page with three revisions of two of its links,
// a minute apart, the newest at now, and a page.degraded event among them.
func (e *env) revisedPage(name string, now time.Time) watch.Page {
	e.t.Helper()
	page, err := e.st.CreatePage(context.Background(), watch.PageSpec{URL: "https://" + name + ".example/"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.insertRevision(page.ID, now.Add(-2*time.Minute), page.BaseURL+"a", "Minister resigns", "Minister resigns after vote")
	if _, err := e.pool.Exec(context.Background(), `INSERT INTO events (page_id, kind, at, reason) VALUES ($1, 'page.degraded', $2, 'empty')`,
		page.ID, now.Add(-90*time.Second)); err != nil {
		e.t.Fatal(err)
	}
	e.insertRevision(page.ID, now.Add(-time.Minute), page.BaseURL+"b", "Storm <warning>", "Storm & flood warning")
	e.insertRevision(page.ID, now, page.BaseURL+"a", "Minister resigns after vote", "Minister quits")
	return page
}

// TestAPIPageRevisions: a page's revisions newest first, checked against
// the OpenAPI document, in pages that join up, with the refusals and the
// access rules of the links of a page.
func TestAPIPageRevisions(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	page := e.revisedPage("rev", now)
	quiet, err := e.st.CreatePage(context.Background(), watch.PageSpec{URL: "https://quiet.example/"})
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/api/v1/pages/%d/revisions", page.ID)

	resp, b := e.do("GET", path, e.readTok, "")
	all := decode[revisionsAnswer](t, b)
	if resp.StatusCode != 200 || len(all.Revisions) != 3 || all.NextCursor != "" {
		t.Fatalf("revisions: %d %s; want three and no next_cursor", resp.StatusCode, b)
	}
	if r := all.Revisions[0]; r.PageID != page.ID || r.URL != page.BaseURL+"a" || r.OldText != "Minister resigns after vote" ||
		r.NewText != "Minister quits" || !r.At.Equal(now) {
		t.Errorf("newest revision %+v; want a, rewritten to Minister quits at %s", r, now)
	}
	for _, k := range []string{`"id"`, `"page_id"`, `"url"`, `"old_text"`, `"new_text"`, `"at"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("revisions answer lacks %s: %s", k, b)
		}
	}

	var got []int64
	next := path + "?limit=2"
	for range 5 {
		resp, b := e.do("GET", next, e.readTok, "")
		p := decode[revisionsAnswer](t, b)
		if resp.StatusCode != 200 || len(p.Revisions) > 2 {
			t.Fatalf("GET %s: %d %s", next, resp.StatusCode, b)
		}
		for _, r := range p.Revisions {
			got = append(got, r.ID)
		}
		if p.NextCursor == "" {
			break
		}
		next = path + "?limit=2&cursor=" + url.QueryEscape(p.NextCursor)
	}
	want := []int64{all.Revisions[0].ID, all.Revisions[1].ID, all.Revisions[2].ID}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("revisions two at a time: %v, want %v", got, want)
	}

	if resp, b := e.do("GET", fmt.Sprintf("/api/v1/pages/%d/revisions", quiet.ID), e.readTok, ""); resp.StatusCode != 200 ||
		strings.TrimSpace(string(b)) != `{"revisions":[]}` {
		t.Errorf("revisions of a page without any: %d %s, want an empty list", resp.StatusCode, b)
	}
	// The cursors of other lists are not read as one of this list.
	linkCursor := encodeLinkCursor(watch.LinksRemoved, watch.LinkCursor{At: now, ID: all.Revisions[0].ID})
	updateCursor := encodeCursor(watch.Cursor{DiscoveredAt: now, ID: all.Revisions[0].ID})
	for _, tt := range []struct{ query, want string }{
		{"?cursor=bm90IGEgY3Vyc29y", "next_cursor"},
		{"?cursor=" + linkCursor, "next_cursor"},
		{"?cursor=" + updateCursor, "next_cursor"},
		{"?limit=0", "from 1 to 1000"},
		{"?limit=1001", "from 1 to 1000"},
		{"?since=1h", "limit and cursor only"},
	} {
		resp, b := e.do("GET", path+tt.query, e.readTok, "")
		if resp.StatusCode != 400 || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s%s: %d %s, want 400 saying %q", path, tt.query, resp.StatusCode, b, tt.want)
		}
	}
	for _, p := range []string{"/api/v1/pages/999999/revisions", "/api/v1/pages/abc/revisions"} {
		if resp, b := e.do("GET", p, e.readTok, ""); resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: %d %s, want a 404 problem", p, resp.StatusCode, b)
		}
	}
	if resp, _ := e.do("GET", path, "", ""); resp.StatusCode != 401 {
		t.Errorf("GET %s without a token: %d, want 401", path, resp.StatusCode)
	}
	if resp, _ := e.do("GET", path+"?token="+e.readTok, "", ""); resp.StatusCode != 401 {
		t.Errorf("GET %s with ?token=: %d, want 401 (?token= is for feeds only)", path, resp.StatusCode)
	}
	pub := e.serve(e.st, publicRead)
	if resp, _ := e.doAt(pub, "GET", path, "", ""); resp.StatusCode != 200 {
		t.Errorf("GET %s without a token, reads public: %d, want 200", path, resp.StatusCode)
	}
	if _, err := e.st.TrashPage(context.Background(), page.ID); err != nil {
		t.Fatal(err)
	}
	if resp, b := e.do("GET", path, e.readTok, ""); resp.StatusCode != 404 {
		t.Errorf("revisions of a page in the trash: %d %s, want 404", resp.StatusCode, b)
	}
}

// TestRevisionsFeeds: a page's revisions feed, in the three formats of
// its updates feed, parses, titles each entry “old” → “new”, links the
// story, dates it by its check and gives it an id of its own, answers a
// conditional request with 304, and takes ?token= as every feed does.
func TestRevisionsFeeds(t *testing.T) {
	e := newEnv(t)
	now := time.Now().UTC().Truncate(time.Second)
	page := e.revisedPage("feedrev", now)
	parser := gofeed.NewParser()
	for _, ext := range []string{"atom", "rss", "json"} {
		path := fmt.Sprintf("/feeds/pages/%d/revisions.%s", page.ID, ext)
		resp, body := e.do("GET", path, e.readTok, "")
		if resp.StatusCode != 200 || resp.Header.Get("ETag") == "" || resp.Header.Get("Last-Modified") == "" {
			t.Fatalf("%s: %d ETag %q Last-Modified %q\n%s", path, resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), body)
		}
		feed, err := parser.Parse(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s does not parse: %v\n%.500s", path, err, body)
		}
		if feed.FeedType != ext || feed.Title != "portalwatch: headline changes on feedrev.example" || len(feed.Items) != 3 {
			t.Fatalf("%s: %s feed %q with %d items; want %s with 3", path, feed.FeedType, feed.Title, len(feed.Items), ext)
		}
		first, second := feed.Items[0], feed.Items[1]
		if first.Title != "“Minister resigns after vote” → “Minister quits”" || first.Link != page.BaseURL+"a" {
			t.Errorf("%s: first entry %q linking %q; want the newest rewrite of a", path, first.Title, first.Link)
		}
		if second.Title != "“Storm <warning>” → “Storm & flood warning”" {
			t.Errorf("%s: second title %q, want the texts as they are, unescaped once", path, second.Title)
		}
		if !strings.HasPrefix(first.GUID, "urn:portalwatch:revision:") || first.GUID == second.GUID {
			t.Errorf("%s: ids %q, %q; want urn:portalwatch:revision: ids of their own", path, first.GUID, second.GUID)
		}
		when := first.UpdatedParsed
		if when == nil {
			when = first.PublishedParsed
		}
		if when == nil || !when.Equal(now) {
			t.Errorf("%s: first entry dated %v, want %v", path, when, now)
		}
		if ext == "rss" && !strings.Contains(string(body), fmt.Sprintf("/feeds/pages/%d/revisions.rss", page.ID)) {
			t.Errorf("%s: the items name another source: %s", path, body)
		}
		if again, _ := e.do("GET", path, e.readTok, "", "If-None-Match", resp.Header.Get("ETag")); again.StatusCode != 304 {
			t.Errorf("%s with its ETag: %d, want 304", path, again.StatusCode)
		}
		if resp, _ := e.do("GET", path+"?token="+e.readTok, "", ""); resp.StatusCode != 200 {
			t.Errorf("%s?token=: %d, want 200", path, resp.StatusCode)
		}
		if resp, _ := e.do("GET", path, "", ""); resp.StatusCode != 401 {
			t.Errorf("%s without a token: %d, want 401", path, resp.StatusCode)
		}
	}
	// A new revision is a new feed.
	resp, _ := e.do("GET", fmt.Sprintf("/feeds/pages/%d/revisions.atom", page.ID), e.readTok, "")
	e.insertRevision(page.ID, now.Add(time.Second), page.BaseURL+"b", "Storm & flood warning", "Flood warning lifted")
	if again, _ := e.do("GET", fmt.Sprintf("/feeds/pages/%d/revisions.atom", page.ID), e.readTok, "", "If-None-Match", resp.Header.Get("ETag")); again.StatusCode != 200 {
		t.Errorf("revisions feed after a new revision, with the old ETag: %d, want 200", again.StatusCode)
	}
	for _, p := range []string{"/feeds/pages/999/revisions.atom", fmt.Sprintf("/feeds/pages/%d/revisions.xml", page.ID),
		fmt.Sprintf("/feeds/pages/%d/updates.atom", page.ID), "/feeds/pages/x/revisions.atom"} {
		if resp, _ := e.do("GET", p, e.readTok, ""); resp.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestPageViewListsHeadlineChanges: the page view lists the revisions of
// the page, old text struck, new text linking the story, and links the
// revisions feeds; a page without revisions has no such section.
func TestPageViewListsHeadlineChanges(t *testing.T) {
	e := newEnv(t)
	page := e.revisedPage("viewrev", time.Now())
	_, body := e.get(fmt.Sprintf("/pages/%d", page.ID), e.readTok)
	for _, want := range []string{
		`<h2 id="revisions-heading">Headline changes</h2>`,
		`<del class="old-text">Minister resigns after vote</del>`,
		`<a class="new-text" href="` + page.BaseURL + `a" rel="noreferrer">Minister quits</a>`,
		`<del class="old-text">Storm &lt;warning&gt;</del>`,
		fmt.Sprintf(`href="/feeds/pages/%d/revisions.atom"`, page.ID),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page view lacks %s:\n%s", want, body)
		}
	}
	quiet, err := e.st.CreatePage(context.Background(), watch.PageSpec{URL: "https://quiet.example/"})
	if err != nil {
		t.Fatal(err)
	}
	_, body = e.get(fmt.Sprintf("/pages/%d", quiet.ID), e.readTok)
	if strings.Contains(body, "Headline changes") || !strings.Contains(body, fmt.Sprintf("/feeds/pages/%d/revisions.rss", quiet.ID)) {
		t.Errorf("the view of a page without revisions: want no Headline changes section, and its revisions feeds linked:\n%s", body)
	}
}

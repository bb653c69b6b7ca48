package web

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// markOf returns the mark the river's "mark all read" form sends.
func markOf(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`name="mark" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the river has no mark-all-read form:\n%s", body)
	}
	return m[1]
}

// The river marks each reader's unread news: a reader's mark is theirs
// alone, moves only forward, and news that came after the screen they
// marked stays unread.
func TestRiverKeepsEachReadersUnreadState(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","name":"Alpha"}`)
	a := decode[pageJSON](t, b)
	e.insertUpdates(a.ID, 3, timeNow().Add(-time.Minute), "Morning")

	_, body := e.get("/", e.readTok)
	if strings.Count(body, `class="story unread"`) != 3 || !strings.Contains(body, "<strong>3</strong> unread") {
		t.Fatalf("a new reader does not see 3 unread stories:\n%s", body)
	}
	mark := markOf(t, body)
	// News arrives while the reader reads.
	e.insertUpdates(a.ID, 2, timeNow(), "Noon")
	resp, _ := e.form("/read", e.readTok, url.Values{"mark": {mark}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/?done=marked-read") {
		t.Fatalf("mark all read: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body = e.get("/", e.readTok)
	if got := strings.Count(body, `class="story unread"`); got != 2 || !strings.Contains(body, "<strong>2</strong> unread") {
		t.Errorf("after marking the first screen read, %d unread; want the 2 that came after it", got)
	}
	_, body = e.get("/?unread=1", e.readTok)
	if strings.Contains(body, "Morning") || strings.Count(body, "Noon") != 2 {
		t.Errorf("only unread shows read news, or not the unread:\n%s", body)
	}
	// Another reader's state is their own.
	if _, body := e.get("/", e.writeTk); strings.Count(body, `class="story unread"`) != 5 {
		t.Errorf("the writer sees %d unread, want all 5: marks are per token", strings.Count(body, `class="story unread"`))
	}
	// An old tab's mark does not make read news unread again.
	e.form("/read", e.readTok, url.Values{"mark": {markOf(t, body)}})
	e.form("/read", e.readTok, url.Values{"mark": {mark}})
	if _, body := e.get("/", e.readTok); strings.Contains(body, `class="story unread"`) {
		t.Error("an older mark made news unread again")
	}
	if resp, _ := e.form("/read", e.readTok, url.Values{"mark": {"nonsense"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("mark with a bad cursor: %d, want 400", resp.StatusCode)
	}
}

// A redesign shows as one collapsed item of the river, a link taken down is
// marked, and teasers show under their headlines.
func TestRiverCollapsesRedesignsAndMarksTakedowns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/z","name":"Zeitung"}`)
	z := decode[pageJSON](t, b)
	at := timeNow().Add(-time.Hour)
	if _, err := e.pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, burst)
		SELECT $1, 'https://z.example/r/'||i, 'Rubrik '||i, 'b'||i, 5000 + i, $2, true FROM generate_series(1, 30) i`, z.ID, at); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, summary)
		VALUES ($1, 'https://z.example/story', 'Brücke gesperrt', 's1', 42, $2, 'Die Brücke bleibt bis Montag zu.')`, z.ID, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO removals (page_id, link_key, removed_at) VALUES ($1, 42, now())`, z.ID); err != nil {
		t.Fatal(err)
	}
	_, body := e.get("/", e.readTok)
	if n := strings.Count(body, `class="story burst`); n != 1 || !strings.Contains(body, "Redesign on Zeitung: 30 links appeared at once") {
		t.Errorf("the redesign shows as %d items, want one collapsed item:\n%s", n, body)
	}
	if !strings.Contains(body, "<details>") || strings.Count(body, "Rubrik ") != 30 {
		t.Error("the redesign's links are not inside its collapsed item")
	}
	if !strings.Contains(body, `class="teaser">Die Brücke bleibt bis Montag zu.`) {
		t.Error("the teaser is not under its headline")
	}
	if !regexp.MustCompile(`class="story[^"]* removed"`).MatchString(body) || !strings.Contains(body, "taken down") {
		t.Error("the story taken down again is not marked")
	}
	_, b = e.do("GET", fmt.Sprintf("/api/v1/updates?page=%d", z.ID), e.readTok, "")
	got := decode[struct{ Updates []watch.Update }](t, b)
	if len(got.Updates) == 0 || got.Updates[0].RemovedAt == nil {
		t.Errorf("the API's update of the link taken down has no removed_at: %s", b)
	}
}

// Every refusal of a form shows at once beside its field; a URL typed
// without a scheme gets the hint of one.
func TestFormsShowEveryErrorAtOnce(t *testing.T) {
	e := newEnv(t)
	resp, body := e.form("/pages", e.writeTk, url.Values{"url": {"news.example.com"}, "interval": {"2s"},
		"tags": {strings.Repeat("t", 60)}, "include_text": {"("}, "within": {"div:has(a)"}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("a form with five bad fields: %d, want 422", resp.StatusCode)
	}
	for _, id := range []string{"url-error", "interval-error", "tags-error", "include_text-error", "within-error"} {
		if !strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("no %s beside its field", id)
		}
	}
	if !strings.Contains(body, "give one such as https://example.com/") {
		t.Error("a URL without a scheme gets no hint of one")
	}
	if !strings.Contains(body, `<details class="more" open>`) {
		t.Error("the options refused are hidden behind the closed More")
	}
	if e.pageCount() != 0 {
		t.Error("a refused form wrote a page")
	}
	// The edit form too.
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a"}`)
	a := decode[pageJSON](t, b)
	_, body = e.form(fmt.Sprintf("/pages/%d", a.ID), e.writeTk, url.Values{"interval": {"soon"}, "name": {"bad\x00"}, "exclude_url": {"["}})
	for _, id := range []string{"interval-error", "name-error", "exclude_url-error"} {
		if !strings.Contains(body, `id="`+id+`"`) {
			t.Errorf("edit: no %s beside its field", id)
		}
	}
	// The API lists them all as well.
	resp, b = e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"example.com:8080/news","interval":"1s","name":"ok"}`)
	p := decode[problemDetails](t, b)
	if resp.StatusCode != http.StatusUnprocessableEntity || len(p.Errors) != 2 || !strings.Contains(p.Detail, "has no scheme") {
		t.Errorf("API with two bad fields: %d %+v, want 422 naming both", resp.StatusCode, p)
	}
}

// The pages list reads a screenful with sparklines, filters, and offers
// check now; the trash takes every delete and gives the page back.
func TestPagesListChecksNowAndTrashes(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	ctx := context.Background()
	var first pageJSON
	for i := range pagesPerScreen + 5 {
		_, b := e.do("POST", "/api/v1/pages", e.writeTk, fmt.Sprintf(`{"url":"http://127.0.0.1:9/p%d","tags":["t%d"]}`, i, i%2))
		if i == 0 {
			first = decode[pageJSON](t, b)
		}
	}
	e.insertUpdates(first.ID, 4, timeNow(), "Fresh")
	_, body := e.get("/pages", e.readTok)
	if n := strings.Count(body, `<tr class="status-`); n != pagesPerScreen {
		t.Errorf("the list shows %d pages, want one screen of %d", n, pagesPerScreen)
	}
	if !strings.Contains(body, `aria-label="4 new links in the last 7 days`) || !strings.Contains(body, "rel=\"next\"") {
		t.Error("no sparkline of the page with 4 new links, or no link to the next screen")
	}
	next := regexp.MustCompile(`href="(/pages\?[^"]+)" rel="next"`).FindStringSubmatch(body)
	if next == nil {
		t.Fatal("no next screen")
	}
	if _, body := e.get(strings.ReplaceAll(next[1], "&amp;", "&"), e.readTok); strings.Count(body, `<tr class="status-`) != 5 {
		t.Errorf("the second screen shows %d pages, want 5", strings.Count(body, `<tr class="status-`))
	}
	if _, body := e.get("/pages?tag=t1&status=pending", e.readTok); strings.Count(body, `<tr class="status-`) != (pagesPerScreen+5)/2 {
		t.Errorf("tag t1: %d pages, want %d", strings.Count(body, `<tr class="status-`), (pagesPerScreen+5)/2)
	}
	if resp, _ := e.get("/pages?status=asleep", e.readTok); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad status filter: %d, want 400", resp.StatusCode)
	}

	// Check now makes the page due and returns to the list.
	if _, err := e.pool.Exec(ctx, `UPDATE pages SET next_check_at = now() + interval '1 hour' WHERE id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	resp, _ := e.form(fmt.Sprintf("/pages/%d/check", first.ID), e.writeTk, url.Values{"back": {"/pages?tag=t0"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/pages?") || !strings.Contains(resp.Header.Get("Location"), "tag=t0") {
		t.Errorf("check now: %d to %q, want back to the filtered list", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p, _ := e.st.Page(ctx, first.ID); time.Until(p.NextCheckAt) > 0 {
		t.Errorf("after check now the page is due at %s", p.NextCheckAt)
	}
	if resp, _ := e.form(fmt.Sprintf("/pages/%d/check", first.ID), e.writeTk, url.Values{"back": {"https://evil.example/"}}); resp.Header.Get("Location") != fmt.Sprintf("/pages/%d?done=checking&n=%d", first.ID, first.ID) {
		t.Errorf("check now with a foreign back: to %q, want the page itself", resp.Header.Get("Location"))
	}

	// Every delete goes through the trash: the API's too.
	if resp, _ := e.do("DELETE", fmt.Sprintf("/api/v1/pages/%d", first.ID), e.writeTk, ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("API delete: %d", resp.StatusCode)
	}
	_, b := e.do("GET", "/api/v1/trash", e.readTok, "")
	trash := decode[struct{ Pages []pageJSON }](t, b)
	if len(trash.Pages) != 1 || trash.Pages[0].ID != first.ID || trash.Pages[0].PurgeAt == nil {
		t.Fatalf("the trash after an API delete: %s", b)
	}
	if _, body := e.get("/", e.readTok); strings.Contains(body, "Fresh") {
		t.Error("the news of a trashed page is still in the river")
	}
	if _, body := e.get("/pages", e.readTok); !strings.Contains(body, `href="/trash">1 in the trash`) {
		t.Error("the list does not count the trash")
	}
	// Adding the URL again restores it, history and all.
	resp, b = e.do("POST", "/api/v1/pages", e.writeTk, fmt.Sprintf(`{"url":%q}`, first.URL))
	back := decode[pageJSON](t, b)
	if resp.StatusCode != http.StatusCreated || back.ID != first.ID || !back.Restored {
		t.Errorf("add of a trashed URL: %d %s; want page %d restored", resp.StatusCode, b, first.ID)
	}
	if _, body := e.get("/", e.readTok); strings.Count(body, "Fresh") != 4 {
		t.Error("the restored page's news did not come back")
	}
	if resp, _ := e.do("POST", fmt.Sprintf("/api/v1/trash/%d/restore", first.ID), e.writeTk, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("restore of a watched page: %d, want 404", resp.StatusCode)
	}
}

// A read token for feed readers is made from the page, shown once in the
// feeds' addresses; the feeds name themselves and RSS names each item's
// page feed.
func TestFeedsPageMakesAReadToken(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","name":"Alpha","tags":["desk"]}`)
	a := decode[pageJSON](t, b)
	e.insertUpdates(a.ID, 2, timeNow(), "Item")

	if _, body := e.get("/feeds", e.readTok); strings.Contains(body, `id="feed-token"`) || !strings.Contains(body, "/feeds/tags/desk.atom") {
		t.Error("a reader is offered to make tokens, or the tag's feed is not listed")
	}
	resp, body := e.form("/feeds", e.writeTk, url.Values{"name": {"my-reader"}})
	secret := regexp.MustCompile(`/feeds/all\.atom\?token=(pw_[A-Za-z0-9]+)`).FindStringSubmatch(body)
	if resp.StatusCode != 200 || secret == nil || !strings.Contains(body, `data-copy="f0-atom"`) {
		t.Fatalf("make a read token: %d, no feed address with the token and a copy button:\n%s", resp.StatusCode, body)
	}
	tok, err := e.st.VerifyToken(context.Background(), secret[1])
	if err != nil || tok.Name != "my-reader" || tok.Write {
		t.Fatalf("the token in the addresses: %+v, %v; want the read token my-reader", tok, err)
	}
	if resp, _ := e.form("/feeds", e.writeTk, url.Values{"name": {"my-reader"}}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a second token of the same name: %d, want 422", resp.StatusCode)
	}
	if resp, _ := e.form("/feeds", e.readTok, url.Values{"name": {"sneaky"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a read session making a token: %d, want 403", resp.StatusCode)
	}

	resp, b = e.do("GET", "/feeds/tags/desk.rss?token="+secret[1], "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("the tag's RSS with the new token: %d", resp.StatusCode)
	}
	var rss struct {
		Channel struct {
			Links []struct {
				Href string `xml:"href,attr"`
				Rel  string `xml:"rel,attr"`
			} `xml:"http://www.w3.org/2005/Atom link"`
			Items []struct {
				Source struct {
					URL  string `xml:"url,attr"`
					Name string `xml:",chardata"`
				} `xml:"source"`
			} `xml:"item"`
		} `xml:"channel"`
	}
	if err := xml.Unmarshal(b, &rss); err != nil {
		t.Fatal(err)
	}
	if len(rss.Channel.Links) != 1 || rss.Channel.Links[0].Rel != "self" || !strings.HasSuffix(rss.Channel.Links[0].Href, "/feeds/tags/desk.rss") {
		t.Errorf("RSS self link %+v, want the feed's own address without the token", rss.Channel.Links)
	}
	wantSource := fmt.Sprintf("/feeds/pages/%d.rss", a.ID)
	if len(rss.Channel.Items) != 2 || !strings.HasSuffix(rss.Channel.Items[0].Source.URL, wantSource) || rss.Channel.Items[0].Source.Name != "Alpha" {
		t.Errorf("RSS items' source %+v, want Alpha's own feed %s", rss.Channel.Items, wantSource)
	}
	_, b = e.do("GET", "/feeds/all.atom", e.readTok, "")
	feed, err := gofeed.NewParser().ParseString(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if feed.FeedLink == "" || !strings.HasSuffix(feed.FeedLink, "/feeds/all.atom") || !strings.HasSuffix(feed.Link, "/") {
		t.Errorf("Atom links: self %q, alternate %q", feed.FeedLink, feed.Link)
	}
}

// Errors of the web page are pages of the site, with its navigation.
func TestErrorPagesAreInTheLayout(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		method, path string
		status       int
		say          string
	}{
		{"GET", "/no/such/thing", 404, "There is nothing at /no/such/thing"},
		{"DELETE", "/pages", 405, "use GET, POST"},
		{"GET", "/pages/abc", 404, "not a page number"},
	} {
		resp, body := e.do(c.method, c.path, "", "", "Cookie", sessionCookie+"="+e.session(e.readTok))
		if resp.StatusCode != c.status || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") ||
			!strings.Contains(string(body), `<nav aria-label="Sections">`) || !strings.Contains(string(body), c.say) {
			t.Errorf("%s %s: %d %s, want %d in the layout saying %q\n%s", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.status, c.say, body)
		}
	}
	// The API keeps answering problems.
	if resp, _ := e.do("GET", "/api/v1/nothing", e.readTok, ""); resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("an API 404 is %s, want problem+json", resp.Header.Get("Content-Type"))
	}
}

// relativeTime says the times people read, and never splits the unit.
func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, "never"},
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-4 * time.Minute), "4 min ago"},
		{now.Add(3 * time.Minute), "in 3 min"},
		{now.Add(-5 * time.Hour), "5 h ago"},
		{now.Add(-3 * 24 * time.Hour), "3 days ago"},
		{now.Add(-40 * 24 * time.Hour), "on 23 Oct 2026"},
	} {
		if got := relativeTime(c.at, now); got != c.want {
			t.Errorf("relativeTime(%v) = %q, want %q", c.at, got, c.want)
		}
	}
}

// A page's empty news says why: not checked yet, its checks failing so far
// (no baseline, so not "its first check is its baseline"), or nothing new
// since its baseline.
func TestEmptyPageSaysWhyItHasNoNews(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a"}`)
	a := decode[pageJSON](t, b)
	path := fmt.Sprintf("/pages/%d", a.ID)
	if _, body := e.get(path, e.readTok); !strings.Contains(body, "Not checked yet") {
		t.Errorf("a page never checked does not say so:\n%s", body)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE pages SET last_checked_at = now(), last_error = 'connection refused', consecutive_failures = 2 WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	_, body := e.get(path, e.readTok)
	if !strings.Contains(body, "No check has succeeded yet") || strings.Contains(body, "first check records") || !strings.Contains(body, "The last 2 checks failed: connection refused") {
		t.Errorf("a page whose checks failed so far does not say so:\n%s", body)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE pages SET baseline_at = now(), last_error = NULL, consecutive_failures = 0 WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, body := e.get(path, e.readTok); !strings.Contains(body, "No new link since its first check") {
		t.Errorf("a page with a baseline and no news does not say so:\n%s", body)
	}
}

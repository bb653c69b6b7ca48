package web

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// form posts values to path as a browser does from the page itself.
func (e *env) form(path, session string, values url.Values, headers ...string) (*http.Response, string) {
	e.t.Helper()
	h := append([]string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin"}, headers...)
	if session != "" {
		h = append(h, "Cookie", sessionCookie+"="+e.session(session))
	}
	resp, b := e.do("POST", path, "", values.Encode(), h...)
	return resp, string(b)
}

func (e *env) get(path, session string) (*http.Response, string) {
	e.t.Helper()
	var h []string
	if session != "" {
		h = []string{"Cookie", sessionCookie + "=" + e.session(session)}
	}
	resp, b := e.do("GET", path, "", "", h...)
	return resp, string(b)
}

// session returns the id of a session signed in with the token secret,
// one a token, made on first use as the sign-in form makes it.
func (e *env) session(secret string) string {
	e.t.Helper()
	if id, ok := e.sessions[secret]; ok {
		return id
	}
	tok, err := e.st.VerifyToken(context.Background(), secret)
	if err != nil {
		e.t.Fatalf("sign in with %q: %v", secret, err)
	}
	id := rand.Text()
	if err := e.st.CreateSession(context.Background(), tok.Name, id, sessionMaxAge); err != nil {
		e.t.Fatal(err)
	}
	if e.sessions == nil {
		e.sessions = map[string]string{}
	}
	e.sessions[secret] = id
	return id
}

// noRedirects makes the env's client stop at redirects, so tests check
// where each one points.
func noRedirects(e *env) {
	e.srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
}

func TestSignInKeepsTheTokenInAStrictCookie(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	if resp, _ := e.get("/", ""); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin" {
		t.Errorf("GET / signed out: %d to %q, want 303 to /signin", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := e.form("/signin", "", url.Values{"token": {"pw_wrong"}})
	if resp.StatusCode != 401 || !strings.Contains(body, "not valid") || len(resp.Cookies()) != 0 {
		t.Errorf("sign-in with a bad token: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, _ = e.form("/signin", "", url.Values{"token": {e.writeTk}})
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", resp.StatusCode, cookies)
	}
	c := cookies[0]
	if c.Name != sessionCookie || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if strings.Contains(c.Value, e.writeTk) {
		t.Errorf("the cookie holds the token: %q", c.Value)
	}
	withCookie := []string{"Cookie", sessionCookie + "=" + c.Value}
	resp, b := e.do("GET", "/pages", "", "", withCookie...)
	body = string(b)
	if resp.StatusCode != 200 || !strings.Contains(body, "Watch a page") || !strings.Contains(body, "(writer)") {
		t.Errorf("GET /pages signed in: %d", resp.StatusCode)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q, want strict, scripts from this server's files only", csp)
	}
	// The one script is the site's own file; nothing inline.
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1)
	if len(scripts) != 1 || !strings.Contains(scripts[0], `src="/static/app.js?v=`) || strings.Contains(body, "style=") || strings.Contains(body, " onclick=") {
		t.Errorf("the page holds an inline script or style, which the policy forbids: %q", scripts)
	}
	if !strings.Contains(body, `name="viewport"`) {
		t.Error("no viewport: not usable on a phone")
	}
	resp, _ = e.do("POST", "/signout", "", "", append(withCookie, "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin")...)
	if len(resp.Cookies()) == 0 || resp.Cookies()[0].MaxAge >= 0 {
		t.Error("sign-out does not clear the cookie")
	}
	// Sign-out ends the session on the server: a copy of the cookie is
	// worth nothing after it.
	if resp, _ := e.do("GET", "/", "", "", withCookie...); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin" {
		t.Errorf("the signed-out cookie still opens the page: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	// A cookie that held the token itself, as before sessions, signs no one
	// in: the upgrade signs everyone out once.
	if resp, _ := e.do("GET", "/", "", "", "Cookie", sessionCookie+"="+e.writeTk); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a cookie holding the token opened the page: %d", resp.StatusCode)
	}
}

func TestFormsValidateLikeTheAPIAndRefuseCrossSitePosts(t *testing.T) {
	e := newEnv(t)
	noRedirects(e)
	w, r := e.writeTk, e.readTok

	resp, body := e.form("/pages", w, url.Values{"url": {"ftp://example.com/"}, "interval": {"5m"}})
	if resp.StatusCode != 422 || !strings.Contains(body, `id="url-error"`) || !strings.Contains(body, "scheme &#34;ftp&#34;") || !strings.Contains(body, `value="ftp://example.com/"`) {
		t.Errorf("bad URL: %d; want 422 with the reason beside the field and the input kept", resp.StatusCode)
	}
	resp, body = e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "interval": {"1s"}})
	if resp.StatusCode != 422 || !strings.Contains(body, "too short") {
		t.Errorf("short interval: %d", resp.StatusCode)
	}
	if resp, _ := e.form("/pages", r, url.Values{"url": {"http://127.0.0.1:9/"}}); resp.StatusCode != 403 {
		t.Errorf("add with a read-only session: %d, want 403", resp.StatusCode)
	}
	if resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}}, "Sec-Fetch-Site", "cross-site"); resp.StatusCode != 403 {
		t.Errorf("cross-site add: %d, want 403", resp.StatusCode)
	}
	if resp, _ := e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}}, "Origin", "https://evil.example", "Sec-Fetch-Site", ""); resp.StatusCode != 403 {
		t.Errorf("add from another origin: %d, want 403", resp.StatusCode)
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("refused forms wrote %d pages", n)
	}

	resp, _ = e.form("/pages", w, url.Values{"url": {"http://127.0.0.1:9/"}, "name": {"Local"}, "tags": {"a b"}, "interval": {"1m"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add: %d", resp.StatusCode)
	}
	pages, _ := e.st.Pages(context.Background())
	if len(pages) != 1 || pages[0].Name != "Local" || strings.Join(pages[0].Tags, ",") != "a,b" {
		t.Fatalf("added %+v", pages)
	}
	id := pages[0].ID
	path := fmt.Sprintf("/pages/%d", id)
	if resp, body := e.get(path, r); resp.StatusCode != 200 || !strings.Contains(body, "Local") || strings.Contains(body, `id="edit-page"`) {
		t.Errorf("page view with a read-only session: %d (edit form shown: %t)", resp.StatusCode, strings.Contains(body, `id="edit-page"`))
	}
	resp, body = e.form(path, w, url.Values{"name": {"Renamed"}, "tags": {"x"}, "interval": {"2m"}, "ignore": {"(\n"}})
	if resp.StatusCode != 422 || !strings.Contains(body, "missing closing") {
		t.Errorf("edit with a bad pattern: %d", resp.StatusCode)
	}
	if p, _ := e.st.Page(context.Background(), id); p.Name != "Local" {
		t.Errorf("a refused edit changed the page: %+v", p)
	}
	if resp, _ := e.form(path, w, url.Values{"name": {"Renamed"}, "tags": {"x"}, "interval": {"2m"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("edit: %d", resp.StatusCode)
	}
	if resp, _ := e.form(path+"/enabled", w, url.Values{"enabled": {"false"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("pause: %d", resp.StatusCode)
	}
	if p, _ := e.st.Page(context.Background(), id); p.Name != "Renamed" || p.Enabled || p.Interval.String() != "2m0s" {
		t.Errorf("after edit and pause: %+v", p)
	}
	if _, body := e.get("/pages", w); !strings.Contains(body, "paused") || !strings.Contains(body, "job_queue.dlq") {
		t.Error("the list shows neither the paused page nor the dead letters")
	}
	// Removing asks first, then moves the page to the trash.
	if resp, body := e.get(path+"/delete", w); resp.StatusCode != 200 || !strings.Contains(body, `id="confirm-delete"`) || e.pageCount() != 1 {
		t.Errorf("remove's confirmation: %d, %d pages (it must ask, not remove)", resp.StatusCode, e.pageCount())
	}
	if resp, _ := e.form(path+"/delete", w, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("remove: %d", resp.StatusCode)
	}
	if pages, _ := e.st.Pages(context.Background()); len(pages) != 0 {
		t.Errorf("after remove the page is still watched: %+v", pages)
	}
	if resp, body := e.get("/trash", w); resp.StatusCode != 200 || !strings.Contains(body, "Renamed") || !strings.Contains(body, fmt.Sprintf(`action="/trash/%d/restore"`, id)) {
		t.Errorf("the trash: %d, does not list the removed page with a restore button", resp.StatusCode)
	}
	if resp, body := e.get(path, w); resp.StatusCode != 404 || !strings.Contains(body, "trash") || !strings.Contains(body, `href="/pages"`) {
		t.Errorf("a trashed page: %d, want 404 in the layout pointing at the trash", resp.StatusCode)
	}
	if resp, _ := e.form(fmt.Sprintf("/trash/%d/restore", id), w, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("restore: %d", resp.StatusCode)
	}
	if resp, body := e.get(path, w); resp.StatusCode != 200 || !strings.Contains(body, "Renamed") {
		t.Errorf("the restored page: %d", resp.StatusCode)
	}
	if resp, body := e.get("/pages/999", w); resp.StatusCode != 404 || !strings.Contains(body, `<nav aria-label="Sections">`) {
		t.Errorf("missing page: %d, want a 404 page with the navigation", resp.StatusCode)
	}
}

func TestRiverSearchesAndFilters(t *testing.T) {
	e := newEnv(t, publicRead)
	noRedirects(e)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","name":"Alpha","tags":["local"]}`)
	a := decode[pageJSON](t, b)
	_, b = e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/b","name":"Beta"}`)
	beta := decode[pageJSON](t, b)
	e.insertUpdates(a.ID, 3, timeNow(), "Budget <vote>")
	e.insertUpdates(a.ID, 2, timeNow(), "Weather")
	e.insertUpdates(beta.ID, 1, timeNow(), "Harbour")
	resp, body := e.get("/?q=budget", "")
	if resp.StatusCode != 200 || strings.Count(body, "Budget &lt;vote&gt;") != 3 || strings.Contains(body, "Weather") {
		t.Errorf("search: %d\n%s", resp.StatusCode, body)
	}
	if _, body := e.get("/?tag=local", ""); !strings.Contains(body, "Weather") || strings.Contains(body, "Harbour") {
		t.Error("the river of a tag shows another page's news, or not its own")
	}
	if _, body := e.get(fmt.Sprintf("/?page=%d", beta.ID), ""); !strings.Contains(body, "News of Beta") || !strings.Contains(body, "Harbour") || strings.Contains(body, "Weather") {
		t.Error("the river of a page shows another page's news, or not its own")
	}
	for _, bad := range []string{"/?q=ab", "/?page=x", "/?cursor=nonsense"} {
		if resp, body := e.get(bad, ""); resp.StatusCode != 400 || !strings.Contains(body, `class="field-error"`) {
			t.Errorf("GET %s: %d, want 400 with the reason", bad, resp.StatusCode)
		}
	}
	if resp, _ := e.get("/?page=999", ""); resp.StatusCode != 404 {
		t.Errorf("the river of a missing page: %d, want 404", resp.StatusCode)
	}
	// The former updates page's address, bookmarked, lands on the river.
	if resp, _ := e.get("/updates?tag=local", ""); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/?tag=local" {
		t.Errorf("GET /updates?tag=local: %d to %q, want 301 to /?tag=local", resp.StatusCode, resp.Header.Get("Location"))
	}
}

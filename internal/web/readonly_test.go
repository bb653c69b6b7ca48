package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// readOnlyGrants are the grants README.md gives a read-only role of the web
// program; ROLE and DB stand for the role's and the database's names.
const readOnlyGrants = `
GRANT CONNECT ON DATABASE DB TO ROLE;
GRANT USAGE ON SCHEMA public TO ROLE;
GRANT SELECT ON pages, updates, removals, links, page_hours, api_tokens, goose_db_version TO ROLE;
GRANT SELECT ON subscriptions, deliveries TO ROLE;
GRANT SELECT ON articles, article_links, article_work TO ROLE;
GRANT SELECT ON events TO ROLE;
GRANT SELECT ON sources TO ROLE;
GRANT SELECT ON snapshots TO ROLE;
GRANT SELECT, INSERT, DELETE ON sessions TO ROLE;
GRANT SELECT, INSERT, UPDATE ON reader_marks TO ROLE;`

func TestReadPathsWorkWithAReadOnlyRole(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","tags":["t"]}`)
	a := decode[pageJSON](t, b)
	e.insertUpdates(a.ID, 3, time.Now(), "A")
	_, b = e.do("POST", "/api/v1/subscriptions", e.writeTk, `{"channel":"email","address":"desk@example.com"}`)
	sub := decode[subscriptionJSON](t, b)
	e.newsOf("http://127.0.0.1:9/news", false, time.Now().Add(-time.Hour), watch.NewLink{Key: 1, URL: "http://127.0.0.1:9/story", Text: "Story", Code: "s1"})
	e.insertRevision(a.ID, time.Now(), "http://127.0.0.1:9/story", "Old story", "New story")
	article := e.readArticles(func(string) (watch.Article, bool) { return story("Story"), true })["http://127.0.0.1:9/story"]

	u, err := url.Parse(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	role, db := "pwro_"+testsvc.ID(t), strings.TrimPrefix(u.Path, "/")
	if _, err := e.pool.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Privileges first, then the role: roles are cluster-wide.
		e.pool.Exec(context.Background(), "DROP OWNED BY "+role)
		if _, err := e.pool.Exec(context.Background(), "DROP ROLE "+role); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
	for _, stmt := range strings.Split(strings.TrimSpace(readOnlyGrants), "\n") {
		stmt = strings.NewReplacer("ROLE", role, "DB", db).Replace(stmt)
		if _, err := e.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	u.User = url.User(role)
	ro, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ro.Close)
	srv := e.serve(ro)

	for _, path := range []string{
		"/api/v1/pages", fmt.Sprintf("/api/v1/pages/%d", a.ID), "/api/v1/updates?tag=t&q=alp", "/api/v1/pages/export",
		"/feeds/all.atom", fmt.Sprintf("/feeds/pages/%d.rss", a.ID), "/feeds/tags/t.json",
		"/", "/?q=alp&tag=t&unread=1", "/pages", "/pages?status=failing&q=127", fmt.Sprintf("/pages/%d", a.ID), "/trash", "/feeds",
		"/api/v1/updates?content=full", fmt.Sprintf("/api/v1/articles/%d", article), "/feeds/all.atom?content=full",
		"/api/v1/removals", fmt.Sprintf("/api/v1/pages/%d/links", a.ID), fmt.Sprintf("/api/v1/pages/%d/links?state=removed", a.ID),
		fmt.Sprintf("/api/v1/pages/%d/revisions", a.ID), fmt.Sprintf("/feeds/pages/%d/revisions.atom", a.ID), "/api/v1/subscriptions", fmt.Sprintf("/api/v1/subscriptions/%d/deliveries", sub.ID), "/notifications",
	} {
		// Subscriptions are read with a write token; the database role is
		// read-only all the same.
		tok := e.readTok
		if strings.Contains(path, "subscriptions") || path == "/notifications" {
			tok = e.writeTk
		}
		resp, body := e.doAt(srv, "GET", path, tok, "")
		if resp.StatusCode != 200 {
			t.Errorf("GET %s as a read-only role: %d %.300s", path, resp.StatusCode, body)
			continue
		}
		if etag := resp.Header.Get("ETag"); etag != "" {
			if resp, _ := e.doAt(srv, "GET", path, e.readTok, "", "If-None-Match", etag); resp.StatusCode != 304 {
				t.Errorf("conditional GET %s as a read-only role: %d, want 304", path, resp.StatusCode)
			}
		}
	}
	// Signing in to the page, and out, is the role's one write.
	srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	form := []string{"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "same-origin"}
	resp, _ := e.doAt(srv, "POST", "/signin", "", "token="+e.readTok, form...)
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in as a read-only role: %d", resp.StatusCode)
	}
	cookie := []string{"Cookie", sessionCookie + "=" + resp.Cookies()[0].Value}
	if resp, body := e.doAt(srv, "GET", "/", "", "", cookie...); resp.StatusCode != 200 {
		t.Errorf("the page signed in as a read-only role: %d %.300s", resp.StatusCode, body)
	}
	// Marking the news read is a reader's write too.
	mark := encodeCursor(watch.Cursor{DiscoveredAt: time.Now(), ID: 1})
	if resp, body := e.doAt(srv, "POST", "/read", "", "mark="+mark, append(form, cookie...)...); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("mark all read as a read-only role: %d %.300s", resp.StatusCode, body)
	}
	if resp, _ := e.doAt(srv, "POST", "/signout", "", "", append(form, cookie...)...); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("sign-out as a read-only role: %d", resp.StatusCode)
	}

	// A write is refused by the database, and says so as a problem.
	if resp, _ := e.doAt(srv, "POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/b"}`); resp.StatusCode != 500 {
		t.Errorf("a write through a read-only role: %d, want 500", resp.StatusCode)
	}
}

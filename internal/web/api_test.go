package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func (e *env) pageCount() int {
	e.t.Helper()
	pages, err := e.st.Pages(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return len(pages)
}

func TestEveryRouteIsInTheDocument(t *testing.T) {
	router := openAPIRouter(t)
	s := &Server{}
	checked := 0
	for _, rt := range s.routes() {
		if !rt.api && !strings.HasPrefix(rt.pattern, "/feeds/") {
			continue
		}
		path := strings.NewReplacer("{id}", "7", "{file}", "7.atom").Replace(rt.pattern)
		req, _ := http.NewRequest(rt.method, "http://localhost"+path, nil)
		if _, _, err := router.FindRoute(req); err != nil {
			t.Errorf("%s %s is served but not in openapi.json: %v", rt.method, rt.pattern, err)
		}
		checked++
	}
	if checked < 12 {
		t.Fatalf("checked %d routes; the table has more", checked)
	}
}

func TestAPIAccess(t *testing.T) {
	e := newEnv(t)
	body := `{"url":"http://127.0.0.1:9/"}`
	for _, tt := range []struct {
		method, path, token, body string
		want                      int
	}{
		{"GET", "/api/v1/pages", "", "", 401},
		{"GET", "/api/v1/pages", "pw_wrong", "", 401},
		{"GET", "/api/v1/pages", e.readTok, "", 200},
		{"POST", "/api/v1/pages", "", body, 401},
		{"POST", "/api/v1/pages", e.readTok, body, 403},
		{"DELETE", "/api/v1/pages/1", e.readTok, "", 403},
		{"GET", "/api/v1/openapi.json", "", "", 200},
		{"GET", "/healthz", "", "", 404}, // no health handler in this test's Config
		{"GET", "/feeds/all.atom", "", "", 401},
		{"GET", "/feeds/all.atom?token=" + e.readTok, "", "", 200},
		{"GET", "/api/v1/updates?token=" + e.readTok, "", "", 401}, // ?token= is for feeds only
		{"GET", "/api/v1/nosuch", e.readTok, "", 404},
		{"PUT", "/api/v1/pages/1", e.writeTk, body, 405}, // PATCH edits a page
	} {
		resp, b := e.do(tt.method, tt.path, tt.token, tt.body)
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s with %q: %d, want %d: %s", tt.method, tt.path, tt.token, resp.StatusCode, tt.want, b)
		}
		if tt.want >= 400 && tt.path != "/healthz" && resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: error as %q, want application/problem+json", tt.method, tt.path, resp.Header.Get("Content-Type"))
		}
		if tt.want == 405 && resp.Header.Get("Allow") != "GET, PATCH, DELETE" {
			t.Errorf("%s %s: 405 with Allow %q, want GET, PATCH, DELETE", tt.method, tt.path, resp.Header.Get("Allow"))
		}
		if tt.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s %s: 401 without WWW-Authenticate", tt.method, tt.path)
		}
	}
	if n := e.pageCount(); n != 0 {
		t.Errorf("refused writes left %d pages", n)
	}

	pub := e.serve(e.st, publicRead)
	if resp, _ := e.doAt(pub, "GET", "/api/v1/pages", "", ""); resp.StatusCode != 200 {
		t.Errorf("public read: %d, want 200", resp.StatusCode)
	}
	if resp, _ := e.doAt(pub, "POST", "/api/v1/pages", "", body); resp.StatusCode != 401 {
		t.Errorf("public read, write without a token: %d, want 401", resp.StatusCode)
	}
	// Subscriptions name their receivers and hold their tokens: never
	// public, and not for read tokens, which travel in feed readers' URLs.
	for _, path := range []string{"/api/v1/subscriptions", "/api/v1/subscriptions/1/deliveries"} {
		if resp, _ := e.doAt(pub, "GET", path, "", ""); resp.StatusCode != 401 {
			t.Errorf("public read, GET %s without a token: %d, want 401", path, resp.StatusCode)
		}
		if resp, _ := e.doAt(pub, "GET", path, e.readTok, ""); resp.StatusCode != 403 {
			t.Errorf("public read, GET %s with a read token: %d, want 403", path, resp.StatusCode)
		}
		if resp, _ := e.doAt(pub, "GET", path, e.writeTk, ""); resp.StatusCode == 401 || resp.StatusCode == 403 {
			t.Errorf("public read, GET %s with a write token: %d", path, resp.StatusCode)
		}
	}
}

func TestAPIPagesCRUDAndBadInput(t *testing.T) {
	e := newEnv(t)
	w := e.writeTk
	// Every bad request is refused with its reason and writes nothing.
	for _, tt := range []struct {
		body  string
		want  int
		field string
		why   string
	}{
		{`{"url":`, 400, "", "unexpected EOF"},
		{`{"url":"http://127.0.0.1:9/","colour":"red"}`, 400, "", "colour"},
		{`{"url":"http://127.0.0.1:9/"} {}`, 400, "", "more than one"},
		{`{"url":"http://127.0.0.1:9/","interval":"often"}`, 400, "", "not a duration"},
		{`{"url":"ftp://example.com/"}`, 422, "url", `scheme "ftp"`},
		{`{"url":"http://127.0.0.1:9/","interval":"1s"}`, 422, "interval", "too short"},
		{`{"url":"http://127.0.0.1:9/","ignore":["("]}`, 422, "ignore", "missing closing"},
		{`{"url":"http://127.0.0.1:9/","tags":["a/b"]}`, 422, "tags", "letters, digits"},
		{`{"url":"http://127.0.0.1:9/","name":"` + strings.Repeat("n", 201) + `"}`, 422, "name", "the longest is 200"},
		{`{"url":"http://127.0.0.1:9/","tags":["` + strings.Repeat("t", 51) + `"]}`, 422, "tags", "the longest is 50"},
		{`{"url":"http://127.0.0.1:9/","tags":[` + manyTags(21) + `]}`, 422, "tags", "at most 20"},
		{`{"url":"http://127.0.0.1:9/","name":"` + strings.Repeat("n", maxBodyBytes) + `"}`, 413, "", "larger than"},
	} {
		resp, b := e.do("POST", "/api/v1/pages", w, tt.body)
		p := decode[problemDetails](t, b)
		if resp.StatusCode != tt.want || !strings.Contains(p.Detail, tt.why) || (tt.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tt.field)) {
			t.Errorf("POST %s: %d %+v; want %d naming %q (%s)", tt.body, resp.StatusCode, p, tt.want, tt.field, tt.why)
		}
	}
	if resp, _ := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/"}`, "Content-Type", "text/plain"); resp.StatusCode != 415 {
		t.Errorf("text/plain body: %d, want 415", resp.StatusCode)
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("bad requests wrote %d pages", n)
	}

	resp, b := e.do("POST", "/api/v1/pages", w, `{"url":"HTTP://127.0.0.1:9/news","name":"Local","tags":["News","local"],"interval":"1m","enabled":false}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	p := decode[pageJSON](t, b)
	if p.URL != "http://127.0.0.1:9/news" || p.Name != "Local" || !slices.Equal(p.Tags, []string{"local", "news"}) || p.Interval != "1m0s" || p.Enabled || p.Status != "paused" {
		t.Errorf("created %+v", p)
	}
	if loc := resp.Header.Get("Location"); loc != fmt.Sprintf("/api/v1/pages/%d", p.ID) {
		t.Errorf("Location %q", loc)
	}
	if resp, _ := e.do("POST", "/api/v1/pages", w, `{"url":"http://127.0.0.1:9/news"}`); resp.StatusCode != 409 {
		t.Errorf("second create: %d, want 409", resp.StatusCode)
	}
	path := fmt.Sprintf("/api/v1/pages/%d", p.ID)
	if resp, b := e.do("GET", path, e.readTok, ""); resp.StatusCode != 200 || decode[pageJSON](t, b).ID != p.ID {
		t.Errorf("get: %d %s", resp.StatusCode, b)
	}
	for _, missing := range []string{"/api/v1/pages/999", "/api/v1/pages/x", "/api/v1/pages/-1"} {
		if resp, _ := e.do("GET", missing, e.readTok, ""); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", missing, resp.StatusCode)
		}
	}
	for _, tt := range []struct {
		body string
		want int
	}{
		{`{}`, 400},
		{`{"interval":"5s"}`, 422},
		{`{"tags":["ok","not ok"]}`, 422},
	} {
		if resp, b := e.do("PATCH", path, w, tt.body); resp.StatusCode != tt.want {
			t.Errorf("PATCH %s: %d %s, want %d", tt.body, resp.StatusCode, b, tt.want)
		}
	}
	if resp, b := e.do("PATCH", "/api/v1/pages/999", w, `{"enabled":true}`); resp.StatusCode != 404 {
		t.Errorf("PATCH of a missing page: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("PATCH", path, w, `{"enabled":true,"name":"","tags":[],"interval":"2m","ignore":["\\?page="]}`)
	p = decode[pageJSON](t, b)
	if resp.StatusCode != 200 || !p.Enabled || p.Name != "" || p.DisplayName != "127.0.0.1:9" || len(p.Tags) != 0 || p.Interval != "2m0s" || len(p.Ignore) != 1 {
		t.Errorf("patch: %d %+v", resp.StatusCode, p)
	}
	resp, b = e.do("GET", "/api/v1/pages", e.readTok, "")
	if list := decode[struct{ Pages []pageJSON }](t, b); resp.StatusCode != 200 || len(list.Pages) != 1 || list.Pages[0].Status != "pending" {
		t.Errorf("list: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("DELETE", path, w, ""); resp.StatusCode != 204 {
		t.Errorf("delete: %d", resp.StatusCode)
	}
	if resp, _ := e.do("DELETE", path, w, ""); resp.StatusCode != 404 {
		t.Errorf("second delete: %d, want 404", resp.StatusCode)
	}
}

func TestAPIImportAndExport(t *testing.T) {
	e := newEnv(t)
	bad := "url,name,interval\nhttp://127.0.0.1:9/a,A,1m\nmailto:x@example.com,B,\nhttp://127.0.0.1:9/c,C,2s\n"
	resp, b := e.do("POST", "/api/v1/pages/import", e.writeTk, bad, "Content-Type", "text/csv")
	p := decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 2 || p.Errors[0].Row != 3 || p.Errors[1].Row != 4 {
		t.Fatalf("import of bad rows: %d %+v, want 422 naming rows 3 and 4", resp.StatusCode, p)
	}
	if n := e.pageCount(); n != 0 {
		t.Fatalf("a refused import wrote %d pages", n)
	}
	if resp, _ := e.do("POST", "/api/v1/pages/import", e.writeTk, "url\nhttp://127.0.0.1:9/a\n"); resp.StatusCode != 400 {
		t.Errorf("import without a format: %d, want 400", resp.StatusCode)
	}
	good := "url,name,tags\nhttp://127.0.0.1:9/a,A,x y\nhttp://127.0.0.1:9/b,B,\n"
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, good)
	if resp.StatusCode != 201 || len(decode[struct{ Pages []pageJSON }](t, b).Pages) != 2 {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("GET", "/api/v1/pages/export?format=opml", e.readTok, "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), `url="http://127.0.0.1:9/a"`) || !strings.Contains(resp.Header.Get("Content-Type"), "opml") {
		t.Errorf("export: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("GET", "/api/v1/pages/export?format=xls", e.readTok, ""); resp.StatusCode != 400 {
		t.Errorf("export as xls: %d, want 400", resp.StatusCode)
	}
}

// TestAPIImportAnswersLongListsInBounds: a list over MaxRows is refused as
// unreadable; a list of many bad rows names every one in errors and the
// first few in its detail; pages registered already are named bad rows; a
// good list is answered page by page.
func TestAPIImportAnswersLongListsInBounds(t *testing.T) {
	e := newEnv(t)
	var many strings.Builder
	many.WriteString("url\n")
	for i := range pagefile.MaxRows + 1 {
		fmt.Fprintf(&many, "http://127.0.0.1:9/p%d\n", i)
	}
	resp, b := e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, many.String())
	if p := decode[problemDetails](t, b); resp.StatusCode != 400 || p.Detail != "more than 10000 pages: import at most 10000 at a time" {
		t.Errorf("%d rows: %d %+v, want 400", pagefile.MaxRows+1, resp.StatusCode, p)
	}

	var bad strings.Builder
	bad.WriteString("url,interval\n")
	for i := range 25 {
		fmt.Fprintf(&bad, "http://127.0.0.1:9/b%d,soon\n", i)
	}
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, bad.String())
	p := decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 25 || p.Errors[24].Row != 26 || strings.Count(p.Detail, "\nrow ") != 10 ||
		!strings.HasSuffix(p.Detail, "\n… and 15 more") {
		t.Errorf("25 bad rows: %d %+v, want 422 naming 25 in errors, 10 in the detail", resp.StatusCode, p)
	}

	good := "url,tags\nhttp://127.0.0.1:9/a,x\nhttp://127.0.0.1:9/b,\n"
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, good)
	got := decode[struct{ Pages []pageJSON }](t, b).Pages
	if resp.StatusCode != 201 || len(got) != 2 || got[0].URL != "http://127.0.0.1:9/a" || fmt.Sprint(got[0].Tags) != "[x]" || got[1].ID != got[0].ID+1 {
		t.Fatalf("import: %d %s", resp.StatusCode, b)
	}
	resp, b = e.do("POST", "/api/v1/pages/import?format=csv", e.writeTk, "url\nhttp://127.0.0.1:9/c\nhttp://127.0.0.1:9/b\n")
	p = decode[problemDetails](t, b)
	if resp.StatusCode != 422 || len(p.Errors) != 1 || p.Errors[0].Row != 3 || !strings.Contains(p.Errors[0].Detail, "already watched") {
		t.Errorf("a list with a page watched already: %d %+v", resp.StatusCode, p)
	}
	if n := e.pageCount(); n != 2 {
		t.Errorf("%d pages, want the 2 of the good list", n)
	}
}

func TestAPIUpdatesFiltersAndCursor(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	resp, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","tags":["news"],"name":"A"}`)
	a := decode[pageJSON](t, b)
	_, b = e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/b"}`)
	bp := decode[pageJSON](t, b)
	if resp.StatusCode != 201 {
		t.Fatal(resp.StatusCode)
	}
	e.insertUpdates(a.ID, 30, now, "Alpha")
	e.insertUpdates(bp.ID, 30, now.Add(-time.Hour), "Beta")

	type list struct {
		Updates    []watch.Update
		NextCursor string `json:"next_cursor"`
	}
	seen := map[int64]bool{}
	cursor := ""
	for range 20 {
		resp, b := e.do("GET", "/api/v1/updates?limit=25&cursor="+cursor, e.readTok, "")
		if resp.StatusCode != 200 {
			t.Fatalf("updates: %d %s", resp.StatusCode, b)
		}
		l := decode[list](t, b)
		for _, u := range l.Updates {
			if seen[u.ID] {
				t.Fatalf("update %d twice across pages", u.ID)
			}
			seen[u.ID] = true
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	if len(seen) != 60 {
		t.Errorf("walked %d updates, want 60", len(seen))
	}
	since := now.Add(-10 * time.Second).Format(time.RFC3339)
	for q, want := range map[string]int{
		fmt.Sprintf("page=%d", bp.ID):       30,
		"tag=news":                          30,
		"tag=NEWS":                          30,
		"q=beta%201":                        11, // 1, 10-19
		"since=" + since:                    11,
		"until=" + since + "&tag=news":      19,
		"limit=1000":                        60,
		fmt.Sprintf("page=%d&q=beta", a.ID): 0,
	} {
		resp, b := e.do("GET", "/api/v1/updates?"+q, e.readTok, "")
		if got := len(decode[list](t, b).Updates); resp.StatusCode != 200 || got != want {
			t.Errorf("?%s: %d, %d updates, want %d", q, resp.StatusCode, got, want)
		}
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "page=0", "since=yesterday", "cursor=***", "cursor=bm90LWEtY3Vyc29y", "tag=a/b", "q=" + strings.Repeat("x", 201)} {
		resp, b := e.do("GET", "/api/v1/updates?"+q, e.readTok, "")
		if resp.StatusCode != 400 || !strings.Contains(string(b), "detail") {
			t.Errorf("?%s: %d, want 400 with a reason", q, resp.StatusCode)
		}
	}
	if _, err := e.st.Page(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	resp, b = e.do("GET", "/api/v1/dead-letters", e.readTok, "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "job is not JSON") {
		t.Errorf("dead letters: %d %s", resp.StatusCode, b)
	}
}

// manyTags returns n distinct tags as JSON strings.
func manyTags(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf(`"t%d"`, i)
	}
	return strings.Join(tags, ",")
}

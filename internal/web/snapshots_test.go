package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// archivedPage registers a page and archives and indexes two checks of it:
// a baseline, then a check with one new link whose body is the same
// (a revisit). It returns the page's id and the body as the site sent it.
func (e *env) archivedPage(html string) (int64, []byte) {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "https://portal.example/"})
	if err != nil {
		e.t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(html)) //nolint:errcheck // to memory
	zw.Close()             //nolint:errcheck // to memory
	w := archive.NewWriter(e.archive, archive.WriterConfig{})
	var orig *watch.SnapshotOriginal
	for i, urls := range [][]string{{"https://portal.example/a"}, {"https://portal.example/a", "https://portal.example/b"}} {
		cp := watch.Capture{URL: "https://portal.example/", Method: "GET", RequestURI: "/", Proto: "HTTP/1.1", Status: "200 OK",
			Header: http.Header{"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}}, Body: gz.Bytes(), At: time.Now()}
		ref, err := w.Write(ctx, archive.Check{PageID: p.ID, CheckID: watch.NewCheckID(), Capture: cp, Original: orig})
		if err != nil {
			e.t.Fatal(err)
		}
		links := make([]watch.NewLink, len(urls))
		for j, u := range urls {
			links[j] = watch.NewLink{Key: uint64(j + 1), URL: u, Text: u, Code: fmt.Sprint(j)}
		}
		rec, err := e.st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: time.Now().Add(time.Duration(i) * time.Second), Status: 200,
			FullSet: true, Snapshot: &ref}, links)
		if err != nil || rec.Snapshot == 0 {
			e.t.Fatalf("check %d: %+v %v", i, rec, err)
		}
		orig = &watch.SnapshotOriginal{RecordID: ref.RecordID, PayloadDigest: ref.PayloadDigest, TargetURI: ref.TargetURI, Date: ref.WrittenAt}
	}
	return p.ID, gz.Bytes()
}

func TestSnapshotsNeedATokenAndDownloadAsAttachments(t *testing.T) {
	t.Parallel()
	e := newEnv(t, publicRead)
	html := `<html><script>alert(document.cookie)</script><a href="/b">b</a></html>`
	id, _ := e.archivedPage(html)

	// Public reads do not open the pages as fetched.
	for _, path := range []string{fmt.Sprintf("/api/v1/pages/%d/snapshots", id), "/api/v1/snapshots/1"} {
		if resp, _ := e.do("GET", path, "", ""); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET %s without a token: %d, want 401 even with public reads", path, resp.StatusCode)
		}
	}
	resp, body := e.do("GET", fmt.Sprintf("/api/v1/pages/%d/snapshots", id), e.readTok, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	var list struct{ Snapshots []snapshotJSON }
	if err := json.Unmarshal(body, &list); err != nil || len(list.Snapshots) != 2 {
		t.Fatalf("list %s: %v", body, err)
	}
	newest, baseline := list.Snapshots[0], list.Snapshots[1]
	if !baseline.Baseline || newest.Updates != 1 || newest.RevisitOf != baseline.RecordID {
		t.Fatalf("snapshots %+v: want the baseline, then a revisit of it with one new link", list.Snapshots)
	}
	for _, s := range list.Snapshots {
		resp, got := e.do("GET", s.Body, e.readTok, "")
		h := resp.Header
		if resp.StatusCode != http.StatusOK || string(got) != html {
			t.Fatalf("GET %s: %d %q, want the stored body, decoded", s.Body, resp.StatusCode, got)
		}
		if h.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment;") ||
			h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") ||
			h.Get("X-Snapshot-Content-Type") != "text/html" {
			t.Fatalf("GET %s headers %v: want a sandboxed, unsniffed attachment", s.Body, h)
		}
	}
	if resp, _ := e.do("GET", "/api/v1/snapshots/999999", e.readTok, ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a snapshot that does not exist: %d", resp.StatusCode)
	}
	// The page view links each snapshot for a signed-in reader, and the
	// link downloads it.
	resp, page := e.do("GET", fmt.Sprintf("/pages/%d", id), e.readTok, "")
	link := fmt.Sprintf(`href="/snapshots/%d" download`, newest.ID)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), link) {
		t.Fatalf("page view without %s", link)
	}
	if resp, got := e.do("GET", fmt.Sprintf("/snapshots/%d", newest.ID), e.readTok, ""); resp.StatusCode != http.StatusOK || string(got) != html ||
		resp.Header.Get("Content-Security-Policy") == "" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("the page view's link: %d %v", resp.StatusCode, resp.Header)
	}
	resp, page = e.do("GET", fmt.Sprintf("/pages/%d", id), "", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(page), "/snapshots/") {
		t.Fatalf("an anonymous reader is shown the snapshots (%d)", resp.StatusCode)
	}
}

func TestSnapshotOverTheCapIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, _ := e.archivedPage(strings.Repeat("x", 2<<20))
	resp, body := e.do("GET", fmt.Sprintf("/api/v1/pages/%d/snapshots", id), e.readTok, "")
	var list struct{ Snapshots []snapshotJSON }
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != 200 || len(list.Snapshots) == 0 {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", list.Snapshots[0].Body, e.readTok, "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "watchctl archive export") {
		t.Fatalf("a body over the cap: %d %s", resp.StatusCode, body)
	}
}

// A rendered check's snapshot offers the DOM its scripts built beside the
// body as fetched, as the same kind of download; a plain fetch has none.
func TestRenderedSnapshotOffersItsDOM(t *testing.T) {
	t.Parallel()
	e := newEnv(t, publicRead)
	ctx := context.Background()
	plainID, _ := e.archivedPage(`<html><a href="/b">b</a></html>`)
	p, err := e.st.CreatePage(ctx, watch.PageSpec{URL: "https://scripted.example/", Render: true})
	if err != nil {
		t.Fatal(err)
	}
	dom := `<html><body><a href="/story">Inserted by a script</a><script>alert(1)</script></body></html>`
	cp := watch.Capture{URL: "https://scripted.example/", Method: "GET", RequestURI: "/", Proto: "HTTP/1.1", Status: "200 OK",
		Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`<html><script src=/app.js></script></html>`),
		Rendered: []byte(dom), At: time.Now()}
	ref, err := archive.NewWriter(e.archive, archive.WriterConfig{}).Write(ctx, archive.Check{PageID: p.ID, CheckID: watch.NewCheckID(), Capture: cp})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.RecordCheck(ctx, watch.Check{PageID: p.ID, FetchedAt: time.Now(), Status: 200, FullSet: true, Snapshot: &ref},
		[]watch.NewLink{{Key: 1, URL: "https://scripted.example/story", Text: "Inserted by a script", Code: "s"}}); err != nil {
		t.Fatal(err)
	}

	list := func(id int64) []snapshotJSON {
		t.Helper()
		resp, body := e.do("GET", fmt.Sprintf("/api/v1/pages/%d/snapshots", id), e.readTok, "")
		var out struct{ Snapshots []snapshotJSON }
		if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK || len(out.Snapshots) == 0 {
			t.Fatalf("list of page %d: %d %s", id, resp.StatusCode, body)
		}
		return out.Snapshots
	}
	snap := list(p.ID)[0]
	if snap.RenderedBytes != int64(len(dom)) || snap.RenderedBody != snap.Body+"/rendered" {
		t.Fatalf("rendered snapshot %+v: want its DOM's size and path", snap)
	}
	if resp, _ := e.do("GET", snap.RenderedBody, "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the DOM without a token: %d, want 401 even with public reads", resp.StatusCode)
	}
	resp, got := e.do("GET", snap.RenderedBody, e.readTok, "")
	h := resp.Header
	if resp.StatusCode != http.StatusOK || string(got) != dom {
		t.Fatalf("GET %s: %d %q, want the rendered DOM", snap.RenderedBody, resp.StatusCode, got)
	}
	if h.Get("Content-Type") != "application/octet-stream" || !strings.Contains(h.Get("Content-Disposition"), "-rendered.html") ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("GET %s headers %v: want a sandboxed, unsniffed attachment", snap.RenderedBody, h)
	}
	plain := list(plainID)[0]
	if plain.RenderedBytes != 0 || plain.RenderedBody != "" {
		t.Fatalf("plain snapshot %+v offers a DOM", plain)
	}
	resp, body := e.do("GET", plain.Body+"/rendered", e.readTok, "")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "not rendered") {
		t.Fatalf("the DOM of a plain fetch: %d %s; want 404 saying it was not rendered", resp.StatusCode, body)
	}
	resp, page := e.do("GET", fmt.Sprintf("/pages/%d", p.ID), e.readTok, "")
	if link := fmt.Sprintf(`href="/snapshots/%d/rendered" download`, snap.ID); resp.StatusCode != http.StatusOK || !strings.Contains(string(page), link) {
		t.Fatalf("page view without %s", link)
	}
	if resp, got := e.do("GET", fmt.Sprintf("/snapshots/%d/rendered", snap.ID), e.readTok, ""); resp.StatusCode != http.StatusOK || string(got) != dom {
		t.Fatalf("the page view's link: %d %q", resp.StatusCode, got)
	}
}

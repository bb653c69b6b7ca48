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

package archive_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/testkit/warcread"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s)) //nolint:errcheck // to memory
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func capture(body []byte, enc string) watch.Capture {
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}, "Server": {"farm"}}
	if enc != "" {
		h.Set("Content-Encoding", enc)
	}
	return watch.Capture{URL: "http://portal.test/p1/?a=1", Method: "GET", RequestURI: "/p1/?a=1", Host: "portal.test",
		RequestHeader: http.Header{"User-Agent": {"portalwatch"}, "Cookie": {"session=secret-value"}},
		Proto:         "HTTP/1.1", Status: "200 OK", Header: h, TransferEncoding: []string{"chunked"}, Body: body,
		At: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)}
}

func TestWriterRecordsReadBackIndependently(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := archive.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := archive.NewWriter(store, archive.WriterConfig{FileBytes: 1 << 20})
	body := gzipped(t, "<html><a href=/x>x</a></html>")
	first, err := w.Write(ctx, archive.Check{PageID: 7, CheckID: "c-1", Capture: capture(body, "gzip")})
	if err != nil {
		t.Fatal(err)
	}
	orig := &watch.SnapshotOriginal{RecordID: first.RecordID, PayloadDigest: first.PayloadDigest, TargetURI: first.TargetURI, Date: first.WrittenAt}
	second, err := w.Write(ctx, archive.Check{PageID: 7, CheckID: "c-2", Capture: capture(body, "gzip"), Original: orig})
	if err != nil {
		t.Fatal(err)
	}
	if second.RevisitOf != first.RecordID || second.File != first.File || second.Offset != first.Offset+first.Length {
		t.Fatalf("second ref %+v after %+v: want a revisit of the first, right after it", second, first)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, first.File))
	if err != nil {
		t.Fatalf("sealed file: %v", err)
	}
	recs := warcread.Read(t, data)
	var types []string
	for _, r := range recs {
		types = append(types, r.Header.Get("WARC-Type"))
	}
	if got := strings.Join(types, " "); got != "warcinfo request response metadata request revisit metadata" {
		t.Fatalf("records %s", got)
	}
	resp := recs[2]
	if !bytes.Equal(resp.Payload, body) {
		t.Fatalf("payload differs from the body sent")
	}
	if resp.Offset != first.Offset-0 && recs[1].Offset != first.Offset {
		t.Fatalf("the ref's offset %d is not its request's %d", first.Offset, recs[1].Offset)
	}
	line, h, err := warcread.HTTPHead(resp.Block)
	if err != nil || line != "HTTP/1.1 200 OK" || h.Get("Content-Encoding") != "gzip" || h.Get("Transfer-Encoding") != "" {
		t.Fatalf("response head %q %v %v", line, h, err)
	}
	_, reqH, err := warcread.HTTPHead(recs[1].Block)
	if err != nil || strings.Contains(string(recs[1].Block), "secret-value") || reqH.Get("Host") != "portal.test" {
		t.Fatalf("request record keeps a secret or lacks its host: %q", recs[1].Block)
	}
	meta := string(recs[3].Block)
	if !strings.Contains(meta, "portalwatch-page-id: 7\r\n") || !strings.Contains(meta, "portalwatch-check-id: c-1\r\n") {
		t.Fatalf("metadata %q", meta)
	}
	rv := recs[5].Header
	if rv.Get("WARC-Refers-To") != "<"+first.RecordID+">" || rv.Get("WARC-Payload-Digest") != first.PayloadDigest ||
		rv.Get("WARC-Profile") != "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest" {
		t.Fatalf("revisit header %v", rv)
	}

	// The library's own reader, through the index's refs.
	snap := watch.Snapshot{Ref: second, Original: &first}
	got, err := archive.ReadResponse(ctx, store, snap, 1<<20)
	if err != nil || !bytes.Equal(got.Payload, body) {
		t.Fatalf("read revisit: %v", err)
	}
	decoded, _, err := got.Decoded(1 << 20)
	if err != nil || string(decoded) != "<html><a href=/x>x</a></html>" {
		t.Fatalf("decoded %q %v", decoded, err)
	}
	if _, _, err := got.Decoded(5); err == nil {
		t.Fatal("a body over the cap was decoded")
	}
}

func TestWriterRotatesBySize(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := archive.NewWriter(store, archive.WriterConfig{FileBytes: 2000})
	files := map[string]bool{}
	for i := range 6 {
		ref, err := w.Write(ctx, archive.Check{PageID: 1, CheckID: "c", Capture: capture(bytes.Repeat([]byte{byte('a' + i)}, 3000), "")})
		if err != nil {
			t.Fatal(err)
		}
		files[ref.File] = true
	}
	list, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sealed := 0
	for _, f := range list {
		if f.Sealed {
			sealed++
		}
	}
	if len(files) < 3 || sealed != len(list)-1 {
		t.Fatalf("%d files written, %d of %d sealed: want rotation past 2000 bytes, one file open", len(files), sealed, len(list))
	}
}

// A rendered check keeps the DOM the browser built beside the response,
// as a resource record under its own URN: the snapshot still reads as the
// page as fetched, and the DOM is there for whoever needs what the check
// read its links from.
func TestRenderedDOMIsAResourceBesideTheResponse(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := archive.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := archive.NewWriter(store, archive.WriterConfig{FileBytes: 1 << 20})
	cp := capture([]byte(`<html><script src=/app.js></script></html>`), "")
	cp.Rendered = []byte(`<html><body><a href="/story">Inserted by a script</a></body></html>`)
	ref, err := w.Write(ctx, archive.Check{PageID: 9, CheckID: "c-r", Capture: cp})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ref.File))
	if err != nil {
		t.Fatal(err)
	}
	recs := warcread.Read(t, data)
	var types []string
	for _, r := range recs {
		types = append(types, r.Header.Get("WARC-Type"))
	}
	if got := strings.Join(types, " "); got != "warcinfo request response resource metadata" {
		t.Fatalf("records %s", got)
	}
	dom := recs[3]
	if !bytes.Equal(dom.Block, cp.Rendered) || dom.Header.Get("WARC-Target-URI") != archive.RenderedURI(cp.URL) ||
		dom.Header.Get("WARC-Concurrent-To") != "<"+ref.RecordID+">" || !strings.HasPrefix(dom.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("resource record %v %q", dom.Header, dom.Block)
	}
	got, err := archive.ReadResponse(ctx, store, watch.Snapshot{Ref: ref}, 1<<20)
	if err != nil || !bytes.Equal(got.Payload, cp.Body) {
		t.Fatalf("the snapshot reads %q, %v; want the document as fetched", got.Payload, err)
	}
	if ref.RenderedBytes != int64(len(cp.Rendered)) {
		t.Fatalf("ref says %d rendered bytes, want %d", ref.RenderedBytes, len(cp.Rendered))
	}
	if got, err := archive.ReadRendered(ctx, store, ref, 1<<20); err != nil || !bytes.Equal(got, cp.Rendered) {
		t.Fatalf("the rendered DOM reads %q, %v", got, err)
	}
	if _, err := archive.ReadRendered(ctx, store, ref, 10); !errors.Is(err, archive.ErrTooLarge) {
		t.Errorf("the DOM over a 10-byte cap: %v; want ErrTooLarge", err)
	}
	plain, err := w.Write(ctx, archive.Check{PageID: 9, CheckID: "c-p", Capture: capture([]byte(`<html>plain</html>`), "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.ReadRendered(ctx, store, plain, 1<<20); !errors.Is(err, archive.ErrNotRendered) {
		t.Errorf("a plain fetch read as rendered: %v; want ErrNotRendered", err)
	}
	// A ref that claims a DOM its range does not hold is corrupt, not empty.
	plain.RenderedBytes = 5
	if _, err := archive.ReadRendered(ctx, store, plain, 1<<20); !errors.Is(err, archive.ErrCorrupt) {
		t.Errorf("a range without the DOM its ref claims: %v; want ErrCorrupt", err)
	}
}

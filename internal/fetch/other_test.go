package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestFetchOtherKinds: a feed or a sitemap is returned as received under
// the types servers send them with; a type that cannot be one is refused
// as KindNotHTML naming the kind, and an HTML request still refuses XML.
func TestFetchOtherKinds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		w.Write([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><rss><channel><title>caf\xe9</title></channel></rss>`))
	}))
	defer srv.Close()
	c, err := New(Config{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		want   watch.ContentKind
		typ    string
		refuse bool
	}{
		{watch.ContentFeed, "application/rss+xml", false},
		{watch.ContentFeed, "text/xml; charset=ISO-8859-1", false},
		{watch.ContentFeed, "text/html", false},
		{watch.ContentFeed, "application/json", false},
		{watch.ContentFeed, "image/png", true},
		{watch.ContentSitemap, "application/x-gzip", false},
		{watch.ContentSitemap, "application/json", true},
		{watch.ContentHTML, "application/xml", true},
	} {
		res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/?type=" + url.QueryEscape(tt.typ), Want: tt.want})
		switch {
		case tt.refuse && (err == nil || watch.FetchKindOf(err) != KindNotHTML):
			t.Errorf("kind %d, %s: %v, want a refusal", tt.want, tt.typ, err)
		case !tt.refuse && (err != nil || len(res.Body) == 0 || res.Body[len(res.Body)-1] != '>' || len(res.HTML) != 0):
			t.Errorf("kind %d, %s: %v, body %q; want the body as received", tt.want, tt.typ, err, res.Body)
		}
	}
}

// TestFetchSitemapGzipFileBomb: a sitemap served as a gzip file
// (sitemap.xml.gz, no Content-Encoding) that unpacks to a GiB is cut at
// MaxBodyBytes after decompression, in bounded time and memory.
func TestFetchSitemapGzipFileBomb(t *testing.T) {
	bomb := zeroBomb(t, 1024)
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(bomb)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/news-sitemap.xml.gz", Want: watch.ContentSitemap})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	wantKind(t, err, KindTooLarge)
	if elapsed > 5*time.Second {
		t.Errorf("cutting the bomb took %v", elapsed)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 96<<20 {
		t.Errorf("allocated %d MiB while cutting the bomb", alloc>>20)
	}
}

// TestFetchSitemapStreamed: a request with Read gets the body as it
// arrives, a gzip file unpacked, within MaxBytes rather than MaxBodyBytes;
// past MaxBytes the fetch fails as too large, and a gzip file bomb read
// this way is inflated only up to the cap, never held.
func TestFetchSitemapStreamed(t *testing.T) {
	bomb := zeroBomb(t, 1024)
	var plain bytes.Buffer
	zw := gzip.NewWriter(&plain)
	zw.Write(bytes.Repeat([]byte("<url><loc>https://portal.example/story</loc></url>\n"), 100_000)) // 5 MB
	zw.Close()
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		if r.URL.Path == "/bomb.xml.gz" {
			w.Write(bomb)
			return
		}
		w.Write(plain.Bytes())
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, MaxBodyBytes: 1 << 20})
	count := func(n *int64) func(io.Reader, *url.URL) error {
		return func(r io.Reader, _ *url.URL) error {
			var err error
			*n, err = io.Copy(io.Discard, r)
			return err
		}
	}
	var n int64
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/news.xml.gz", Want: watch.ContentSitemap, Read: count(&n), MaxBytes: 50 << 20})
	if err != nil || n != int64(100_000*len("<url><loc>https://portal.example/story</loc></url>\n")) || res.Body != nil || res.Status != 200 {
		t.Fatalf("a 5 MB sitemap, gzipped, under a 50 MiB cap: %v, %d bytes read, body %d bytes held", err, n, len(res.Body))
	}
	_, err = c.Fetch(context.Background(), Request{URL: srv.URL + "/news.xml.gz", Want: watch.ContentSitemap, Read: count(&n), MaxBytes: 2 << 20})
	if fe := wantKind(t, err, KindTooLarge); !strings.Contains(fe.Error(), "body larger than 2097152 bytes") {
		t.Errorf("over the cap: %v", err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = c.Fetch(context.Background(), Request{URL: srv.URL + "/bomb.xml.gz", Want: watch.ContentSitemap, Read: count(&n), MaxBytes: 50 << 20})
	runtime.ReadMemStats(&after)
	wantKind(t, err, KindTooLarge)
	if n != 50<<20 {
		t.Errorf("the bomb was read for %d bytes, want the cap's %d", n, 50<<20)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a gzip file bomb streamed to a 50 MiB cap: %d KiB allocated", alloc>>10)
	if alloc > 4<<20 {
		t.Errorf("streaming the bomb allocated %d MiB: its body was held", alloc>>20)
	}
	if _, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/news.xml.gz", Want: watch.ContentSitemap,
		Read: func(io.Reader, *url.URL) error { return errors.New("not a sitemap") }}); err == nil || !strings.Contains(err.Error(), "not a sitemap") {
		t.Errorf("Read's own error: %v", err)
	}
}

package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
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

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDiscoverPrintsTheSources runs watchctl discover against a loopback
// portal: a table, JSON with --json, and without PORTALWATCH_ALLOW_PRIVATE
// a refusal with exit status 2 before any request.
func TestDiscoverPrintsTheSources(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<html><head><link rel="alternate" type="application/rss+xml" href="/rss"></head><body></body></html>`)
		case "/rss":
			w.Header().Set("Content-Type", "application/rss+xml")
			fmt.Fprint(w, `<rss version="2.0"><channel><title>Press</title><item><title>a</title></item></channel></rss>`)
		case "/robots.txt":
			fmt.Fprintf(w, "Sitemap: %s/news.xml\n", srv.URL)
		case "/news.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"><url><loc>https://x.example/a</loc><news:news/></url></urlset>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	allow := env{"PORTALWATCH_ALLOW_PRIVATE": "true", "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
	code, out, errOut := runCLI(t, allow, "discover", srv.URL+"/")
	if code != 0 || !strings.Contains(out, "feed (rss)") || !strings.Contains(out, "Press") || !strings.Contains(out, "news_sitemap") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, allow, "discover", "--json", srv.URL+"/")
	var res struct {
		Sources []struct{ Kind, URL string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Sources) != 2 {
		t.Fatalf("--json: exit %d:\n%s%s", code, out, errOut)
	}
	before := requests.Load()
	if code, _, errOut = runCLI(t, env{}, "discover", srv.URL+"/"); code != 2 || requests.Load() != before {
		t.Fatalf("a loopback page without PORTALWATCH_ALLOW_PRIVATE: exit %d, %d requests: %s", code, requests.Load()-before, errOut)
	}
}

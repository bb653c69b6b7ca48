package extractor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/extractor"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// The articles of a page that is fetched through a proxy are read through
// it too; a proxy the extractor does not know leaves the article to try
// again, with a detail that says what to do.
func TestArticlesGoThroughThePagesProxy(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	proxy := testsvc.StartForwardProxy(t)
	r := newRig(t, rigOptions{cfg: extractor.Config{Concurrency: 2}, proxies: "corp=" + proxy.URL})
	link := f.serve("/proxied", "text/html", story("Read through the proxy", 300))
	page := r.show(link)
	if _, err := r.pool.Exec(context.Background(), `UPDATE pages SET proxy = 'corp' WHERE id = $1`, page); err != nil {
		t.Fatal(err)
	}
	r.run(30 * time.Second)
	if o := r.outcome(link); o.status != "ok" || o.headline != "Read through the proxy" {
		t.Fatalf("article %+v", o)
	}
	if got := strings.Join(proxy.Requests(), " "); !strings.Contains(got, link) || !strings.Contains(got, "/robots.txt") {
		t.Fatalf("the proxy forwarded %q, want the article and its robots.txt", got)
	}

	other := f.serve("/elsewhere", "text/html", story("Behind an unknown proxy", 300))
	page = r.show(other)
	if _, err := r.pool.Exec(context.Background(), `UPDATE pages SET proxy = 'us' WHERE id = $1`, page); err != nil {
		t.Fatal(err)
	}
	r.runUntil("the article tried twice", func() bool { n, _ := r.workRow(other); return n >= 2 })
	if f.count("/elsewhere") != 0 {
		t.Fatal("the article of a page with an unknown proxy was fetched direct")
	}
	if r.workLeft() != 1 {
		t.Fatal("the work of an unknown proxy was given up instead of tried again")
	}
}

package crawler_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// publicNames answers news.example with a public address and
// intranet.example with a private one; the test proxy sends both to the
// test server on loopback.
type publicNames map[string]string

func (r publicNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func newProxiedService(t *testing.T, pub crawler.Publisher, proxies string) *crawler.Service {
	f, err := fetch.New(fetch.Config{Proxies: fetch.ProxyConfig{List: proxies}, IgnoreRobots: true,
		Resolver: publicNames{"news.example": "93.184.216.34", "intranet.example": "192.168.7.7"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.CloseIdleConnections)
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks", Discoverer: discover.Discoverer{Fetcher: f, Limits: discover.DefaultLimits}},
		f, pub, testsvc.Logger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// A job that names a proxy is checked through it; a private target is
// refused before the proxy hears of it; a proxy the crawler was not given
// fails the check (acked, one failed task) with what to do.
func TestJobsGoThroughTheirProxy(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Via") != testsvc.ProxyVia {
			http.Error(w, "direct", http.StatusForbidden)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/through">Through the proxy</a>`))
	})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	proxy := testsvc.StartForwardProxy(t)
	svc := newProxiedService(t, &recorder{}, "corp="+proxy.URL)

	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: "http://news.example:" + port + "/", Proxy: "corp"})
	if task.Failed() || len(task.Context) != 1 || !strings.HasSuffix(task.Context[0].URL, "/through") {
		t.Fatalf("through corp: %+v", task)
	}
	task = svc.Check(context.Background(), watch.Job{ID: 2, BaseURL: "http://intranet.example:" + port + "/", Proxy: "corp"})
	if !task.Failed() || !strings.Contains(task.Error, "192.168.7.7, a private address") {
		t.Fatalf("a private target: %+v", task)
	}
	if got := proxy.Requests(); len(got) != 1 || hits.Load() != 1 {
		t.Fatalf("the proxy forwarded %v, the site served %d; want the public page once", got, hits.Load())
	}

	pub := &recorder{}
	body, _ := json.Marshal(watch.Job{ID: 3, BaseURL: "http://news.example:" + port + "/", Proxy: "us"})
	if err := newProxiedService(t, pub, "corp="+proxy.URL).Handle(context.Background(), watch.Delivery{Body: body}); err != nil || len(pub.msgs) != 1 {
		t.Fatalf("Handle = %v, %d tasks; want the job acked with one failed task", err, len(pub.msgs))
	}
	task, err := watch.DecodeTask(pub.msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if !task.Failed() || !strings.Contains(task.Error, "proxy us is not in this program's PORTALWATCH_PROXIES (it names corp)") {
		t.Fatalf("unknown proxy: task error %q", task.Error)
	}
	if len(proxy.Requests()) != 1 {
		t.Fatal("a job with an unknown proxy reached the proxy")
	}
}

// A page watched through a proxy has its feeds discovered and checked
// through it too: a site that answers only the proxy shows its feed, and
// the feed's items arrive.
func TestSourcesOfAProxiedPageGoThroughItsProxy(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Via") != testsvc.ProxyVia {
			http.Error(w, "direct", http.StatusForbidden)
			return
		}
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<link rel="alternate" type="application/rss+xml" title="News" href="/feed.xml"><a href="/a">A</a>`))
		case "/feed.xml":
			w.Header().Set("Content-Type", "application/rss+xml")
			w.Write([]byte(`<rss version="2.0"><channel><title>News</title><item><title>Only in the feed</title><link>/feed-only</link></item></channel></rss>`))
		default:
			http.NotFound(w, r)
		}
	})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	proxy := testsvc.StartForwardProxy(t)
	svc := newProxiedService(t, &recorder{}, "corp="+proxy.URL)
	page := "http://news.example:" + port + "/"

	found := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: page, Proxy: "corp", Discover: true, Sources: []string{watch.SourcesFeeds}})
	if found.Failed() || len(found.Discovered) != 1 || found.Discovered[0].URL != page+"feed.xml" {
		t.Fatalf("discovery through corp: %+v; want the feed the site shows the proxy", found)
	}
	src := &watch.SourceRef{ID: 7, Kind: watch.SourceFeed, URL: found.Discovered[0].URL}
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: src.URL, PageURL: page, Source: src, Proxy: "corp"})
	if task.Failed() || len(task.Context) != 1 || task.Context[0].Text != "Only in the feed" {
		t.Fatalf("feed through corp: %+v", task)
	}
	if direct := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: src.URL, PageURL: page, Source: src}); !direct.Failed() {
		t.Fatalf("the same feed direct: %+v; want the site's refusal (the control)", direct)
	}
}

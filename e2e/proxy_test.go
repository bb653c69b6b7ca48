package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// TestPageIsCheckedThroughItsProxy: a page that answers only requests that
// came through the operator's proxy is registered with the real CLI and
// --proxy; a crawler whose PORTALWATCH_PROXIES lacks the proxy fails the
// check, saying so, and fetches nothing; one with the list checks the page
// and its robots.txt through the proxy on loopback, and the page's new
// links are recorded. The proxy's password is printed by no program.
func TestPageIsCheckedThroughItsProxy(t *testing.T) {
	t.Parallel()
	proxy := testsvc.StartForwardProxy(t)
	proxy.User, proxy.Password = "crawler", "pr0xy-s3cret"
	proxyURL := strings.Replace(proxy.URL, "http://", "http://crawler:pr0xy-s3cret@", 1)
	sys := newSystem(t, "PORTALWATCH_PROXIES=corp="+proxyURL)
	var stories atomic.Int64
	stories.Store(1)
	var direct atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Via") != testsvc.ProxyVia {
			direct.Add(1)
			http.Error(w, "only through the proxy", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nAllow: /\n")
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><title>Behind the proxy</title><ul>")
		for i := stories.Load(); i > 0; i-- {
			fmt.Fprintf(w, "<li><a href=\"/story/%d\">Story %d</a></li>", i, i)
		}
		fmt.Fprint(w, "</ul>")
	}))
	t.Cleanup(site.Close)

	id := sys.add(site.URL+"/", "--interval", "10s", "--proxy", "corp")
	sys.start("scheduler")
	sys.start("processor")
	without := sys.Start("crawler", "PORTALWATCH_PROXIES=")
	testsvc.Eventually(t, 60*time.Second, "a failed check of the page by the crawler without the proxy", func() (bool, error) {
		var failures int
		var lastError string
		err := sys.db.QueryRow(t.Context(), `SELECT consecutive_failures, coalesce(last_error, '') FROM pages WHERE id = $1`, id).Scan(&failures, &lastError)
		return failures > 0 && strings.Contains(lastError, "proxy corp is not in this program's PORTALWATCH_PROXIES"), err
	})
	if n := len(proxy.Requests()) + int(direct.Load()); n != 0 {
		t.Fatalf("the crawler without the proxy fetched %d times", n)
	}
	if code, killed := without.Stop(20 * time.Second); code != 0 || killed {
		t.Fatalf("the crawler without the proxy stopped with %d (killed %t)", code, killed)
	}

	with := sys.start("crawler")
	sys.checkNow(id)
	testsvc.Eventually(t, 60*time.Second, "the baseline through the proxy", sys.baselineDone(id))
	stories.Store(2)
	testsvc.Eventually(t, 60*time.Second, "the new story", func() (bool, error) { return len(sys.updates()) == 1, nil })
	if u := sys.updates()[0]; u.URL != site.URL+"/story/2" || u.Text != "Story 2" {
		t.Fatalf("update %+v", u)
	}
	got := proxy.Requests()
	if direct.Load() != 0 || proxy.Refused() != 0 || !slices.Contains(got, site.URL+"/robots.txt") || !slices.Contains(got, site.URL+"/") {
		t.Fatalf("%d fetches came direct, %d were refused by the proxy; the proxy forwarded %v", direct.Load(), proxy.Refused(), got)
	}
	out, err := sys.watchctl("list", "--json")
	if err != nil || !strings.Contains(out, `"proxy":"corp"`) {
		t.Fatalf("watchctl list --json: %v\n%s", err, out)
	}
	for _, text := range []string{out, without.Output(), with.Output()} {
		if strings.Contains(text, "pr0xy-s3cret") {
			t.Fatalf("a program printed the proxy's password:\n%s", text)
		}
	}
}

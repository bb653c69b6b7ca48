package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// e2eSecretsKey is 32 bytes of "k", in base64.
const e2eSecretsKey = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="

// TestCookieTravelsSealedToTheCrawler: a page that answers only with the
// right cookie and language is registered with the real CLI; a crawler
// without the key fails its check on the page, saying so, and fetches
// nothing; one with the key opens the sealed cookie the scheduler copied
// into the job, and the page is watched as any other. robots.txt never sees
// the cookie, and no program prints it.
func TestCookieTravelsSealedToTheCrawler(t *testing.T) {
	t.Parallel()
	sys := newSystem(t, "PORTALWATCH_SECRETS_KEY="+e2eSecretsKey)
	var stories atomic.Int64
	stories.Store(1)
	var pages, refused, robotsWithCookie atomic.Int64
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			if r.Header.Get("Cookie") != "" || r.Header.Get("Authorization") != "" {
				robotsWithCookie.Add(1)
			}
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Cookie") != "session=s3cr3t" || r.Header.Get("Accept-Language") != "de" {
			refused.Add(1)
			http.Error(w, "sign in first", http.StatusForbidden)
			return
		}
		pages.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!DOCTYPE html><title>Members</title><ul>")
		for i := stories.Load(); i > 0; i-- {
			fmt.Fprintf(w, "<li><a href=\"/members/%d\">Members: story %d</a></li>", i, i)
		}
		fmt.Fprint(w, "</ul>")
	}))
	t.Cleanup(gate.Close)

	id := sys.add(gate.URL+"/", "--interval", "10s", "--header", "Cookie: session=s3cr3t", "--header", "Accept-Language: de")
	sys.start("scheduler")
	sys.start("processor")
	keyless := sys.Start("crawler", "PORTALWATCH_SECRETS_KEY=")

	testsvc.Eventually(t, 60*time.Second, "a failed check of the page by the crawler without the key", func() (bool, error) {
		var failures int
		var lastError string
		err := sys.db.QueryRow(t.Context(), `SELECT consecutive_failures, coalesce(last_error, '') FROM pages WHERE id = $1`, id).Scan(&failures, &lastError)
		return failures > 0 && strings.Contains(lastError, "PORTALWATCH_SECRETS_KEY"), err
	})
	if n := pages.Load() + refused.Load(); n != 0 {
		t.Fatalf("the crawler without the key fetched the page %d times", n)
	}
	if code, killed := keyless.Stop(20 * time.Second); code != 0 || killed {
		t.Fatalf("the crawler without the key stopped with %d (killed %t)", code, killed)
	}

	keyed := sys.start("crawler")
	sys.checkNow(id)
	testsvc.Eventually(t, 60*time.Second, "the baseline through the cookie", sys.baselineDone(id))
	stories.Store(2)
	testsvc.Eventually(t, 60*time.Second, "the new story", func() (bool, error) { return len(sys.updates()) == 1, nil })
	if u := sys.updates()[0]; u.URL != gate.URL+"/members/2" || u.Text != "Members: story 2" {
		t.Fatalf("update %+v", u)
	}
	if refused.Load() != 0 || robotsWithCookie.Load() != 0 {
		t.Fatalf("%d fetches without the cookie or language, %d robots.txt fetches with it", refused.Load(), robotsWithCookie.Load())
	}
	out, err := sys.watchctl("list", "--json")
	if err != nil || !strings.Contains(out, `"Cookie":"(set)"`) {
		t.Fatalf("watchctl list --json: %v\n%s", err, out)
	}
	for _, text := range []string{out, keyless.Output(), keyed.Output()} {
		if strings.Contains(text, "s3cr3t") {
			t.Fatalf("a program printed the cookie:\n%s", text)
		}
	}
}

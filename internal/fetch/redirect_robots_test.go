package fetch

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// A redirect to another host obeys that host's robots.txt: a disallowed
// target is not fetched, and the error says whose robots.txt refused it.
func TestRedirectObeysTheTargetsRobots(t *testing.T) {
	target, targetURL := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	start, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r) // the first host allows everything
			return
		}
		http.Redirect(w, r, targetURL+r.URL.Path, http.StatusFound)
	}))
	c, _ := newRobotsClient(t, Config{MaxRedirects: DefaultMaxRedirects})

	res, err := c.Fetch(context.Background(), Request{URL: start.URL + "/private"})
	fe := wantKind(t, err, KindDisallowed)
	if want := "redirect to " + targetURL + "/private: disallowed by " + targetURL + "/robots.txt"; !strings.Contains(fe.Error(), want) {
		t.Errorf("error %q, want it to contain %q", fe.Error(), want)
	}
	if fe.URL != start.URL+"/private" || res.Status != http.StatusFound {
		t.Errorf("error URL %q, status %d; want the URL asked for and the redirect's 302", fe.URL, res.Status)
	}
	if n := target.pageHits.Load(); n != 0 {
		t.Errorf("the disallowed target was fetched %d times", n)
	}

	// An allowed path on the same target is fetched.
	if _, err := c.Fetch(context.Background(), Request{URL: start.URL + "/news"}); err != nil {
		t.Fatal(err)
	}
	if n := target.pageHits.Load(); n != 1 {
		t.Errorf("the allowed target was fetched %d times, want 1", n)
	}
}

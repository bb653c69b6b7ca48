package crawler_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// A task says what the health of its page is judged on: the links kept
// after the options, and the Within selectors when none matched.
func TestTaskCarriesWhatHealthIsJudgedOn(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<div id="news"><a href="/a">A</a><a href="/b">B</a></div><nav><a href="/about">About</a></nav>
			<a href="https://elsewhere.example/">Out</a>`))
	})
	svc := newService(t, &recorder{})
	ctx := context.Background()
	base := srv.URL + "/"
	task := svc.Check(ctx, watch.Job{ID: 1, BaseURL: base, Options: &watch.LinkOptions{SameSiteOnly: true}})
	if task.Kept == nil || *task.Kept != 3 || task.MissedRegions != nil || task.Reading() == nil {
		t.Fatalf("same-site check: kept %v, missed %v; want 3 kept and no region missed", task.Kept, task.MissedRegions)
	}
	task = svc.Check(ctx, watch.Job{ID: 1, BaseURL: base, Options: &watch.LinkOptions{Within: []string{"#news"}}})
	if task.Kept == nil || *task.Kept != 2 || task.MissedRegions != nil {
		t.Fatalf("region that matches: kept %v, missed %v; want 2 kept", task.Kept, task.MissedRegions)
	}
	within := []string{"#latest", ".headlines"}
	task = svc.Check(ctx, watch.Job{ID: 1, BaseURL: base, Options: &watch.LinkOptions{Within: within}})
	r := task.Reading()
	if task.Failed() || r == nil || r.Kept != 0 || !slices.Equal(r.MissedRegions, within) {
		t.Fatalf("regions that match nothing: %+v, want a successful check with 0 kept and both regions missed", task)
	}
	// An unchanged set carries its count, but is not judged again: its
	// links are the set already judged.
	task = svc.Check(ctx, watch.Job{ID: 1, BaseURL: base, Options: &watch.LinkOptions{Within: within},
		LinksDigest: shortlink.SetDigest(nil, nil)})
	if !task.Unchanged || task.Kept == nil || *task.Kept != 0 || task.Reading() != nil {
		t.Fatalf("an unchanged check: %+v, want its count and no reading", task)
	}
}

// A challenge page served with 200 is not the page: the check fails, names
// the vendor, and records none of its links.
func TestChallengePageFailsTheCheck(t *testing.T) {
	t.Parallel()
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>
			<noscript>Enable JavaScript and cookies to continue</noscript>
			<script>window._cf_chl_opt={cvId:'3'};</script><script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script>
			<a href="https://www.cloudflare.com/">Cloudflare</a></body></html>`))
	})
	svc := newService(t, &recorder{})
	task := svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: srv.URL + "/"})
	if !task.Failed() || task.Challenge != "Cloudflare" || len(task.Context) != 0 || task.Reading() != nil {
		t.Fatalf("challenge page: %+v, want a failed check naming Cloudflare, without links", task)
	}
	if !strings.Contains(task.Error, "challenge page") || !strings.Contains(task.Error, srv.URL) {
		t.Errorf("error %q does not say the page answered with a challenge", task.Error)
	}
	if reason, detail := watch.BlockOf(task.Status, task.Challenge); reason != watch.Challenge || detail == "" {
		t.Errorf("BlockOf = %q %q, want challenge", reason, detail)
	}
}

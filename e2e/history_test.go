package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// replayedSites are the histories replayed, with the per-page ignore
// patterns that heise.de needs: its rotating ad links (doubleclick click
// URLs and ?source=hbsad banners) are churn no generic rule may remove. See
// internal/crawler/history_test.go for what churns on each site and why.
var replayedSites = []struct {
	site   string
	ignore []string
}{
	{site: "christiandailyreporter.com"},
	{site: "frontpage-archive_fr.de"},
	{site: "frontpage-archive_heise.de", ignore: []string{`^https?://pubads\.g\.doubleclick\.net/`, `[?&]source=hbsad(&|$)`}},
}

// historyServer serves each site's current snapshot at /<site>/, with the
// Content-Type it was recorded with.
type historyServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	sites map[string][]corpus.Snapshot
	step  map[string]int
}

func newHistoryServer(t *testing.T) *historyServer {
	h := &historyServer{sites: map[string][]corpus.Snapshot{}, step: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *historyServer) url(site string) string { return h.srv.URL + "/" + site + "/" }

func (h *historyServer) setSnapshots(site string, snaps []corpus.Snapshot) {
	h.mu.Lock()
	h.sites[site], h.step[site] = snaps, 0
	h.mu.Unlock()
}

func (h *historyServer) setStep(site string, i int) {
	h.mu.Lock()
	h.step[site] = i
	h.mu.Unlock()
}

func (h *historyServer) serve(w http.ResponseWriter, r *http.Request) {
	site := strings.Trim(r.URL.Path, "/")
	h.mu.Lock()
	snaps, ok := h.sites[site]
	i := h.step[site]
	h.mu.Unlock()
	if !ok || strings.Count(r.URL.Path, "/") != 2 {
		http.NotFound(w, r)
		return
	}
	if ct := snaps[i].ContentType; ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Write(snaps[i].Body)
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, string, ...watch.Message) error { return nil }

// expectedUpdates replays a history through the crawler's extraction path
// (crawler.Service.Check: fetch.DecodeHTML, domwalk.Parse, urlnorm, the page's
// ignore patterns) with the page URL the running system fetches, and returns
// the links that are new relative to all earlier steps, from step 1 on (step
// 0 is the baseline), each with its text at the step it appeared.
func expectedUpdates(pageID int64, pageURL string, snaps []corpus.Snapshot, ignore []string) ([]update, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, err
	}
	f := &systest.SnapshotFetcher{PageURL: u}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, nopPublisher{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	var opts *watch.LinkOptions
	if len(ignore) > 0 {
		opts = &watch.LinkOptions{Ignore: ignore}
	}
	seen := map[string]bool{}
	var want []update
	for i, snap := range snaps {
		f.Snap = snap
		task := svc.Check(context.Background(), watch.Job{ID: pageID, BaseURL: pageURL, Options: opts})
		if task.Failed() {
			return nil, fmt.Errorf("replay %s: %s", snap.Name, task.Error)
		}
		for _, l := range task.Context {
			if !seen[l.URL] && i > 0 {
				want = append(want, update{pageID, l.URL, l.Text})
			}
			seen[l.URL] = true
		}
	}
	return want, nil
}

// TestHistoryReplay serves three real homepage histories to the running
// system, one snapshot after another at one URL per site, forces a check per
// snapshot, and checks that updates holds exactly the links that each step
// added to all earlier ones, as the extraction path computes them: nothing
// missing, nothing extra, nothing twice.
func TestHistoryReplay(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	web := newHistoryServer(t)
	type page struct {
		site  string
		id    int64
		snaps []corpus.Snapshot
		want  []update
		err   error
	}
	var (
		pages    []*page
		expected sync.WaitGroup
	)
	defer expected.Wait()
	steps := 0
	for _, s := range replayedSites {
		snaps := corpus.History(t, s.site)
		web.setSnapshots(s.site, snaps)
		args := []string{"--interval", "1h"}
		for _, p := range s.ignore {
			args = append(args, "--ignore", p)
		}
		p := &page{site: s.site, id: sys.add(web.url(s.site), args...), snaps: snaps}
		pages = append(pages, p)
		steps = max(steps, len(snaps))
		// The expected updates are worked out while the system runs.
		expected.Go(func() {
			p.want, p.err = expectedUpdates(p.id, web.url(p.site), p.snaps, s.ignore)
		})
	}
	start := time.Now()
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("crawler")
	sys.start("processor")
	for _, p := range pages {
		testsvc.Eventually(t, 60*time.Second, "the baseline of "+p.site, sys.baselineDone(p.id))
		sys.checkSucceeded(p.id)
	}
	if got := sys.updates(); len(got) != 0 {
		t.Fatalf("the baselines recorded %d updates, want none: %v", len(got), got)
	}

	// One step at a time: every site still in its history moves to its next
	// snapshot and is checked once, all sites at the same time.
	for i := 1; i < steps; i++ {
		var ids []int64
		for _, p := range pages {
			if i < len(p.snaps) {
				web.setStep(p.site, i)
				ids = append(ids, p.id)
			}
		}
		sys.waitForChecks(ids...)
		for _, id := range ids {
			sys.checkSucceeded(id)
		}
	}
	t.Logf("%d steps of %d sites replayed in %s", steps, len(pages), time.Since(start).Round(time.Millisecond))

	expected.Wait()
	got := sys.updates()
	var want []update
	for _, p := range pages {
		if p.err != nil {
			t.Fatal(p.err)
		}
		want = append(want, p.want...)
		n := 0
		for _, u := range got {
			if u.PageID == p.id {
				n++
			}
		}
		t.Logf("%s: %d snapshots, %d updates (want %d)", p.site, len(p.snaps), n, len(p.want))
	}
	less := func(a, b update) int {
		if c := a.PageID - b.PageID; c != 0 {
			return int(c)
		}
		return strings.Compare(a.URL, b.URL)
	}
	slices.SortFunc(got, less)
	slices.SortFunc(want, less)
	for i := 1; i < len(got); i++ {
		if got[i].PageID == got[i-1].PageID && got[i].URL == got[i-1].URL {
			t.Errorf("update recorded twice: %v", got[i])
		}
	}
	gotSet, wantSet := map[update]bool{}, map[update]bool{}
	for _, u := range got {
		gotSet[u] = true
	}
	for _, u := range want {
		wantSet[u] = true
	}
	for _, u := range want {
		if !gotSet[u] {
			t.Errorf("missing update: %v", u)
		}
	}
	for _, u := range got {
		if !wantSet[u] {
			t.Errorf("unexpected update: %v", u)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d updates, want %d", len(got), len(want))
	}
}

// waitForChecks makes the pages due at once and waits until each has a
// check that started after that: each page is checked with what is being
// served now.
func (s *system) waitForChecks(ids ...int64) {
	s.t.Helper()
	before := time.Now()
	for _, id := range ids {
		s.checkNow(id)
	}
	testsvc.Eventually(s.t, 60*time.Second, fmt.Sprintf("new checks of pages %v", ids), func() (bool, error) {
		for _, id := range ids {
			t, err := s.lastChecked(id)
			if err != nil || t.IsZero() || !t.After(before) {
				return false, err
			}
		}
		return true, nil
	})
}

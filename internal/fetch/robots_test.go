package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/temoto/robotstxt"
)

// fakeClock is a Client clock whose sleeps return at once and advance it.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func (f *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slept = append(f.slept, d)
	if d > 0 {
		f.t = f.t.Add(d)
	}
	return ctx.Err()
}

func (f *fakeClock) Slept() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.slept...)
}

// robotsSite serves a configurable robots.txt and HTML pages, and counts
// requests for each.
type robotsSite struct {
	mu          sync.Mutex
	status      int
	body        string
	robotsHits  atomic.Int64
	pageHits    atomic.Int64
	robotsBlock chan struct{} // when set, robots.txt waits for it to close
}

func (s *robotsSite) set(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

func (s *robotsSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		s.robotsHits.Add(1)
		s.mu.Lock()
		status, body, block := s.status, s.body, s.robotsBlock
		s.mu.Unlock()
		if block != nil {
			select {
			case <-block:
			case <-r.Context().Done():
				return
			}
		}
		if status >= 300 && status < 400 {
			http.Redirect(w, r, "/robots.txt", status) // a redirect loop
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, body)
		return
	}
	s.pageHits.Add(1)
	htmlHandler(testPage)(w, r)
}

func newRobotsSite(t *testing.T, status int, body string) (*robotsSite, string) {
	s := &robotsSite{status: status, body: body}
	srv, _ := newServer(t, s)
	return s, srv.URL
}

func newRobotsClient(t *testing.T, cfg Config) (*Client, *fakeClock) {
	cfg.AllowPrivate = true
	c := newClient(t, cfg)
	clock := newFakeClock()
	c.now, c.sleep = clock.Now, clock.Sleep
	return c, clock
}

func TestRobotsRules(t *testing.T) {
	site, base := newRobotsSite(t, 200, `# comment
User-agent: *
Disallow: /

User-agent: portalwatch
Disallow: /private
Allow: /private/ok
Disallow: /*?session=
`)
	c, _ := newRobotsClient(t, Config{})
	ctx := context.Background()
	for path, allowed := range map[string]bool{
		"/":                true,
		"/news/today.html": true,
		"/private":         false,
		"/private/secret":  false,
		"/private/ok/page": true,
		"/page?session=42": false,
		"/page?other=42":   true,
	} {
		before := site.pageHits.Load()
		_, err := c.Fetch(ctx, Request{URL: base + path})
		if allowed {
			if err != nil {
				t.Errorf("%s: %v, want allowed", path, err)
			}
			continue
		}
		wantKind(t, err, KindDisallowed)
		want := fmt.Sprintf("%s%s: disallowed by %s/robots.txt for \"portalwatch\"", base, path, base)
		if err.Error() != want {
			t.Errorf("message = %q\nwant      %q", err, want)
		}
		if site.pageHits.Load() != before {
			t.Errorf("%s: the disallowed page was fetched", path)
		}
	}
	if n := site.robotsHits.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1", n)
	}

	// Another agent falls into the "*" group.
	other, _ := newRobotsClient(t, Config{UserAgent: "otherbot/2.0"})
	_, err := other.Fetch(ctx, Request{URL: base + "/news/today.html"})
	wantKind(t, err, KindDisallowed)

	// IgnoreRobots neither asks for robots.txt nor obeys it.
	hits := site.robotsHits.Load()
	rude, _ := newRobotsClient(t, Config{IgnoreRobots: true})
	if _, err := rude.Fetch(ctx, Request{URL: base + "/private"}); err != nil {
		t.Errorf("IgnoreRobots: %v", err)
	}
	if site.robotsHits.Load() != hits {
		t.Error("IgnoreRobots fetched robots.txt")
	}
}

func TestRobotsCacheOneFetchPerHost(t *testing.T) {
	site, base := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	site.robotsBlock = make(chan struct{})
	c, clock := newRobotsClient(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := c.Fetch(context.Background(), Request{URL: fmt.Sprintf("%s/page/%d", base, i)})
			errs <- err
		})
	}
	// Let every fetch queue up behind the one robots.txt request.
	for site.robotsHits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(site.robotsBlock)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := site.robotsHits.Load(); n != 1 {
		t.Fatalf("robots.txt fetched %d times by 20 concurrent fetches, want 1", n)
	}

	clock.Advance(DefaultRobotsTTL - time.Second)
	c.Fetch(context.Background(), Request{URL: base + "/"})
	if n := site.robotsHits.Load(); n != 1 {
		t.Errorf("robots.txt refetched before its TTL: %d", n)
	}
	clock.Advance(2 * time.Second)
	c.Fetch(context.Background(), Request{URL: base + "/"})
	if n := site.robotsHits.Load(); n != 2 {
		t.Errorf("robots.txt not refetched after its TTL: %d", n)
	}
}

func TestRobotsFetchFailures(t *testing.T) {
	for _, tt := range []struct {
		status  int
		retryIn time.Duration // how soon the failure is retried
	}{
		{404, DefaultRobotsTTL},
		{401, DefaultRobotsTTL},
		{403, DefaultRobotsTTL},
		{410, DefaultRobotsTTL},
		{500, DefaultRobotsTTL / 12},
		{503, DefaultRobotsTTL / 12},
		{302, DefaultRobotsTTL / 12}, // a redirect loop
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			site, base := newRobotsSite(t, tt.status, "User-agent: *\nDisallow: /\n")
			c, clock := newRobotsClient(t, Config{})
			if _, err := c.Fetch(context.Background(), Request{URL: base + "/page"}); err != nil {
				t.Fatalf("robots.txt answering %d: %v, want the page allowed", tt.status, err)
			}
			hits := site.robotsHits.Load()
			clock.Advance(tt.retryIn - time.Second)
			c.Fetch(context.Background(), Request{URL: base + "/page"})
			if site.robotsHits.Load() != hits {
				t.Errorf("retried before %v", tt.retryIn)
			}
			clock.Advance(2 * time.Second)
			c.Fetch(context.Background(), Request{URL: base + "/page"})
			if site.robotsHits.Load() == hits {
				t.Errorf("not retried after %v", tt.retryIn)
			}
		})
	}
}

func TestRobotsKeptThroughServerErrors(t *testing.T) {
	site, base := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	c, clock := newRobotsClient(t, Config{})
	ctx := context.Background()
	_, err := c.Fetch(ctx, Request{URL: base + "/private"})
	wantKind(t, err, KindDisallowed)

	site.set(503, "")
	clock.Advance(DefaultRobotsTTL + time.Second)
	_, err = c.Fetch(ctx, Request{URL: base + "/private"})
	wantKind(t, err, KindDisallowed)
	if n := site.robotsHits.Load(); n != 2 {
		t.Errorf("robots.txt fetched %d times, want 2", n)
	}
	// The failed refresh is retried soon, and a 404 then clears the rules.
	site.set(404, "")
	clock.Advance(DefaultRobotsTTL/12 + time.Second)
	if _, err := c.Fetch(ctx, Request{URL: base + "/private"}); err != nil {
		t.Errorf("after robots.txt went away: %v", err)
	}
}

func TestRobotsCrawlDelay(t *testing.T) {
	for _, tt := range []struct {
		robots string
		cfg    Config
		want   time.Duration
	}{
		{"User-agent: *\nCrawl-delay: 2\n", Config{}, 2 * time.Second},
		{"User-agent: *\nCrawl-delay: 0.5\n", Config{}, 500 * time.Millisecond},
		{"User-agent: *\nCrawl-delay: 3600\n", Config{}, DefaultMaxCrawlDelay},
		{"User-agent: *\nCrawl-delay: 1e30\n", Config{}, DefaultMaxCrawlDelay},
		{"User-agent: *\nCrawl-delay: 60\n", Config{MaxCrawlDelay: 5 * time.Second}, 5 * time.Second},
		{"User-agent: portalwatch\nCrawl-delay: 3\n\nUser-agent: *\nCrawl-delay: 9\n", Config{}, 3 * time.Second},
	} {
		_, base := newRobotsSite(t, 200, tt.robots)
		tt.cfg.MaxPoliteWait = time.Minute // waits, not deferrals, are tested here
		c, clock := newRobotsClient(t, tt.cfg)
		for range 3 {
			if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
				t.Fatal(err)
			}
		}
		// The first fetch waits for nothing, each later one for the delay.
		want := []time.Duration{0, tt.want, tt.want}
		if got := clock.Slept(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: waits %v, want %v", tt.robots, got, want)
		}
	}

	// Without Crawl-delay there is no wait at all.
	_, base := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	c, clock := newRobotsClient(t, Config{})
	c.Fetch(context.Background(), Request{URL: base + "/"})
	c.Fetch(context.Background(), Request{URL: base + "/"})
	if got := clock.Slept(); len(got) != 0 {
		t.Errorf("waits %v without a Crawl-delay", got)
	}
}

func TestRobotsCrawlDelayRealWait(t *testing.T) {
	// With the real clock the wait is bounded by ctx.
	_, base := newRobotsSite(t, 200, "User-agent: *\nCrawl-delay: 30\n")
	c := newClient(t, Config{AllowPrivate: true, MaxPoliteWait: time.Minute})
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Fetch(ctx, Request{URL: base + "/"})
	wantKind(t, err, KindTimeout)
	if d := time.Since(start); d > 2*time.Second || !strings.Contains(err.Error(), "between fetches of") {
		t.Errorf("after %v: %q", d, err)
	}
}

func TestRobotsAbandonedFetch(t *testing.T) {
	site, base := newRobotsSite(t, 200, "User-agent: *\nDisallow: /private\n")
	site.robotsBlock = make(chan struct{})
	c, _ := newRobotsClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Fetch(ctx, Request{URL: base + "/page"})
	wantKind(t, err, KindTimeout)
	if !strings.Contains(err.Error(), "robots.txt") {
		t.Errorf("message %q", err)
	}
	// The abandoned fetch is not cached: the next caller fetches again.
	close(site.robotsBlock)
	_, err = c.Fetch(context.Background(), Request{URL: base + "/private"})
	wantKind(t, err, KindDisallowed)
	if n := site.robotsHits.Load(); n != 2 {
		t.Errorf("robots.txt fetched %d times, want 2", n)
	}
}

func TestRobotsLenientParsing(t *testing.T) {
	// Lines that would make the parser reject the whole file are dropped;
	// the rest still applies.
	_, base := newRobotsSite(t, 200, "Disallow: /before-any-agent\nUser-agent: *\nCrawl-delay: soon\nDisallow: /private\nDisallow: /caf\xe9*x\n")
	c, _ := newRobotsClient(t, Config{})
	_, err := c.Fetch(context.Background(), Request{URL: base + "/private"})
	wantKind(t, err, KindDisallowed)
	if _, err := c.Fetch(context.Background(), Request{URL: base + "/before-any-agent"}); err != nil {
		t.Error(err)
	}

	// A file that still does not parse allows everything.
	if _, err := robotstxt.FromBytes(sanitized([]byte("User-agent: *\nCrawl-delay: -1\nDisallow: /x\n"))); err != nil {
		t.Errorf("sanitized file does not parse: %v", err)
	}
}

func TestRobotsTruncated(t *testing.T) {
	// A file over RobotsMaxBytes is cut and its start still applies.
	body := "User-agent: *\nDisallow: /private\n" + strings.Repeat("# padding\n", 1000)
	_, base := newRobotsSite(t, 200, body)
	c, _ := newRobotsClient(t, Config{RobotsMaxBytes: 1 << 10})
	_, err := c.Fetch(context.Background(), Request{URL: base + "/private"})
	wantKind(t, err, KindDisallowed)
}

func TestRobotsCacheBounded(t *testing.T) {
	c, _ := newRobotsClient(t, Config{RobotsCacheSize: 2})
	for range 4 {
		_, base := newRobotsSite(t, 200, "User-agent: *\nCrawl-delay: 1\n")
		if _, err := c.Fetch(context.Background(), Request{URL: base + "/"}); err != nil {
			t.Fatal(err)
		}
	}
	c.robots.mu.Lock()
	n := len(c.robots.entries)
	c.robots.mu.Unlock()
	if n > 2 {
		t.Errorf("%d entries cached, want at most 2", n)
	}
}

package extractor_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/extractor"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// farm serves article pages on loopback and counts the requests of each
// path, robots.txt included.
type farm struct {
	*httptest.Server
	mu    sync.Mutex
	hits  map[string]int
	pages map[string]http.HandlerFunc
	// hold, when set, is what a request of a held path waits for.
	held map[string]chan struct{}
	// arrived says a request of a held path came in.
	arrived chan string
}

func newFarm(t *testing.T) *farm {
	t.Helper()
	f := &farm{hits: map[string]int{}, pages: map[string]http.HandlerFunc{}, held: map[string]chan struct{}{},
		arrived: make(chan string, 100)}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		h, hold := f.pages[r.URL.Path], f.held[r.URL.Path]
		f.mu.Unlock()
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
			return
		}
		if hold != nil {
			f.arrived <- r.URL.Path
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// serve makes path answer with body as contentType.
func (f *farm) serve(path, contentType string, body []byte) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages[path] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}
	return f.URL + path
}

func (f *farm) status(path string, code int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages[path] = func(w http.ResponseWriter, _ *http.Request) { http.Error(w, http.StatusText(code), code) }
	return f.URL + path
}

func (f *farm) hold(path string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := make(chan struct{})
	f.held[path] = c
	return c
}

func (f *farm) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// realPage is one of internal/article's real pages, unzipped.
func realPage(t *testing.T, i int) []byte {
	t.Helper()
	files, err := filepath.Glob("../article/testdata/scrapinghub/html/*.html.gz")
	if err != nil || len(files) <= i {
		t.Fatalf("real pages: %d found, %v", len(files), err)
	}
	sort.Strings(files)
	raw, err := os.ReadFile(files[i])
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// story is a short article page of its own.
func story(headline string, words int) []byte {
	return []byte(`<!doctype html><html><head><title>` + headline + `</title>
<meta property="og:title" content="` + headline + `"></head><body><article><h1>` + headline + `</h1><p>` +
		strings.Repeat("The council met on Tuesday to discuss the budget of the harbour. ", words/12+1) +
		`</p></article></body></html>`)
}

// rig is one extractor's world: a database and a Redis prefix of the
// test's own, the host gate, the fetch client and the service.
type rig struct {
	t    *testing.T
	st   *store.Store
	pool *pgxpool.Pool
	gate *hostgate.Gate
	svc  *extractor.Service
	reg  *prometheus.Registry
	page int // pages made so far, for their URLs
}

type rigOptions struct {
	cfg         extractor.Config
	spacing     time.Duration
	maxInFlight int
	proxies     string // PORTALWATCH_PROXIES
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	st, pool := systest.Store(t)
	redisURL, prefix := testsvc.Redis(t)
	log := testsvc.Logger(t)
	gate, err := hostgate.Open(redisURL, hostgate.Config{Prefix: prefix, MaxInFlight: o.maxInFlight}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gate.Close() })
	f, err := fetch.New(fetch.Config{AllowPrivate: true, MaxRedirects: 5, MinHostSpacing: o.spacing,
		Pacer: gate.PacerFor(watch.ArticleFetch), Timeout: 10 * time.Second, Logger: log, Proxies: fetch.ProxyConfig{List: o.proxies}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := o.cfg
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 10 * time.Millisecond
	}
	if cfg.BusyDelay == 0 {
		cfg.BusyDelay = 20 * time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	reg := prometheus.NewRegistry()
	svc, err := extractor.New(cfg, st, f, gate, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, st: st, pool: pool, gate: gate, svc: svc, reg: reg}
}

func newLinks(urls ...string) []watch.NewLink {
	out := make([]watch.NewLink, len(urls))
	for i, u := range urls {
		k := shortlink.Key(u)
		out[i] = watch.NewLink{Key: k, URL: u, Text: "text of " + u, Code: shortlink.Code(k, 8)}
	}
	return out
}

// show makes a page of its own (articles on) whose second check finds
// urls as new links, and returns the page's id: its first check is the
// baseline, which records no update.
func (r *rig) show(urls ...string) int64 {
	r.t.Helper()
	ctx := context.Background()
	r.page++
	p, err := r.st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://portal%d.example/", r.page)})
	if err != nil {
		r.t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	for i, ls := range [][]watch.NewLink{newLinks(fmt.Sprintf("https://portal%d.example/old", r.page)), newLinks(urls...)} {
		c := watch.Check{PageID: p.ID, FetchedAt: at.Add(time.Duration(i) * time.Second), Status: 200, Articles: true}
		if _, err := r.st.RecordCheck(ctx, c, ls); err != nil {
			r.t.Fatal(err)
		}
	}
	return p.ID
}

// run runs the extractor until no work is left or timeout passes.
func (r *rig) run(timeout time.Duration) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx, 5*time.Second) }()
	testsvc.Eventually(r.t, timeout, "every link given its article", func() (bool, error) {
		return r.workLeft() == 0, nil
	})
	cancel()
	if err := <-done; err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) workLeft() int {
	r.t.Helper()
	var n int
	if err := r.pool.QueryRow(context.Background(), `SELECT count(*) FROM article_work`).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// outcome is what became of a link: its article's status and detail, from
// the update of each page that showed it.
type outcome struct {
	id                       int64
	status, detail, headline string
	updates                  int
}

func (r *rig) outcome(link string) outcome {
	r.t.Helper()
	var o outcome
	err := r.pool.QueryRow(context.Background(), `
		SELECT coalesce(min(a.id), 0), coalesce(min(a.status), ''), coalesce(min(a.detail), ''),
			coalesce(min(a.headline), ''), count(*)
		FROM updates u LEFT JOIN article_links l ON l.url = u.url LEFT JOIN articles a ON a.id = l.article_id WHERE u.url = $1`, link).
		Scan(&o.id, &o.status, &o.detail, &o.headline, &o.updates)
	if err != nil {
		r.t.Fatal(err)
	}
	return o
}

// counter is the value of the extractor's metric name with the label
// value, 0 when it has none.
func (r *rig) counter(name, label string) float64 {
	r.t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// Each new link of a page that reads articles gets its article, real pages
// read as ok, and a story several pages link is fetched once and has one
// sighting per page, including a page that shows it after it was read.
func TestNewLinksGetTheirArticles(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	r := newRig(t, rigOptions{cfg: extractor.Config{Concurrency: 8}})
	var real []string
	for i := range 4 {
		real = append(real, f.serve(fmt.Sprintf("/real/%d", i), "text/html; charset=utf-8", realPage(t, i)))
	}
	shared := f.serve("/shared", "text/html", story("Harbour budget agreed", 300))
	r.show(append(real[:2:2], shared)...)
	r.show(append(real[2:], shared)...)
	r.show(shared)
	if n := r.workLeft(); n != 5 {
		t.Fatalf("%d links of work for four real pages and a story three pages link, want 5", n)
	}
	r.run(30 * time.Second)

	// The first real page is the Wall Street Journal's, which says it is
	// not free and shows a teaser: a paywall.
	for i, u := range real {
		want := "ok"
		if i == 0 {
			want = "paywall"
		}
		if o := r.outcome(u); o.status != want || o.headline == "" {
			t.Errorf("%s: %+v, want %s with a headline", u, o, want)
		}
	}
	o := r.outcome(shared)
	if o.status != "ok" || o.updates != 3 || o.headline != "Harbour budget agreed" {
		t.Fatalf("shared story: %+v, want ok, three updates pointing at it", o)
	}
	if n := f.count("/shared"); n != 1 {
		t.Errorf("the story three pages link was fetched %d times, want once", n)
	}
	// A page that shows the story later links the stored article without
	// a fetch.
	r.show(shared)
	r.run(30 * time.Second)
	if n := f.count("/shared"); n != 1 {
		t.Errorf("a fourth sighting fetched the story again: %d fetches", n)
	}
	as, err := r.st.Article(context.Background(), o.id)
	if err != nil || len(as.Sightings) != 4 {
		t.Fatalf("Article(%d) = %d sightings, %v; want 4", o.id, len(as.Sightings), err)
	}
}

// What a link that gives no readable article earns, and how often it is
// fetched for it.
func TestStatuses(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	r := newRig(t, rigOptions{cfg: extractor.Config{Attempts: 3}})
	notFree := []byte(`<!doctype html><html><head><title>Members only</title>
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle","headline":"Members only: the harbour deal",
"isAccessibleForFree":false,"hasPart":{"@type":"WebPageElement","isAccessibleForFree":false,"cssSelector":".paid"}}</script>
</head><body><article><h1>Members only: the harbour deal</h1><p>The council met on Tuesday. Subscribe to read on.</p>
<div class="paid"></div></article></body></html>`)
	cases := []struct {
		path, status string
		fetches      int
		set          func(path string) string
	}{
		{"/gone", "error", 1, func(p string) string { return f.status(p, http.StatusNotFound) }},
		{"/busy", "error", 3, func(p string) string { return f.status(p, http.StatusServiceUnavailable) }},
		{"/private/memo", "blocked", 0, func(p string) string { return f.serve(p, "text/html", story("Memo", 300)) }},
		{"/report.pdf", "not_article", 1, func(p string) string { return f.serve(p, "application/pdf", []byte("%PDF-1.7\n")) }},
		{"/empty", "not_article", 1, func(p string) string {
			return f.serve(p, "text/html", []byte(`<html><body><p>ok</p></body></html>`))
		}},
		{"/paid", "paywall", 1, func(p string) string { return f.serve(p, "text/html", notFree) }},
	}
	var urls []string
	for _, c := range cases {
		urls = append(urls, c.set(c.path))
	}
	r.show(urls...)
	r.run(30 * time.Second)
	for i, c := range cases {
		o := r.outcome(urls[i])
		if o.status != c.status {
			t.Errorf("%s: status %q (%s), want %q", c.path, o.status, o.detail, c.status)
		}
		if n := f.count(c.path); n != c.fetches {
			t.Errorf("%s: fetched %d times, want %d", c.path, n, c.fetches)
		}
	}
	if n := r.counter("portalwatch_extractor_deferred_total", "retry"); n != 2 {
		t.Errorf("%v retries counted, want 2 (the 503's first two attempts)", n)
	}
}

// An origin's daily cap of article fetches gives the links past it status
// capped, without a fetch.
func TestDailyCap(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	r := newRig(t, rigOptions{cfg: extractor.Config{PerOriginDay: 2, Concurrency: 1}})
	var urls []string
	for i := range 5 {
		urls = append(urls, f.serve(fmt.Sprintf("/s%d", i), "text/html", story(fmt.Sprintf("Story %d", i), 300)))
	}
	r.show(urls...)
	r.run(30 * time.Second)
	statuses := map[string]int{}
	fetches := 0
	for i, u := range urls {
		statuses[r.outcome(u).status]++
		fetches += f.count(fmt.Sprintf("/s%d", i))
	}
	if statuses["ok"] != 2 || statuses["capped"] != 3 || fetches != 2 {
		t.Fatalf("statuses %v after %d fetches; want 2 ok and 3 capped after 2 fetches", statuses, fetches)
	}
}

// workRow is one link's work as the store keeps it.
func (r *rig) workRow(link string) (attempts int, dueIn time.Duration) {
	r.t.Helper()
	var ms float64
	err := r.pool.QueryRow(context.Background(), `SELECT attempts, extract(epoch FROM due_at - now()) * 1000
		FROM article_work WHERE url = $1`, link).Scan(&attempts, &ms)
	if err != nil {
		r.t.Fatalf("work of %s: %v", link, err)
	}
	return attempts, time.Duration(ms) * time.Millisecond
}

// runFor runs the extractor until cond holds, then stops it.
func (r *rig) runUntil(what string, cond func() bool) {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx, 5*time.Second) }()
	testsvc.Eventually(r.t, 20*time.Second, what, func() (bool, error) { return cond(), nil })
	cancel()
	if err := <-done; err != nil {
		r.t.Fatal(err)
	}
}

// An origin with the most fetches in flight, homepage checks included,
// puts a link off without counting an attempt or a daily fetch; once it
// has room the link is read.
func TestBusyOriginPostponesUncounted(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	// Two in flight at most: articles may take one place, the pages'
	// checks both.
	r := newRig(t, rigOptions{maxInFlight: 2, cfg: extractor.Config{PerOriginDay: 1}})
	link := f.serve("/s", "text/html", story("Story", 300))
	r.show(link)
	origin, _ := watch.Origin(link)
	ctx := context.Background()
	leave, ok := r.gate.Enter(ctx, origin, time.Minute)
	if !ok {
		t.Fatal("the homepage check was not admitted")
	}
	r.runUntil("the link put off twice", func() bool {
		return r.counter("portalwatch_extractor_deferred_total", "busy") >= 2
	})
	if attempts, _ := r.workRow(link); attempts != 0 || f.count("/s") != 0 {
		t.Fatalf("after waiting for a busy origin: attempts %d, fetches %d; want 0 and 0", attempts, f.count("/s"))
	}
	leave()
	// The daily cap is 1: had a put-off counted, this would be capped.
	r.run(20 * time.Second)
	if o := r.outcome(link); o.status != "ok" || f.count("/s") != 1 {
		t.Fatalf("once the origin had room: %+v after %d fetches; want ok after one", o, f.count("/s"))
	}
}

// A link whose origin has no slot free now (the pages' checks booked it)
// waits for the next free slot, its attempt and daily count taken back.
func TestDeferredSlotPostponesUncounted(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	const spacing = 10 * time.Second
	r := newRig(t, rigOptions{spacing: spacing, cfg: extractor.Config{PerOriginDay: 1}})
	link := f.serve("/s", "text/html", story("Story", 300))
	r.show(link)
	origin, _ := watch.Origin(link)
	ctx := context.Background()
	// The scheduler books the origin's next slots for two checks.
	r.gate.Book(ctx, hostgate.Homepage, spacing, time.Minute, []hostgate.Request{{Origin: origin, N: 2}})
	r.runUntil("the link put off", func() bool {
		return r.counter("portalwatch_extractor_deferred_total", "slot") >= 1
	})
	attempts, due := r.workRow(link)
	if attempts != 0 || f.count("/s") != 0 {
		t.Errorf("put off for a slot: attempts %d, fetches %d; want 0 and 0", attempts, f.count("/s"))
	}
	if due < spacing/2 {
		t.Errorf("due again in %s, want about the next free slot, %s or more away", due, spacing)
	}
	if undo, ok := r.gate.CountDaily(ctx, watch.ArticleFetch, origin, 1); !ok {
		t.Error("the put-off fetch was counted in the daily cap")
	} else {
		undo()
	}
}

// A stopping extractor finishes what it fetches within the drain, and
// hands back at once, uncounted, what the drain cut short; it claims no
// more than it has idle workers for.
func TestStopHandsBackWork(t *testing.T) {
	t.Parallel()
	f := newFarm(t)
	r := newRig(t, rigOptions{cfg: extractor.Config{Concurrency: 2}})
	var urls []string
	for i := range 6 {
		urls = append(urls, f.serve(fmt.Sprintf("/s%d", i), "text/html", story(fmt.Sprintf("Story %d", i), 300)))
	}
	r.show(urls...)
	// Every story is held until released: the first two fetches hang.
	holds := map[string]chan struct{}{}
	for i := range urls {
		p := fmt.Sprintf("/s%d", i)
		holds[p] = f.hold(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.svc.Run(ctx, 300*time.Millisecond) }()
	first := <-f.arrived
	second := <-f.arrived
	// With both workers busy, nothing more is claimed: a claimed link's
	// lease would run while it waits for a worker.
	time.Sleep(300 * time.Millisecond)
	var claimed int
	if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM article_work WHERE attempts > 0`).Scan(&claimed); err != nil || claimed != 2 {
		t.Errorf("with both workers busy, %d links are claimed (%v), want the 2 in flight", claimed, err)
	}
	// One fetch ends within the drain, the other does not.
	cancel()
	close(holds[first])
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if o := r.outcome(urls[pathIndex(first)]); o.status != "ok" {
		t.Errorf("the fetch that ended within the drain: %+v, want ok", o)
	}
	var left, counted, notDue int
	err := r.pool.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE attempts > 0),
		count(*) FILTER (WHERE due_at > now()) FROM article_work`).Scan(&left, &counted, &notDue)
	if err != nil {
		t.Fatal(err)
	}
	if left != 5 || counted != 0 || notDue != 0 {
		t.Fatalf("after the stop: %d links left, %d with an attempt counted, %d not due; want 5, 0, 0 (the cut fetch %s among them)",
			left, counted, notDue, second)
	}
}

func pathIndex(p string) int {
	var i int
	fmt.Sscanf(p, "/s%d", &i)
	return i
}

// Work whose lease runs out (its extractor died) comes due again with its
// attempt counted, and the outcome of whichever claim records first is
// kept: the late one stores nothing.
func TestLeaseRunsOut(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.show("https://news.example/a")
	ctx := context.Background()
	first, err := r.st.ClaimArticleWork(ctx, 10, 300*time.Millisecond)
	if err != nil || len(first) != 1 || first[0].Attempts != 1 {
		t.Fatalf("claim = %+v, %v; want the link, attempt 1", first, err)
	}
	if again, err := r.st.ClaimArticleWork(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("claim within the lease = %+v, %v; want nothing", again, err)
	}
	var second []watch.ArticleWork
	testsvc.Eventually(t, 5*time.Second, "the work due again", func() (bool, error) {
		second, err = r.st.ClaimArticleWork(ctx, 10, time.Minute)
		return len(second) == 1, err
	})
	if second[0].Attempts != 2 {
		t.Errorf("second claim: attempt %d, want 2", second[0].Attempts)
	}
	out := func(headline string) watch.ArticleOutcome {
		return watch.ArticleOutcome{LinkURL: "https://news.example/a", Article: watch.Article{Status: watch.ArticleOK,
			URL: "https://news.example/a", Headline: headline, FetchedAt: time.Now()}}
	}
	id, err := r.st.RecordArticle(ctx, second[0], out("second"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.RecordArticle(ctx, first[0], out("first, late")); err != nil {
		t.Fatal(err)
	}
	as, err := r.st.Article(ctx, id)
	if err != nil || as.Headline != "second" || len(as.Sightings) != 1 {
		t.Fatalf("Article = %+v, %v; want the second claim's, one sighting", as.Article, err)
	}
}

// The check writes work only for a page with articles on and while the
// processor reads articles (PORTALWATCH_ARTICLES).
func TestWorkOnlyWhereArticlesAreOn(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	ctx := context.Background()
	for i, c := range []struct {
		off, articles bool
		want          int
	}{{false, true, 1}, {false, false, 0}, {true, true, 0}} {
		p, err := r.st.CreatePage(ctx, watch.PageSpec{URL: fmt.Sprintf("https://switch%d.example/", i), ArticlesOff: c.off})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-time.Minute)
		for j, ls := range [][]watch.NewLink{newLinks(fmt.Sprintf("https://switch%d.example/old", i)),
			newLinks(fmt.Sprintf("https://switch%d.example/new", i))} {
			check := watch.Check{PageID: p.ID, FetchedAt: at.Add(time.Duration(j) * time.Second), Status: 200, Articles: c.articles}
			if _, err := r.st.RecordCheck(ctx, check, ls); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM article_work WHERE page_id = $1`, p.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != c.want {
			t.Errorf("page articles off %v, processor reading articles %v: %d links of work, want %d", c.off, c.articles, n, c.want)
		}
	}
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// churnPage serves a portal homepage that says the same thing on every
// fetch but spells it differently each time, as real portals do: tracking
// parameters with new values, session ids in the query and the path,
// fragments, relative or absolute links, upper-case scheme and host, "./"
// segments, the default port written out, percent-escapes in either case,
// query parameters in another order, and old links with new texts.
type churnPage struct {
	srv   *httptest.Server
	hits  atomic.Int64
	mu    sync.Mutex
	extra []churnLink // links added by the test, spelled plainly
	seen  map[string]bool
}

type churnLink struct{ href, text string }

func newChurnPage(t *testing.T) *churnPage {
	p := &churnPage{seen: map[string]bool{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *churnPage) url() string { return p.srv.URL + "/" }

func (p *churnPage) add(l churnLink) {
	p.mu.Lock()
	p.extra = append(p.extra, l)
	p.mu.Unlock()
}

// bodies reports how many different bodies the page has served.
func (p *churnPage) bodies() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// churnLinks is what the page links to: on its own host (spelled relative
// or absolute) and on another one (spelled with its host in any case and
// the default port). Each spelling function returns the n-th spelling of one
// of them; every spelling of a link normalises to the same URL.
var churnLinks = []struct {
	text  func(n int) string
	spell func(origin string, n int) string
}{
	{ // /news/politics/budget-vote.html
		text: func(n int) string { return fmt.Sprintf("Parliament passes the budget (%d comments)", 10+n) },
		spell: func(origin string, n int) string {
			return pick(n,
				"/news/politics/budget-vote.html",
				origin+"/news/politics/budget-vote.html#comments",
				upperScheme(origin)+"/news/./politics/budget-vote.html?utm_source=home&utm_medium=teaser&utm_campaign=c"+strconv.Itoa(n),
				"news/politics/../politics/budget-vote.html?PHPSESSID="+token(n),
				"./news/politics/budget-vote.html?sid="+token(n)+"#top",
				origin+"/news/politics/budget-vote.html?fbclid="+token(n)+"&utm_content=slot"+strconv.Itoa(n%3),
			)
		},
	},
	{ // /sport/final?id=42&lang=en
		text: func(n int) string {
			return pick(n, "Cup final: late winner", "LIVE: Cup final", "Cup final: late winner decides it")
		},
		spell: func(origin string, n int) string {
			return pick(n,
				"/sport/final?id=42&lang=en",
				origin+"/sport/final?lang=en&id=42",
				upperScheme(origin)+"/sport/./final?lang=en&PHPSESSID="+token(n)+"&id=42",
				"sport/final?id=42&utm_source=rss"+strconv.Itoa(n)+"&lang=en#live",
				"/./sport/../sport/final?lang=en&id=42&sid="+token(n),
				// Ampersands escaped twice: the parsed query has keys
				// "amp;utm_source" and "amp;lang".
				"/sport/final?id=42&amp;amp;utm_source=teaser"+strconv.Itoa(n)+"&amp;amp;lang=en",
			)
		},
	},
	{ // /shop/item;jsessionid=…?id=5
		text: func(n int) string { return fmt.Sprintf("Today's offer: %d%% off", 10+n%5) },
		spell: func(origin string, n int) string {
			return pick(n,
				"/shop/item;jsessionid="+strings.ToUpper(token(n))+"?id=5",
				origin+"/shop/item;JSESSIONID="+token(n)+"?id=5&utm_source=x",
				"/shop/./item?jsessionid="+token(n)+"&id=5#buy",
				"shop/item?id=5",
				"/(S("+token(n)+"))/shop/item?id=5", // ASP.NET cookieless session
			)
		},
	},
	{ // /~editor/column (percent-escapes in either case)
		text: func(n int) string { return pick(n, "The editor's column", "Editor's column, updated") },
		spell: func(origin string, n int) string {
			return pick(n,
				"/~editor/column",
				"/%7eeditor/column",
				origin+"/%7Eeditor/column?utm_term=t"+strconv.Itoa(n),
				upperScheme(origin)+"/./%7Eeditor/./column#"+token(n),
			)
		},
	},
	{ // /search?q=caf%C3%A9&page=1 (escape case, parameter order)
		text: func(n int) string { return "Café search" },
		spell: func(origin string, n int) string {
			return pick(n,
				"/search?q=caf%C3%A9&page=1",
				"/search?page=1&q=caf%c3%a9",
				origin+"/search?page=1&q=caf%c3%A9&utm_source=s"+strconv.Itoa(n),
			)
		},
	},
	{ // http://www.example-news.test/world/summit, another host
		text: func(n int) string { return pick(n, "Leaders meet at the summit", "Summit: leaders meet") },
		spell: func(_ string, n int) string {
			return pick(n,
				"http://www.example-news.test/world/summit",
				"HTTP://WWW.EXAMPLE-NEWS.TEST/world/summit",
				"http://www.Example-News.test:80/world/summit#"+token(n),
				"http://WWW.example-news.TEST:80/./world/summit?utm_source=partner&utm_medium="+token(n),
				"//www.example-news.test:80/world/../world/summit?gclid="+token(n),
			)
		},
	},
	{ // https://secure.example-news.test/account (default https port)
		text: func(n int) string { return "My account" },
		spell: func(_ string, n int) string {
			return pick(n,
				"https://secure.example-news.test/account",
				"HTTPS://SECURE.EXAMPLE-NEWS.TEST:443/account?SID="+token(n),
				"https://secure.example-news.test:443/./account#login",
			)
		},
	},
}

func pick(n int, choices ...string) string { return choices[n%len(choices)] }

// token is a different session id or tracking value for each fetch.
func token(n int) string { return fmt.Sprintf("a%08xb", uint32(n)*2654435761) }

func upperScheme(origin string) string { return strings.Replace(origin, "http://", "HTTP://", 1) }

func (p *churnPage) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	n := int(p.hits.Add(1))
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>Churning portal</title></head><body><ul>\n")
	// Fetch n spells link k its (n+k)-th way, so seven fetches in a row show
	// every spelling of every link; the order of the links rotates too.
	for i := range churnLinks {
		k := (i + n) % len(churnLinks)
		l := churnLinks[k]
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", l.spell(p.srv.URL, n+k), l.text(n+k))
	}
	p.mu.Lock()
	for _, l := range p.extra {
		fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", l.href, l.text)
	}
	b.WriteString("</ul></body></html>\n")
	p.seen[b.String()] = true
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, b.String())
}

// checkSucceeded fails the test unless the page's last check fetched it and
// recorded no error: a failed check records no links, so "no updates" would
// prove nothing.
func (s *system) checkSucceeded(pageID int64) {
	s.t.Helper()
	var (
		status   *int
		errText  *string
		failures int
	)
	err := s.db.QueryRow(context.Background(),
		`SELECT last_status, last_error, consecutive_failures FROM pages WHERE id = $1`, pageID).Scan(&status, &errText, &failures)
	if err != nil {
		s.t.Fatal(err)
	}
	if status == nil || *status != 200 || errText != nil || failures != 0 {
		s.t.Fatalf("page %d: last check status %v, error %v, %d failures; want a successful check", pageID, deref(status), deref(errText), failures)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// linkURLs returns the URLs of the page's known links (the seen-set in
// PostgreSQL), sorted.
func (s *system) linkURLs(pageID int64) []string {
	s.t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT url FROM links WHERE page_id = $1 ORDER BY url`, pageID)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var urls []string
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			s.t.Fatal(err)
		}
		urls = append(urls, u)
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	return urls
}

// TestChurnMakesNoUpdates is the false-positive test: a page whose every
// fetch spells the same links differently must produce no update at all,
// and a link that is really new must still be recorded, once.
func TestChurnMakesNoUpdates(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	page := newChurnPage(t)
	id := sys.add(page.url(), "--interval", "1h")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("crawler")
	sys.start("processor")

	testsvc.Eventually(t, 60*time.Second, "the baseline", sys.baselineDone(id))
	sys.checkSucceeded(id)
	origin := page.srv.URL
	wantLinks := []string{
		origin + "/news/politics/budget-vote.html",
		origin + "/search?page=1&q=caf%C3%A9",
		origin + "/shop/item?id=5",
		origin + "/sport/final?id=42&lang=en",
		origin + "/~editor/column",
		"http://www.example-news.test/world/summit",
		"https://secure.example-news.test/account",
	}
	const checks = 6
	for i := range checks {
		sys.waitForCheck(id)
		sys.checkSucceeded(id)
		if got := sys.updates(); len(got) != 0 {
			t.Fatalf("after check %d of an unchanged page, updates holds %d rows, want none: %v", i+1, len(got), got)
		}
	}
	// Every check saw a different page, and all its spellings came down to
	// the same seven links.
	if n := page.bodies(); n < checks+1 {
		t.Fatalf("the page served %d different bodies in %d checks, want one per check", n, checks+1)
	}
	if got := sys.linkURLs(id); fmt.Sprint(got) != fmt.Sprint(wantLinks) {
		t.Fatalf("known links:\n got %q\nwant %q", got, wantLinks)
	}

	// One link that is really new, itself spelled with a tracking parameter.
	page.add(churnLink{"/news/science/water-on-mars.html?utm_source=home#top", "Water found on Mars"})
	for range 3 {
		sys.waitForCheck(id)
		sys.checkSucceeded(id)
	}
	want := []update{{id, origin + "/news/science/water-on-mars.html", "Water found on Mars"}}
	if got := sys.updates(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates after a new link and three checks:\n got %v\nwant %v", got, want)
	}
}

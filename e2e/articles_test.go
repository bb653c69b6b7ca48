package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// storyFarm serves homepages whose links a test sets and the article pages
// they lead to, counting the fetches of each article.
type storyFarm struct {
	mu    sync.Mutex
	homes map[string][]link
	hits  map[string]int
	srv   *httptest.Server
}

func newStoryFarm(t *testing.T) *storyFarm {
	f := &storyFarm{homes: map[string][]link{}, hits: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *storyFarm) setHome(path string, links ...link) {
	f.mu.Lock()
	f.homes[path] = links
	f.mu.Unlock()
}

func (f *storyFarm) fetches(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

const storyPage = `<!DOCTYPE html><html lang="en"><head><title>%[1]s | The Daily Portal</title>
<meta name="description" content="%[2]s">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"NewsArticle",
"headline":"%[1]s","description":"%[2]s","datePublished":"2026-11-30T08:15:00+01:00",
"author":[{"@type":"Person","name":"Ada Reporter"},{"@type":"Person","name":"Ben Editor"}]}</script>
</head><body><nav><a href="/">Home</a> <a href="/politics">Politics</a></nav>
<article><h1>%[1]s</h1>
<p>The city council voted late on Monday to approve the new budget, after a debate that lasted more than nine hours and drew hundreds of residents to the chamber.</p>
<p>Supporters said the plan would restore library hours and repair roads that have been neglected for a decade, while opponents warned that the tax increase would fall hardest on renters.</p>
<p>The mayor is expected to sign the measure this week. Council members said they would revisit the spending plan in the spring, once the first quarter figures are known.</p>
</article><footer>Copyright The Daily Portal</footer></body></html>`

func (f *storyFarm) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	home, isHome := f.homes[r.URL.Path]
	f.mu.Unlock()
	switch {
	case isHome:
		var b strings.Builder
		b.WriteString("<!DOCTYPE html><html><head><title>Portal</title></head><body><ul>\n")
		for _, l := range home {
			fmt.Fprintf(&b, "<li><a href=\"%s\">%s</a></li>\n", l.href, l.text)
		}
		b.WriteString("</ul></body></html>\n")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, b.String())
	case strings.HasPrefix(r.URL.Path, "/story/") && r.URL.Path != "/story/gone":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, storyPage, "Council approves the budget after a nine-hour debate", "Library hours return and roads get repaired.")
	case r.URL.Path == "/brochure.pdf":
		w.Header().Set("Content-Type", "application/pdf")
		fmt.Fprint(w, "%PDF-1.4 not really")
	default:
		http.NotFound(w, r)
	}
}

// TestNewLinksBecomeStories is issue 31 in one test, with the real
// programs: the new links of two portals are read as articles by the
// extractor; a story both link is fetched once and has two sightings; a
// missing page and a PDF get their status; a page with articles off
// queues nothing.
func TestNewLinksBecomeStories(t *testing.T) {
	t.Parallel()
	sys := newSystem(t, "PORTALWATCH_ARTICLE_POLL=50ms")
	farm := newStoryFarm(t)
	farm.setHome("/a", link{"/about", "About us"})
	farm.setHome("/b", link{"/contact", "Contact"})
	farm.setHome("/c", link{"/imprint", "Imprint"})
	for _, p := range []string{"scheduler", "crawler", "processor", "extractor"} {
		sys.start(p)
	}
	a, b, c := sys.add(farm.srv.URL+"/a"), sys.add(farm.srv.URL+"/b"), sys.add(farm.srv.URL+"/c")
	if _, err := sys.db.Exec(t.Context(), `UPDATE pages SET articles = false WHERE id = $1`, c); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a, b, c} {
		testsvc.Eventually(t, 60*time.Second, fmt.Sprintf("the baseline of page %d", id), sys.baselineDone(id))
	}

	farm.setHome("/a", link{"/about", "About us"}, link{"/story/budget", "Budget passes"},
		link{"/story/gone", "A story taken down"}, link{"/brochure.pdf", "Our brochure"})
	farm.setHome("/b", link{"/contact", "Contact"}, link{farm.srv.URL + "/story/budget?utm_source=b", "City budget approved"})
	farm.setHome("/c", link{"/imprint", "Imprint"}, link{"/story/other", "Another story"})
	for _, id := range []int64{a, b, c} {
		sys.waitForCheck(id)
	}
	testsvc.Eventually(t, 60*time.Second, "every link of pages a and b read as an article", func() (bool, error) {
		var waiting, done int
		err := sys.db.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM article_work),
			(SELECT count(*) FROM updates u JOIN article_links l ON l.url = u.url)`).Scan(&waiting, &done)
		return waiting == 0 && done == 4, err
	})

	rows, err := sys.db.Query(t.Context(), `SELECT u.page_id, u.url, a.id, a.status, a.headline, a.date_published,
		array_to_string(a.author, '; '), a.detail FROM updates u
		LEFT JOIN article_links l ON l.url = u.url LEFT JOIN articles a ON a.id = l.article_id ORDER BY u.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type got struct {
		id                                          int64
		status, headline, published, author, detail string
	}
	byURL := map[string][]got{}
	pageOf := map[string][]int64{}
	for rows.Next() {
		var (
			page int64
			url  string
			id   *int64
			g    got
			s    [5]*string
		)
		if err := rows.Scan(&page, &url, &id, &s[0], &s[1], &s[2], &s[3], &s[4]); err != nil {
			t.Fatal(err)
		}
		if id != nil {
			g = got{*id, *s[0], *s[1], *s[2], *s[3], *s[4]}
		}
		path := strings.TrimPrefix(url, farm.srv.URL)
		byURL[path] = append(byURL[path], g)
		pageOf[path] = append(pageOf[path], page)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	budget := byURL["/story/budget"]
	if len(budget) != 2 || budget[0].id == 0 || budget[0].id != budget[1].id {
		t.Fatalf("the story both pages link: %+v, want two updates pointing at one article", budget)
	}
	want := got{budget[0].id, "ok", "Council approves the budget after a nine-hour debate", "2026-11-30T08:15:00+01:00",
		"Ada Reporter; Ben Editor", ""}
	if budget[0] != want {
		t.Errorf("the story's article = %+v, want %+v", budget[0], want)
	}
	if n := farm.fetches("/story/budget"); n != 1 {
		t.Errorf("the story both pages link was fetched %d times, want once", n)
	}
	if g := byURL["/story/gone"]; len(g) != 1 || g[0].status != "error" || !strings.Contains(g[0].detail, "404") {
		t.Errorf("a link to a missing page: %+v, want status error naming the 404", g)
	}
	if g := byURL["/brochure.pdf"]; len(g) != 1 || g[0].status != "not_article" {
		t.Errorf("a link to a PDF: %+v, want status not_article", g)
	}
	if g := byURL["/story/other"]; len(g) != 1 || g[0].id != 0 || farm.fetches("/story/other") != 0 {
		t.Errorf("the link of a page with articles off: %+v, fetched %d times; want no article and no fetch", g, farm.fetches("/story/other"))
	}

	// The API's view of the shared story: one article, two sightings.
	out, err := sys.watchctl("updates", "--page", fmt.Sprint(a), "--json")
	if err != nil || !strings.Contains(out, `"headline":"Council approves the budget after a nine-hour debate"`) {
		t.Errorf("watchctl updates --json does not carry the article: %v\n%s", err, out)
	}
}

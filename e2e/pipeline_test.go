package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// portal serves pages whose content a test changes between checks. Every
// response spells the same links a little differently (relative or absolute,
// upper-case scheme, tracking parameters, fragments), as real portals do.
type portal struct {
	mu    sync.Mutex
	pages map[string]portalPage
	hits  atomic.Int64
	srv   *httptest.Server
}

type portalPage struct {
	links   []link
	charset string // "" is UTF-8
}

type link struct{ href, text string }

func newPortal(t *testing.T) *portal {
	p := &portal{pages: map[string]portalPage{}}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *portal) set(path string, page portalPage) {
	p.mu.Lock()
	p.pages[path] = page
	p.mu.Unlock()
}

func (p *portal) url(path string) string { return p.srv.URL + path }

func (p *portal) serve(w http.ResponseWriter, r *http.Request) {
	n := p.hits.Add(1)
	p.mu.Lock()
	page, ok := p.pages[r.URL.Path]
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html><html><head><title>Portal</title></head><body>\n<div class=nav><ul>\n")
	for i, l := range page.links {
		fmt.Fprintf(&b, "<li><div class=teaser><a href=\"%s\">%s</a></div></li>\n", systest.Spell(l.href, p.srv.URL, int(n)+i), l.text)
	}
	b.WriteString("</ul></div></body></html>\n")
	body := b.Bytes()
	contentType := "text/html; charset=utf-8"
	if page.charset == "gbk" {
		encoded, err := simplifiedchinese.GBK.NewEncoder().Bytes(body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		body, contentType = encoded, "text/html; charset=GBK"
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(body)
}

var pageID = regexp.MustCompile(`watching page (\d+)`)

func (s *system) add(url string, args ...string) int64 {
	s.t.Helper()
	out, err := s.watchctl(append([]string{"add", url}, args...)...)
	if err != nil {
		s.t.Fatalf("watchctl add %s: %v\n%s", url, err, out)
	}
	m := pageID.FindStringSubmatch(out)
	if m == nil {
		s.t.Fatalf("watchctl add printed %q, want a page id", out)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

func (s *system) baselineDone(id int64) func() (bool, error) {
	return func() (bool, error) {
		var done bool
		err := s.db.QueryRow(s.t.Context(), `SELECT baseline_at IS NOT NULL FROM pages WHERE id = $1`, id).Scan(&done)
		return done, err
	}
}

// TestPipelineRecordsExactlyTheNewLinks is the product in one test: pages are
// registered with the real CLI, the real scheduler, crawlers and processor
// check them, the first check is the baseline, and afterwards exactly the
// links that appeared are recorded, once each, with their text.
func TestPipelineRecordsExactlyTheNewLinks(t *testing.T) {
	t.Parallel()
	sys := newSystem(t)
	web := newPortal(t)
	news := []link{
		{"/politics/2026/11/budget-vote", "Parliament passes the budget"},
		{"/sport/final?id=42&lang=en", "Cup final: late winner"},
		{"/culture/opera", "Opera season opens"},
		{"/about", "About us"},
	}
	web.set("/", portalPage{links: news})
	web.set("/zh/", portalPage{charset: "gbk", links: []link{{"/zh/a1", "经济新闻"}, {"/zh/a2", "体育报道"}}})

	newsID := sys.add(web.url("/"), "--interval", "10s")
	zhID := sys.add(web.url("/zh/"), "--interval", "10s")
	sys.start("scheduler")
	sys.start("crawler")
	sys.start("crawler")
	sys.start("processor")

	testsvc.Eventually(t, 60*time.Second, "the baseline of both pages", func() (bool, error) {
		a, err := sys.baselineDone(newsID)()
		if err != nil || !a {
			return false, err
		}
		return sys.baselineDone(zhID)()
	})
	if got := sys.updates(); len(got) != 0 {
		t.Fatalf("the baseline check recorded %d updates, want none: %v", len(got), got)
	}
	// A few more checks with nothing new: the rotating spellings of the same
	// links must not read as news.
	for range 3 {
		sys.waitForCheck(newsID)
	}
	if got := sys.updates(); len(got) != 0 {
		t.Fatalf("checks of an unchanged page recorded %d updates, want none: %v", len(got), got)
	}

	changed := append([]link{
		{"/world/summit", "Leaders meet at the summit"},
		{"/science/mars?lang=en&id=7", "Water found on Mars"},
		{"/local/weather", "Storm warning for the coast"},
	}, news...)
	changed[3+2].text = "Opera season opens with a premiere" // an old link's text changes: not news
	web.set("/", portalPage{links: changed})
	web.set("/zh/", portalPage{charset: "gbk", links: []link{{"/zh/a3", "科技前沿"}, {"/zh/a1", "经济新闻"}, {"/zh/a2", "体育报道"}}})

	testsvc.Eventually(t, 60*time.Second, "four updates", func() (bool, error) { return len(sys.updates()) >= 4, nil })
	// More checks must add nothing: each new link is recorded once.
	for range 3 {
		sys.waitForCheck(newsID)
		sys.waitForCheck(zhID)
	}

	want := []update{
		{newsID, web.url("/local/weather"), "Storm warning for the coast"},
		{newsID, web.url("/science/mars?id=7&lang=en"), "Water found on Mars"},
		{newsID, web.url("/world/summit"), "Leaders meet at the summit"},
		{zhID, web.url("/zh/a3"), "科技前沿"},
	}
	got := sys.updates()
	sort.Slice(got, func(i, j int) bool { return got[i].URL < got[j].URL })
	sort.Slice(want, func(i, j int) bool { return want[i].URL < want[j].URL })
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("updates:\n got %v\nwant %v", got, want)
	}

	// What users read: watchctl updates --json, newest first.
	out, err := sys.watchctl("updates", "--json", "--page", strconv.FormatInt(newsID, 10))
	if err != nil {
		t.Fatalf("watchctl updates: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("watchctl updates --json --page %d printed %d lines, want 3:\n%s", newsID, len(lines), out)
	}
	for _, line := range lines {
		var u struct {
			PageID       int64     `json:"page_id"`
			URL          string    `json:"url"`
			Text         string    `json:"text"`
			DiscoveredAt time.Time `json:"discovered_at"`
		}
		if err := json.Unmarshal([]byte(line), &u); err != nil {
			t.Fatalf("watchctl updates --json line %q: %v", line, err)
		}
		if u.PageID != newsID || u.URL == "" || u.Text == "" || u.DiscoveredAt.IsZero() {
			t.Errorf("watchctl updates --json line lacks a field: %q", line)
		}
	}
}

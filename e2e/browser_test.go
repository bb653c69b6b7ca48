package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// chromiumPath finds Debian's headless-capable Chromium. Under CI=true its
// absence fails the test (`make test` installs it); elsewhere the test
// skips with a message.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: `scripts/services.sh ensure chromium` installs it")
	}
	t.Skip("chromium is not installed (`scripts/services.sh ensure chromium`); skipping the browser test")
	return ""
}

// axeSource reads axe-core, which `scripts/services.sh ensure axe` installs
// from npm into the repository's .cache (PORTALWATCH_AXE_JS overrides the
// path). Like Chromium, its absence fails the test under CI=true.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PORTALWATCH_AXE_JS")
	if path == "" {
		path = filepath.Join("..", ".cache", "axe", "node_modules", "axe-core", "axe.min.js")
	}
	src, err := os.ReadFile(path)
	if err == nil {
		return string(src)
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("axe-core is not installed (%v): `scripts/services.sh ensure axe` installs it", err)
	}
	t.Skipf("axe-core is not installed (%v): `scripts/services.sh ensure axe`; skipping the browser test", err)
	return ""
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// browser is one headless Chromium tab on the web program, with the checks
// every page of the test goes through: screenshots at a desktop's and a
// phone's width, and axe-core's accessibility rules.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	axe  string
	// shots is the folder the screenshots go to, printed by the test.
	shots string
}

// Viewports of the screenshots: a laptop and a phone.
var viewports = []struct {
	name          string
	width, height int64
}{{"desktop", 1280, 900}, {"phone", 390, 844}}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// count counts the elements sel matches.
func (b *browser) count(sel string) int {
	b.t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		b.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

// look checks the page open now as a person would meet it: axe-core finds
// no serious or critical violation, at a desktop's width and at a phone's,
// and each width is saved as a screenshot named name.
func (b *browser) look(name string) {
	b.t.Helper()
	for _, vp := range viewports {
		b.do("resize to "+vp.name, chromedp.EmulateViewport(vp.width, vp.height))
		png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			b.t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(b.shots, fmt.Sprintf("%s-%s.png", name, vp.name)), png, 0o644); err != nil {
			b.t.Fatal(err)
		}
		b.checkAccessibility(name + " at " + vp.name + " width")
	}
	b.do("back to the desktop width", chromedp.EmulateViewport(viewports[0].width, viewports[0].height))
}

// violation is what the test reports of one axe-core violation.
type violation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessibility runs axe-core on the page open now. The script goes in
// through the DevTools protocol, as the browser's console would run it: the
// page's Content-Security-Policy stays as strict as it is for readers.
func (b *browser) checkAccessibility(what string) {
	b.t.Helper()
	loaded, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool]("typeof axe !== 'undefined'"))
	if err != nil {
		b.t.Fatal(err)
	}
	if !loaded {
		if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](b.axe+";true")); err != nil {
			b.t.Fatalf("load axe-core into %s: %v", what, err)
		}
	}
	found, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(
		r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}))))`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("axe-core on %s: %v", what, err)
	}
	var violations []violation
	if err := json.Unmarshal([]byte(found), &violations); err != nil {
		b.t.Fatalf("axe-core's answer on %s: %v\n%s", what, err, found)
	}
	for _, v := range violations {
		switch v.Impact {
		case "serious", "critical":
			b.t.Errorf("accessibility of %s: %s (%s): %s, at %v", what, v.ID, v.Impact, v.Help, v.Nodes)
		default:
			b.t.Logf("accessibility of %s, %s: %s (%s), at %v", what, v.Impact, v.ID, v.Help, v.Nodes)
		}
	}
}

// TestBrowserReadingTool drives the real web page in headless Chromium the
// way an analyst starts the day, against the real pipeline: sign in, watch
// a local portal through the form (every refusal shown at once first),
// check it now from the pages list, read the news in the river with the
// keyboard and mark it read, see a redesign collapsed into one item, move
// the page to the trash and restore it, make a read token for a feed reader
// and copy a feed's address, and add a webhook and test it. Every page it
// opens is checked with axe-core and saved as screenshots at 1280 and 390
// pixels to the folder it logs.
func TestBrowserReadingTool(t *testing.T) {
	chromium := chromiumPath(t)
	axe := axeSource(t)
	s := newSystem(t)
	token, err := s.watchctl("token", "create", "browser", "--write")
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, token)
	}
	token = strings.TrimSpace(token)
	addr := freeAddr(t)
	web := s.Start("web", "PORTALWATCH_WEB_ADDR="+addr)
	base := "http://" + addr
	testsvc.Eventually(t, 30*time.Second, "the web program's /healthz", func() (bool, error) {
		select {
		case <-web.Done():
			return false, fmt.Errorf("web exited:\n%s", web.Output())
		default:
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	})

	old := []link{{"/a", "Old story A"}, {"/b", "Old story B"}, {"/c", "Old story C"}, {"/d", "Old story D"}}
	portal := newPortal(t)
	portal.set("/news", portalPage{links: old})
	s.start("scheduler")
	s.start("crawler")
	s.start("processor")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // root in CI and containers
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	b := &browser{t: t, ctx: ctx, base: base, axe: axe, shots: filepath.Join(os.TempDir(), "portalwatch-browser-"+testsvc.ID(t))}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of every page, at 1280 and 390 pixels: %s", b.shots)
	// Times are shown in the reader's own zone, whatever the server's.
	b.do("set the browser's time zone and locale", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Tokyo"}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetLocaleOverride, emulation.SetLocaleOverrideParams{Locale: "en_US"})
		return err
	}))

	b.do("open the sign-in page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#signin`)))
	b.look("signin")
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Submit(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#river`)),
	)
	if got := b.text(`#river`); !strings.Contains(got, "No news yet") {
		t.Errorf("the empty river says %q", got)
	}

	// Watch the portal: a first try with every field wrong at once.
	b.do("open the pages list", chromedp.Navigate(base+"/pages"), chromedp.WaitVisible(chromedp.CSS(`#add-page`)))
	b.do("send the add form with three wrong fields",
		chromedp.SendKeys(chromedp.CSS(`#add-page #url`), "news.example.com"),
		chromedp.Click(chromedp.CSS(`#add-page details.more summary`)),
		chromedp.SetValue(chromedp.CSS(`#add-page #interval`), "2s"),
		chromedp.SetValue(chromedp.CSS(`#add-page #include_text`), "("),
		chromedp.Submit(chromedp.CSS(`#add-page`)),
		chromedp.WaitVisible(chromedp.CSS(`#url-error`)),
	)
	if got := b.text(`#url-error`); !strings.Contains(got, "give one such as https://example.com/") {
		t.Errorf("the URL without a scheme is refused with %q, want the hint of a scheme", got)
	}
	if b.count(`#interval-error`) != 1 || b.count(`#include_text-error`) != 1 {
		t.Error("the interval's and the keyword rule's refusals are not shown beside them with the URL's")
	}
	b.look("pages-refused")
	// Before watching it, look for the portal's feeds: it offers none, and
	// the page says so above the form to watch it, filled in.
	b.do("find the portal's feeds",
		chromedp.SetValue(chromedp.CSS(`#add-page #url`), portal.url("/news")),
		chromedp.Click(chromedp.CSS(`#add-page button[formaction="/pages/discover"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#sources`)),
	)
	if got := b.text(`#sources`); !strings.Contains(got, "links no feed") {
		t.Errorf("the discovery of a portal without feeds reads %q", got)
	}
	if filled, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#add-page #url`))); err != nil || filled != portal.url("/news") {
		t.Errorf("the form under the discovery holds %q (%v), want the portal", filled, err)
	}
	b.look("discover")
	b.do("watch the portal",
		chromedp.Click(chromedp.CSS(`#add-page details.more summary`)),
		chromedp.SetValue(chromedp.CSS(`#add-page #name`), "Local portal"),
		chromedp.SetValue(chromedp.CSS(`#add-page #interval`), "10s"),
		chromedp.Submit(chromedp.CSS(`#add-page`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	var pageID int64
	if err := s.db.QueryRow(ctx, `SELECT id FROM pages WHERE name = 'Local portal'`).Scan(&pageID); err != nil {
		t.Fatalf("the form's page is not in the database: %v", err)
	}
	if n := s.count(`SELECT count(*) FROM pages`); n != 1 {
		t.Fatalf("%d pages, want 1: the refused form was written", n)
	}
	testsvc.Eventually(t, 60*time.Second, "the baseline check", func() (bool, error) {
		return s.count(fmt.Sprintf(`SELECT count(*) FROM pages WHERE id = %d AND baseline_at IS NOT NULL`, pageID)) == 1, nil
	})

	// Two stories appear; the pages list's Check now fetches them.
	portal.set("/news", portalPage{links: append(old[:4:4], link{"/e", "Budget passes in night vote"}, link{"/f", "Harbour bridge reopens"})})
	if _, err := s.db.Exec(ctx, `UPDATE pages SET next_check_at = now() + interval '1 hour' WHERE id = $1`, pageID); err != nil {
		t.Fatal(err)
	}
	b.do("check the page now from the list",
		chromedp.Navigate(base+"/pages"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`form[action="/pages/%d/check"] button`, pageID))),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if got := b.text(`.flash`); !strings.Contains(got, "is due now") {
		t.Errorf("after Check now the page says %q", got)
	}
	testsvc.Eventually(t, 90*time.Second, "the two stories in the river", func() (bool, error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#river`))); err != nil {
			return false, err
		}
		return b.count(`#river li.story.unread`) == 2, nil
	})
	// No extractor runs here: one story's article is stored as the
	// extractor stores it, the other stays as it is (pending, when the
	// processor wrote its work).
	if _, err := s.db.Exec(ctx, `
		WITH a AS (
			INSERT INTO articles (url, status, headline, description, date_published, author, fetched_at)
			SELECT url, 'ok', 'The council passes the budget after a night of votes', 'The vote came at 3 am, after eleven hours.',
				'2026-11-30T06:00:00+01:00', ARRAY['Anna Muster', 'Ben Beispiel'], now()
			FROM updates WHERE page_id = $1 AND text = 'Budget passes in night vote'
			RETURNING id, url),
		linked AS (INSERT INTO article_links (url, article_id) SELECT url, id FROM a RETURNING url)
		DELETE FROM article_work w USING linked WHERE w.url = linked.url`, pageID); err != nil {
		t.Fatalf("store an article: %v", err)
	}
	pending := s.count(fmt.Sprintf(`SELECT count(*) FROM article_work WHERE page_id = %d`, pageID))
	b.do("reload the river", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#river`)))
	if got := b.text(`#river li.story .lead`); got != "The vote came at 3 am, after eleven hours." {
		t.Errorf("the lead under the story whose article was stored reads %q", got)
	}
	if got := b.text(`#river li.story .byline`); !strings.Contains(got, "Published") || !strings.Contains(got, "by Anna Muster, Ben Beispiel") {
		t.Errorf("the story's byline reads %q", got)
	}
	if got := b.count(`#river li.story .article-status`); got != pending {
		t.Errorf("%d stories say their article is pending, want %d (the work the processor wrote)", got, pending)
	}
	river := b.text(`#river`)
	if !strings.Contains(river, "Budget passes in night vote") || !strings.Contains(river, "Harbour bridge reopens") || strings.Contains(river, "Old story") {
		t.Errorf("the river shows:\n%s", river)
	}
	// Relative times, with the exact time in the reader's zone on hover.
	stamp, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(t => [t.title, t.getAttribute("datetime")])(document.querySelector("#river li.story time"))`))
	if err != nil || len(stamp) != 2 {
		t.Fatalf("read a story's time: %v %v", stamp, err)
	}
	title := stamp[0]
	at, err := time.Parse(time.RFC3339, stamp[1])
	if err != nil {
		t.Fatal(err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if want := at.In(tokyo).Format("3:04"); !strings.Contains(title, want) || strings.Contains(title, "UTC") {
		t.Errorf("a story's exact time reads %q, want Tokyo's %s: the reader's own zone", title, want)
	}
	if got := b.text(`#river li.story time`); got != "just now" && !strings.HasSuffix(got, "min ago") {
		t.Errorf("a story of this minute is %q, want a relative time", got)
	}
	b.look("river-unread")
	b.do("move through the river with j and k",
		chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("k"))
	if current := b.text(`#river li.story.current .headline`); !strings.Contains(river, current) || b.count(`#river li.story.current`) != 1 {
		t.Errorf("after j j k the marked story is %q", current)
	}
	first := b.text(`#river li.story:first-child .headline`)
	if current := b.text(`#river li.story.current .headline`); current != first {
		t.Errorf("after j j k the marked story is %q, want the first, %q", current, first)
	}
	b.do("mark all read",
		chromedp.Click(chromedp.CSS(`#unread form button`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if got := b.text(`#unread`); !strings.Contains(got, "All read") || b.count(`#river li.unread`) != 0 {
		t.Errorf("after Mark all read the river says %q with %d unread", got, b.count(`#river li.unread`))
	}

	// A redesign: thirty new links at once, one collapsed item.
	redesign := old[:4:4]
	for i := range 30 {
		redesign = append(redesign, link{fmt.Sprintf("/section/%d", i), fmt.Sprintf("Section %d", i)})
	}
	portal.set("/news", portalPage{links: redesign})
	s.checkNow(pageID)
	testsvc.Eventually(t, 90*time.Second, "the redesign in the river", func() (bool, error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`#river`))); err != nil {
			return false, err
		}
		return b.count(`#river li.burst`) == 1, nil
	})
	if got := b.text(`#river li.burst summary`); !strings.Contains(got, "Redesign on Local portal: 30 links") {
		t.Errorf("the redesign's line reads %q", got)
	}
	if b.count(`#river li.burst details[open]`) != 0 || b.count(`#river li.story.unread`) != 1 {
		t.Errorf("the redesign is open (%d) or not the one unread item (%d)", b.count(`#river li.burst details[open]`), b.count(`#river li.story.unread`))
	}
	b.look("river-redesign")
	b.do("open the redesign with j and x", chromedp.KeyEvent("j"), chromedp.KeyEvent("x"))
	if b.count(`#river li.burst details[open]`) != 1 {
		t.Error("x does not open the marked redesign")
	}

	// The page's own page, with two headlines rewritten as the checks
	// record them, then the trash and back.
	if _, err := s.db.Exec(ctx, `INSERT INTO events (page_id, kind, at, link_key, url, old_text, new_text) VALUES
		($1, 'link.rewritten', now() - interval '5 minutes', 1, $2, 'Harbour bridge reopens', 'Harbour bridge reopens to traffic'),
		($1, 'link.rewritten', now() - interval '1 minute', 2, $3, 'Budget passes in night vote', 'Council passes the budget at 3 am')`,
		pageID, portal.url("/f"), portal.url("/e")); err != nil {
		t.Fatalf("record two revisions: %v", err)
	}
	if _, err := s.db.Exec(ctx, `UPDATE links SET text = 'Council passes the budget at 3 am' WHERE page_id = $1 AND url = $2`,
		pageID, portal.url("/e")); err != nil {
		t.Fatalf("bring the stored headline up to date: %v", err)
	}
	b.do("open the page", chromedp.Navigate(fmt.Sprintf("%s/pages/%d", base, pageID)), chromedp.WaitVisible(chromedp.CSS(`#revisions`)))
	if got := b.count(`#revisions li.revision`); got != 2 {
		t.Errorf("the page lists %d headline changes, want 2", got)
	}
	if got := b.text(`#revisions li.revision:first-child del`); got != "Budget passes in night vote" {
		t.Errorf("the newest change strikes %q, want the old headline", got)
	}
	if got := b.text(`#revisions li.revision:first-child a`); got != "Council passes the budget at 3 am" {
		t.Errorf("the newest change links %q, want the new headline", got)
	}
	if href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#revisions li.revision a").href`)); err != nil || href != portal.url("/e") {
		t.Errorf("the newest change links %q (%v), want the story %s", href, err, portal.url("/e"))
	}
	if got := b.text(`#revisions li.revision:first-child time`); !strings.HasSuffix(got, "min ago") {
		t.Errorf("the newest change is dated %q, want a relative time", got)
	}
	if got := b.text(`li.story .retitled`); got != "Headline now: Council passes the budget at 3 am" {
		t.Errorf("the rewritten story says %q, want its headline now under the one it was found with", got)
	}
	b.look("page")
	b.do("remove the page",
		chromedp.Click(chromedp.CSS(`a.button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm-delete`)),
	)
	if n := s.count(`SELECT count(*) FROM pages WHERE deleted_at IS NULL`); n != 1 {
		t.Fatal("asking to remove removed the page before the confirmation")
	}
	b.look("confirm")
	b.do("confirm", chromedp.Click(chromedp.CSS(`#confirm-delete button`)), chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if n := s.count(`SELECT count(*) FROM pages WHERE deleted_at IS NOT NULL`); n != 1 {
		t.Fatal("the confirmed removal did not move the page to the trash")
	}
	b.do("open the trash", chromedp.Navigate(base+"/trash"), chromedp.WaitVisible(chromedp.CSS(`#trash`)))
	if got := b.text(`#trash`); !strings.Contains(got, "Local portal") {
		t.Errorf("the trash shows %q", got)
	}
	b.look("trash")
	b.do("restore", chromedp.Click(chromedp.CSS(`#trash form button`)), chromedp.WaitVisible(chromedp.CSS(`#updates`)))
	if got := b.text(`.flash`); !strings.Contains(got, "back from the trash") {
		t.Errorf("after Restore the page says %q", got)
	}

	// A read token for a feed reader, and a feed's address copied.
	b.do("make a read token",
		chromedp.Navigate(base+"/feeds"),
		chromedp.SetValue(chromedp.CSS(`#token-name`), "my-feed-reader"),
		chromedp.Submit(chromedp.CSS(`#feed-token`)),
		chromedp.WaitVisible(chromedp.CSS(`#new-token`)),
	)
	feedURL, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#f0-atom`)))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `/feeds/all\.atom\?token=pw_\w+$`).MatchString(feedURL) {
		t.Fatalf("the feed address with the token is %q", feedURL)
	}
	resp, err := http.Get(feedURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the feed address the page gave answers %d", resp.StatusCode)
	}
	b.do("copy the address", chromedp.Click(chromedp.CSS(`button[data-copy="f0-atom"]`)))
	testsvc.Eventually(t, 10*time.Second, "the copy button to say Copied", func() (bool, error) {
		return b.text(`button[data-copy="f0-atom"]`) == "Copied", nil
	})
	b.look("feeds")

	// Notifications: a bad webhook URL refused beside the field (the event
	// ticked kept), a loopback receiver added with that event, its secret
	// shown once, and the Test button's message reaching it.
	hooks := make(chan http.Header, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hooks <- r.Header.Clone():
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	b.do("add a webhook through the Notifications page",
		chromedp.Navigate(base+"/notifications"),
		chromedp.WaitVisible(chromedp.CSS(`#add-webhook`)),
		chromedp.SendKeys(chromedp.CSS(`#wh-url`), "ftp://example.com/"),
		chromedp.Click(chromedp.CSS(`#wh-ev-page-degraded`)),
		chromedp.Submit(chromedp.CSS(`#add-webhook`)),
		chromedp.WaitVisible(chromedp.CSS(`#wh-url-error`)),
		chromedp.WaitVisible(chromedp.CSS(`#wh-ev-page-degraded:checked`)),
		chromedp.SetValue(chromedp.CSS(`#wh-url`), receiver.URL+"/hook"),
		chromedp.Submit(chromedp.CSS(`#add-webhook`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)),
	)
	shown, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#secret`)))
	if err != nil {
		t.Fatal(err)
	}
	var (
		stored string
		events []string
	)
	if err := s.db.QueryRow(ctx, `SELECT secret, events FROM subscriptions`).Scan(&stored, &events); err != nil || shown != stored ||
		fmt.Sprint(events) != "[page.degraded]" {
		t.Fatalf("secret shown %q, stored %q, events %v (%v); want one subscription with the secret shown and page.degraded", shown, stored, events, err)
	}
	b.do("test the webhook", chromedp.Click(chromedp.CSS(`#subscriptions form[action$="/test"] button`)))
	select {
	case h := <-hooks:
		if !strings.HasPrefix(h.Get("webhook-signature"), "v1,") {
			t.Errorf("the test message's webhook-signature is %q", h.Get("webhook-signature"))
		}
	case <-ctx.Done():
		t.Fatal("the Test button's message never reached the receiver")
	}
	testsvc.Eventually(t, 30*time.Second, "the test's outcome on the page", func() (bool, error) {
		flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
		return strings.Contains(flash, "Test message delivered"), err
	})
	b.look("notifications")

	b.do("open a page that does not exist", chromedp.Navigate(base+"/no/such/page"), chromedp.WaitVisible(chromedp.CSS(`#error-detail`)))
	b.look("not-found")
}

// count runs a count query on the system's database.
func (s *system) count(query string) int {
	s.t.Helper()
	var n int
	if err := s.db.QueryRow(context.Background(), query).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

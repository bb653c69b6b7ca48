package crawler_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/testkit/corpus"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// loadCorpusPages returns the corpus pages (shared/corpus/pages: real pages
// in their original bytes and charsets — news portals, blogs, tag soup,
// UTF-16, Shift_JIS, windows-1251…) as snapshots, with the Content-Type and
// URL that MANIFEST.json records (none records either today, so the
// Content-Type is empty and the URL a plausible https one). It skips the test
// when the corpus is absent, unless CI=true, where that fails.
func loadCorpusPages(tb testing.TB) []snapshot {
	tb.Helper()
	pages := corpus.Pages(tb)
	snaps := make([]snapshot, 0, len(pages))
	for _, p := range pages {
		raw := p.URL
		if raw == "" {
			raw = "https://www.corpus.example/" + p.Name + "/index.html"
		}
		u, err := url.Parse(raw)
		if err != nil {
			tb.Fatalf("%s: URL %q: %v", p.Name, raw, err)
		}
		snaps = append(snaps, snapshot{Name: p.Name + ".html", URL: u, ContentType: p.ContentType, Body: p.Body})
	}
	return snaps
}

// checker runs pages through the crawler's Check, the extraction path of
// production: fetch.DecodeHTML with the page's Content-Type, domwalk.Parse
// with the page's URL and the default limits, urlnorm.
type checker struct {
	f   *systest.SnapshotFetcher
	svc *crawler.Service
}

func newChecker() *checker {
	f := &systest.SnapshotFetcher{}
	svc, err := crawler.New(crawler.Config{TaskQueue: "tasks"}, f, &recorder{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		panic(err) // the zero config is valid; only a broken default gets here
	}
	return &checker{f: f, svc: svc}
}

func (c *checker) check(snap snapshot) watch.Task {
	c.f.Snap = snap
	return c.svc.Check(context.Background(), watch.Job{ID: 1, BaseURL: snap.URL.String()})
}

// TestCorpusPagesExtract runs every corpus page through the crawler and
// checks what any page's links must be: absolute http(s) URLs without a
// fragment, in canonical form, and texts of valid UTF-8 without control
// characters.
func TestCorpusPagesExtract(t *testing.T) {
	t.Parallel()
	snaps := loadCorpusPages(t)
	c := newChecker()
	total := 0
	for _, snap := range snaps {
		task := c.check(snap)
		if task.Failed() {
			t.Errorf("%s: check failed: %s", snap.Name, task.Error)
			continue
		}
		total += len(task.Context)
		for _, l := range task.Context {
			if msg := badLink(l); msg != "" {
				t.Errorf("%s: link %q %q: %s", snap.Name, l.URL, l.Text, msg)
			}
		}
	}
	t.Logf("%d pages, %d links", len(snaps), total)
}

// badLink says what is wrong with a link, or returns "".
func badLink(l watch.Link) string {
	u, err := url.Parse(l.URL)
	switch {
	case err != nil:
		return "URL does not parse: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "not an http(s) URL"
	case u.Host == "" || !u.IsAbs():
		return "not absolute"
	case strings.Contains(l.URL, "#") || u.Fragment != "":
		return "has a fragment"
	}
	if n, err := urlnorm.Normalize(l.URL); err != nil || n != l.URL {
		return "not canonical: normalises to " + n
	}
	if !utf8.ValidString(l.Text) {
		return "text is not valid UTF-8"
	}
	for _, r := range l.Text {
		if unicode.IsControl(r) {
			return "text has a control character"
		}
	}
	if l.Text != strings.TrimSpace(l.Text) || strings.Contains(l.Text, "  ") {
		return "text white space is not collapsed"
	}
	return ""
}

// browserPages are pages whose links were checked by hand against what a
// browser shows, picked across charsets and kinds of markup.
//
// How the figures were obtained, independently of portalwatch's code: each
// page was decoded with its real charset (the one it declares, or for the
// two mislabelled ones the one it holds) and parsed with Python's
// html.parser; every <a href> and <area href> outside <template> (inert, not
// rendered) had leading and trailing spaces and controls and inner tabs and
// newlines removed, as browsers do; empty, fragment-only ("#…"),
// javascript:, mailto: and other non-http(s) hrefs were dropped; the rest
// were resolved with urllib.parse.urljoin against the page URL below (or the
// page's <base href>), cut at '#' and deduplicated. That is "links" below,
// the count of distinct URLs a browser would follow. Where urlnorm merges
// more, the comment says which URLs merge and why ("merged"). The texts were
// read in the page source and in Python's output: an anchor's text content
// with white space collapsed, else its title, its image's alt or its
// aria-label; when several anchors share a URL, an own text beats an alt or
// title, the longer text wins, and the first met breadth-first wins ties.
// Python's html.parser differs from browsers on a few points that were
// checked by hand and do not change the figures: it decodes entities such
// as "&sect" inside attributes that browsers leave alone, and its urljoin
// collapses the "//" inside paths like /web/2012/http://… .
var browserPages = []struct {
	file        string
	contentType string // the header the page is served with in this test; "" for none
	url         string // the page's URL
	links       int    // distinct links, as counted by hand
	texts       map[string]string
}{
	{
		// Declares gb2312 in a <meta>, holds UTF-8 (a mislabel): a browser
		// that trusts the label shows mojibake, one that sniffs shows Chinese;
		// the text is Chinese. 82 links by hand; "http://tech.qq.com" and
		// "http://tech.qq.com/" merge (empty path is "/"): 81.
		file: "readability__qq.html",
		url:  "http://tech.qq.com/a/20161014/006270.htm",
		// 24 javascript: and 6 "#" hrefs are not links.
		links: 81,
		texts: map[string]string{
			"http://tech.qq.com/a/20161018/038534.htm": "想走进《西部世界》的“世界”吗？HBO用VR带你穿越",
			"http://service.qq.com/":                   "客服中心",
			// Three anchors: a logo whose alt is "腾讯科技", and the texts
			// "科技" and "要闻"; own text beats alt, the first two-character
			// text breadth-first wins.
			"http://tech.qq.com/": "科技",
		},
	},
	{
		// windows-1251, declared by <meta http-equiv>. 126 links; relative
		// ones resolve to zone-anime.ru; tag URLs carry windows-1251
		// percent-escapes (%CC%E8…), kept as they are.
		file:  "myhtml__25_windows-1251.html",
		url:   "http://zone-anime.ru/user/YAkub_Makarov93/",
		links: 126,
		texts: map[string]string{
			"http://zone-anime.ru/index.php?do=register":      "Регистрация",
			"http://zone-anime.ru/tone/226-noty-iz-beck.html": "Ноты из Beck",
			"http://zone-anime.ru/tags/%D8%EA%EE%EB%E0/":      "Школа",
		},
	},
	{
		// windows-1256 (Arabic), declared by <meta http-equiv>; the page URL
		// is its og:url. 82 links (one empty href and one javascript:
		// dropped).
		file:  "gumbo__arabic_newspapers.html",
		url:   "http://arabic-media.com/arabicnews.htm",
		links: 82,
		texts: map[string]string{
			// Linked as "الجزائر" and as "Algeria الجزائر": the first met
			// breadth-first wins (no anchor is in a heading).
			"http://arabic-media.com/algeria-news.htm":                "الجزائر",
			"http://arabic-media.com/newspapers/europe/swissinfo.htm": "سويس إنفو العربي",
			// Also linked by a flag image with alt "The Australian Flag":
			// the anchor's own text wins.
			"http://arabic-media.com/world-news.htm": "World بقية العالم",
		},
	},
	{
		// Shift_JIS, declared by <meta http-equiv>; a GeoCities page. 58
		// links; most are image links without alt, so without text, as a
		// browser shows them (images only).
		file:  "wpull__videogame_top.html",
		url:   "http://www.geocities.co.jp/Playtown-King/6980/videogame_top.htm",
		links: 58,
		texts: map[string]string{
			"http://www.geocities.jp/gamehouse_grindcrusher/":              "本館へ",
			"http://www.geocities.jp/gamehouse_grindcrusher4/":             "4号館へ",
			"http://www.geocities.co.jp/Playtown-King/6980/elemecha_6.htm": "",
		},
	},
	{
		// UTF-16LE with a byte order mark (and a <meta> that says x-sjis,
		// which the BOM overrides, as in browsers). Two image buttons
		// without alt.
		file:  "wpull__kcna.html",
		url:   "http://www.kcna.co.jp/",
		links: 2,
		texts: map[string]string{
			"http://www.kcna.co.jp/index-k.htm": "",
			"http://www.kcna.co.jp/index-e.htm": "",
		},
	},
	{
		// KOI8-R with no declaration in the page: 128 bytes, too few for
		// detection (without a header it decodes as gb18030 mojibake), so it
		// is served with the header of its upstream test (ArchiveTeam/wpull
		// serves it with "text/html; charset=KOI8-R" and expects the link
		// http://example.com/Кракозябры).
		file:        "wpull__krokozyabry.html",
		contentType: "text/html; charset=KOI8-R",
		url:         "http://example.com/",
		links:       1,
		texts: map[string]string{
			"http://example.com/%D0%9A%D1%80%D0%B0%D0%BA%D0%BE%D0%B7%D1%8F%D0%B1%D1%80%D1%8B": "Кракозябры",
		},
	},
	{
		// Shift_JIS with no declaration in the page; like the KOI8-R page it
		// is served with its upstream test's header ("text/html;
		// charset=Shift_JIS"; wpull expects http://example.com/文字化け).
		// Without a header, detection says shift_jis most of the time and
		// gb18030 now and then: the detector's candidates tie on so short a
		// text and come back in a varying order.
		file:        "wpull__mojibake.html",
		contentType: "text/html; charset=Shift_JIS",
		url:         "http://example.com/",
		links:       1,
		texts: map[string]string{
			"http://example.com/%E6%96%87%E5%AD%97%E5%8C%96%E3%81%91": "文字化け",
		},
	},
	{
		// German, declares iso-8859-1 (read as windows-1252, as browsers
		// do); the page URL is its canonical link. 98 links (3 "#…"
		// dropped).
		file:  "trafilatura__winfuture.de-NASA.html",
		url:   "https://winfuture.de/news,139377.html",
		links: 98,
		texts: map[string]string{
			"https://winfuture.de/news,139304.html": "Hinter der kosmischen Geisterhand: NASA erstaunt von neuen Bildern",
			"https://winfuture.de/anmelden.html":    "Registrieren",
			// Also the logo, with title "WinFuture.de - Die ganze Welt der
			// IT": own text wins.
			"https://winfuture.de/": "Startseite",
		},
	},
	{
		// GB2312 declared in a <meta> past the first 1024 bytes, so found by
		// detection; a Wayback Machine copy, whose links all point into the
		// archive. 37 links (14 javascript: dropped).
		file:  "trafilatura__archive.org.he.xinhuanet.com.25340717.html",
		url:   "https://web.archive.org/web/20120611024252/http://www.he.xinhuanet.com/news/2012-06/03/content_25340717.htm",
		links: 37,
		texts: map[string]string{
			"https://web.archive.org/web/20120611024252/http://www.he.xinhuanet.com/news/2012-06/03/content_25338470.htm": "河北河间将修缮冯国璋将军第及国葬墓",
			"https://web.archive.org/web/20120611024252/http://www.xinhuanet.com/video/xhsspzx/xhsd.htm":                  "新华视点",
		},
	},
	{
		// Tag soup: upper-case tags, <HEADER> for <head>, an <A> without
		// href, an unclosed <A>, an href in single quotes spread over
		// several lines with tabs and a space inside. 2 links: the tabs and
		// newlines go, the inner space is escaped.
		file:  "wpull__soup.html",
		url:   "http://example.com/",
		links: 2,
		texts: map[string]string{
			"http://example.com/BLOG":                ">CHECK OUT MY WWW JOURNAL!!<",
			"http://example.com/web%20ring/Join.htm": "Join my webring!",
		},
	},
	{
		// UTF-8. 22 links (4 javascript: dropped); the query parameters of
		// the search links are sorted, which merges nothing.
		file:  "gumbo__baidu.html",
		url:   "https://www.baidu.com/",
		links: 22,
		texts: map[string]string{
			"http://news.baidu.com/": "新闻",
			"https://passport.baidu.com/v2/?login&tpl=mn&u=http%3A%2F%2Fwww.baidu.com%2F": "登录",
			// Three anchors: "到百度首页", "百度首页", "把百度设为主页",
			// none in a heading: the first met breadth-first wins.
			"https://www.baidu.com/": "百度首页",
		},
	},
	{
		// UTF-8. 172 links by hand; "http://www.ycombinator.com" and
		// "http://www.ycombinator.com/" merge: 171. The vote and flag links
		// carry whence=%6e%65%77%73, which is "news" once the escapes of
		// unreserved characters are decoded, and their parameters are sorted:
		// each stays one link.
		file:  "gumbo__hacker_news.html",
		url:   "https://news.ycombinator.com/",
		links: 171,
		texts: map[string]string{
			"https://news.ycombinator.com/item?id=8280678":                                      "Show HN: My first app – The minimalist distance-based transit alarm",
			"http://www.washingtonpost.com/sf/investigative/2014/09/06/stop-and-seize/?hpid=z2": "Stop and Seize",
			"https://news.ycombinator.com/item?id=8278947":                                      "151 comments",
			"https://news.ycombinator.com/logout?whence=news":                                   "logout",
		},
	},
	{
		// UTF-8; the page URL is its og:url. 210 links by hand (5 "#…"
		// dropped); "http://m.bbc.co.uk" and "http://m.bbc.co.uk/" merge:
		// 209.
		file:  "gumbo__bbc.html",
		url:   "http://www.bbc.co.uk/",
		links: 209,
		texts: map[string]string{
			"http://www.bbc.co.uk/sport/live/football/29038832": "Sunday’s Euro 2016 qualifiers",
			"http://www.bbc.co.uk/arts/":                        "Arts & Culture",
			"http://www.bbc.co.uk/help/web/links/":              "The BBC is not responsible for the content of external sites. Read more.",
			// "Mobile site" and "mobile site": same length, the first met
			// breadth-first wins.
			"http://m.bbc.co.uk/": "mobile site",
		},
	},
}

// TestCorpusPagesAsABrowserShowsThem checks the hand-counted links and
// hand-read texts of browserPages.
func TestCorpusPagesAsABrowserShowsThem(t *testing.T) {
	t.Parallel()
	byName := map[string]snapshot{}
	for _, s := range loadCorpusPages(t) {
		byName[s.Name] = s
	}
	c := newChecker()
	for _, p := range browserPages {
		t.Run(p.file, func(t *testing.T) {
			snap, ok := byName[p.file]
			if !ok {
				t.Fatalf("%s is not in the corpus", p.file)
			}
			u, err := url.Parse(p.url)
			if err != nil {
				t.Fatal(err)
			}
			snap.URL, snap.ContentType = u, p.contentType
			task := c.check(snap)
			if task.Failed() {
				t.Fatalf("check failed: %s", task.Error)
			}
			texts := map[string]string{}
			for _, l := range task.Context {
				texts[l.URL] = l.Text
			}
			if len(task.Context) != p.links {
				t.Errorf("%d links, want %d", len(task.Context), p.links)
			}
			for link, want := range p.texts {
				got, ok := texts[link]
				switch {
				case !ok:
					t.Errorf("link %s missing", link)
				case got != want:
					t.Errorf("text of %s = %q, want %q", link, got, want)
				}
			}
		})
	}
}

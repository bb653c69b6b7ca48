package sourceparse

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/watch"
)

var (
	base = mustURL("https://portal.example/feed.xml")
	now  = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
)

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestFeedItems(t *testing.T) {
	rss := `<?xml version="1.0"?><rss version="2.0"><channel><title>Portal &amp; news</title><link>https://portal.example/</link>
<item><title>First &lt;story&gt;</title><link>/politik/1?utm_source=rss</link><pubDate>Wed, 02 Dec 2026 09:30:00 +0100</pubDate></item>
<item><title>Second</title><guid isPermaLink="true">https://portal.example/2</guid></item>
<item><title>Again first</title><link>https://portal.example/politik/1</link></item>
<item><title>Not a web link</title><link>mailto:x@example.com</link></item>
<item><title>From the future</title><link>https://portal.example/3</link><pubDate>Mon, 01 Jan 2035 00:00:00 GMT</pubDate></item>
<item><title></title><description>Only a description</description><link>https://portal.example/4</link></item>
</channel></rss>`
	res, err := Feed([]byte(rss), base, now, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Title != "Portal & news" || res.Skipped != 2 || res.Truncated != 0 {
		t.Fatalf("title %q, skipped %d, truncated %d; want the feed's title, a duplicate and a mailto skipped", res.Title, res.Skipped, res.Truncated)
	}
	want := []struct {
		url, text string
		published string
	}{
		{"https://portal.example/politik/1", "First <story>", "2026-12-02T08:30:00Z"},
		{"https://portal.example/2", "Second", ""},
		{"https://portal.example/3", "From the future", ""},
		{"https://portal.example/4", "Only a description", ""},
	}
	if len(res.Links) != len(want) {
		t.Fatalf("links = %+v, want %d", res.Links, len(want))
	}
	for i, w := range want {
		l := res.Links[i]
		got := ""
		if l.PublishedAt != nil {
			got = l.PublishedAt.Format(time.RFC3339)
		}
		if l.URL != w.url || l.Text != w.text || got != w.published {
			t.Errorf("link %d = %s %q %s; want %s %q %s", i, l.URL, l.Text, got, w.url, w.text, w.published)
		}
	}
}

func TestFeedAtomAndJSON(t *testing.T) {
	atom := `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>A</title>
<entry><title>Atom story</title><link href="https://portal.example/a"/><published>2026-12-01T10:00:00Z</published></entry></feed>`
	res, err := Feed([]byte(atom), base, now, Limits{})
	if err != nil || len(res.Links) != 1 || res.Links[0].URL != "https://portal.example/a" || res.Links[0].PublishedAt == nil {
		t.Fatalf("atom: %+v, %v", res, err)
	}
	jf := `{"version":"https://jsonfeed.org/version/1.1","title":"J","items":[{"id":"1","url":"https://portal.example/j","title":"JSON story","date_published":"2026-12-01T10:00:00Z"}]}`
	res, err = Feed([]byte(jf), base, now, Limits{})
	if err != nil || len(res.Links) != 1 || res.Links[0].Text != "JSON story" {
		t.Fatalf("json feed: %+v, %v", res, err)
	}
	if _, err := Feed([]byte("<html><body>not a feed</body></html>"), base, now, Limits{}); err == nil {
		t.Fatal("an HTML page read as a feed")
	}
}

func TestNewsSitemap(t *testing.T) {
	sm := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
<url><loc>https://portal.example/a?x=1&amp;utm_medium=sm</loc><news:news><news:publication_date>2026-12-02T17:45:00+01:00</news:publication_date><news:title>Tom &amp; Jerry</news:title></news:news></url>
<url><loc>https://portal.example/b</loc><news:news><news:publication_date>2026-12-02</news:publication_date><news:title>B</news:title></news:news></url>
<url><loc>https://portal.example/c</loc><lastmod>2026-12-02</lastmod></url>
<url><loc>https://portal.example/a?x=1</loc></url>
</urlset>`
	res, err := Sitemap(strings.NewReader(sm), base, now, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != 3 || res.Skipped != 1 {
		t.Fatalf("links %+v, skipped %d; want 3 and the duplicate skipped", res.Links, res.Skipped)
	}
	a := res.Links[0]
	if a.URL != "https://portal.example/a?x=1" || a.Text != "Tom & Jerry" || a.PublishedAt == nil || a.PublishedAt.Format(time.RFC3339) != "2026-12-02T16:45:00Z" {
		t.Errorf("first item = %+v %v", a, a.PublishedAt)
	}
	if c := res.Links[2]; c.PublishedAt != nil || c.Text != "" {
		t.Errorf("an item with a lastmod alone = %+v: a modification time is no publication time", c)
	}
	index := `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>https://portal.example/s1.xml</loc></sitemap></sitemapindex>`
	if _, err := Sitemap(strings.NewReader(index), base, now, Limits{}); err != ErrSitemapIndex {
		t.Errorf("an index = %v, want ErrSitemapIndex", err)
	}
	if _, err := Sitemap(strings.NewReader("<html></html>"), base, now, Limits{}); err == nil {
		t.Error("an HTML page read as a sitemap")
	}
}

// A sitemap of 60,000 URLs is read up to the protocol's 50,000, of which
// the first MaxItems are kept and the rest counted.
func TestSitemapOverTheProtocolCap(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range 60_000 {
		fmt.Fprintf(&b, "<url><loc>https://portal.example/story/%d</loc></url>\n", i)
	}
	b.WriteString(`</urlset>`)
	var res Result
	var err error
	alloc := allocated(func() { res, err = Sitemap(bytes.NewReader(b.Bytes()), base, now, Limits{}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Links) != watch.MaxSourceItems || res.Truncated != watch.MaxSitemapURLs-watch.MaxSourceItems {
		t.Fatalf("kept %d, truncated %d; want %d kept of the first %d", len(res.Links), res.Truncated, watch.MaxSourceItems, watch.MaxSitemapURLs)
	}
	t.Logf("%d KiB of sitemap: %d MiB allocated", b.Len()>>10, alloc>>20)
	if alloc > 64<<20 {
		t.Errorf("allocated %d MiB reading a %d MiB sitemap", alloc>>20, b.Len()>>20)
	}
}

// A 10 MB title costs memory in proportion to the body the fetch already
// capped, not more, and is kept clipped.
func TestTenMegabyteTitles(t *testing.T) {
	huge := strings.Repeat("Ä", 5<<20) // 10 MB of UTF-8
	rss := `<?xml version="1.0"?><rss version="2.0"><channel><title>` + huge + `</title><item><title>` + huge +
		`</title><link>https://portal.example/x</link></item></channel></rss>`
	var res Result
	var err error
	alloc := allocated(func() { res, err = Feed([]byte(rss), base, now, Limits{}) })
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(res.Links[0].Text); n != 300 || !strings.HasSuffix(res.Links[0].Text, "…") {
		t.Errorf("title kept as %d runes, want 300 ending in …", n)
	}
	t.Logf("feed of %d MiB: %d MiB allocated", len(rss)>>20, alloc>>20)
	if alloc > 16*uint64(len(rss)) {
		t.Errorf("a %d MiB feed allocated %d MiB", len(rss)>>20, alloc>>20)
	}
	sm := `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">` +
		`<url><loc>https://portal.example/y</loc><news:news><news:title>` + huge + `</news:title></news:news></url></urlset>`
	alloc = allocated(func() { res, err = Sitemap(strings.NewReader(sm), base, now, Limits{}) })
	if err != nil || len(res.Links) != 1 || utf8.RuneCountInString(res.Links[0].Text) > 300 {
		t.Fatalf("sitemap: %+v, %v", res.Links, err)
	}
	t.Logf("sitemap of %d MiB: %d MiB allocated", len(sm)>>20, alloc>>20)
	if alloc > 8*uint64(len(sm)) {
		t.Errorf("a %d MiB sitemap allocated %d MiB", len(sm)>>20, alloc>>20)
	}
}

// The billion laughs: a document's own entities are never expanded, by
// the feed parser or the sitemap reader.
func TestEntityBombs(t *testing.T) {
	dtd := `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">` +
		`<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">` +
		`<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">` +
		`<!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>`
	rss := `<?xml version="1.0"?>` + dtd + `<rss version="2.0"><channel><title>&lol9;</title>` +
		`<item><title>&lol9;&lol9;&lol9;</title><link>https://portal.example/bomb</link></item></channel></rss>`
	sm := `<?xml version="1.0"?>` + dtd + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">` +
		`<url><loc>https://portal.example/bomb</loc><news:news><news:title>&lol9;&lol9;</news:title></news:news></url></urlset>`
	for name, read := range map[string]func() (Result, error){
		"feed":    func() (Result, error) { return Feed([]byte(rss), base, now, Limits{}) },
		"sitemap": func() (Result, error) { return Sitemap(strings.NewReader(sm), base, now, Limits{}) },
	} {
		var res Result
		var err error
		start := time.Now()
		alloc := allocated(func() { res, err = read() })
		if time.Since(start) > 2*time.Second || alloc > 8<<20 {
			t.Errorf("%s: the bomb took %v and %d MiB", name, time.Since(start), alloc>>20)
		}
		if err != nil {
			t.Logf("%s: refused: %v", name, err) // refusing it is fine too
			continue
		}
		for _, l := range res.Links {
			if strings.Contains(l.Text, "lollol") || len(l.Text) > 1200 {
				t.Errorf("%s: an entity was expanded: %q", name, l.Text)
			}
		}
	}
}

// Whatever bytes arrive, reading them never panics and keeps its caps.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`<rss><channel><item><link>https://a.example/x</link><title>t</title></item></channel></rss>`))
	f.Add([]byte(`<urlset><url><loc>https://a.example/x</loc></url></urlset>`))
	f.Add([]byte(`{"version":"https://jsonfeed.org/version/1","items":[{"url":"/x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, kind := range []string{watch.SourceFeed, watch.SourceSitemap} {
			res, err := Parse(kind, body, base, now, Limits{MaxItems: 10})
			if err != nil {
				continue
			}
			if len(res.Links) > 10 {
				t.Fatalf("%s: %d links over the cap", kind, len(res.Links))
			}
			for _, l := range res.Links {
				if !utf8.ValidString(l.Text) || utf8.RuneCountInString(l.Text) > 300 {
					t.Fatalf("%s: text %q", kind, l.Text)
				}
				if l.PublishedAt != nil && l.PublishedAt.After(now.Add(watch.MaxFutureSkew)) {
					t.Fatalf("%s: published %v, in the future", kind, l.PublishedAt)
				}
			}
		}
	})
}

// repeatReader yields head, then body n times, then tail, without holding
// more than one copy: a sitemap of the protocol's 50 MB, streamed.
type repeatReader struct {
	parts [][]byte
	n     int // repetitions of parts[1] left
	cur   []byte
	stage int
}

func newRepeatReader(head, body, tail string, n int) *repeatReader {
	return &repeatReader{parts: [][]byte{[]byte(head), []byte(body), []byte(tail)}, n: n, cur: []byte(head)}
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		switch {
		case r.stage == 0 || r.stage == 1 && r.n > 0:
			r.stage, r.n, r.cur = 1, r.n-1, r.parts[1]
		case r.stage == 1:
			r.stage, r.cur = 2, r.parts[2]
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

const urlsetOpen = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">`

// A streamed sitemap of 50 MB costs what SitemapCost says, not its size:
// one 48 MB title, and 12,000 items of 2 KB URLs and long titles (the
// items past MaxKeptBytes counted, not kept). Its memory is measured as
// everything allocated, an upper bound of what it held at once.
func TestSitemapStreamedWithinItsCost(t *testing.T) {
	cost := SitemapCost(Limits{})
	t.Logf("SitemapCost = %d KiB", cost>>10)
	var res Result
	var err error
	title := newRepeatReader(urlsetOpen+`<url><loc>https://portal.example/one</loc><news:news><news:title>`, "Äbc", `</news:title></news:news></url></urlset>`, 16<<20)
	alloc := allocated(func() { res, err = Sitemap(title, base, now, Limits{}) })
	if err != nil || len(res.Links) != 1 || utf8.RuneCountInString(res.Links[0].Text) != 300 || !utf8.ValidString(res.Links[0].Text) {
		t.Fatalf("a 48 MB title: %d links, %v", len(res.Links), err)
	}
	t.Logf("a 48 MB title: %d KiB allocated", alloc>>10)
	if alloc > uint64(cost) {
		t.Errorf("a 48 MB title allocated %d KiB, over SitemapCost's %d KiB", alloc>>10, cost>>10)
	}

	item := `<url><loc>https://portal.example/` + strings.Repeat("p", 2000) + `</loc><news:news><news:title>` + strings.Repeat("word ", 100) +
		`</news:title></news:news></url>` + "\n"
	n := 12_000
	items := newRepeatReader(urlsetOpen, item, `</urlset>`, n)
	alloc = allocated(func() { res, err = Sitemap(items, base, now, Limits{}) })
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, l := range res.Links {
		kept += len(l.URL) + len(l.Text)
	}
	// Every item has the same URL: one is kept, the others are duplicates.
	if len(res.Links) != 1 || res.Skipped != n-1 {
		t.Fatalf("kept %d, skipped %d", len(res.Links), res.Skipped)
	}
	t.Logf("%d MiB of one item repeated: %d KiB allocated", n*len(item)>>20, alloc>>10)

	var distinct bytes.Buffer
	distinct.WriteString(urlsetOpen)
	for i := range n {
		fmt.Fprintf(&distinct, "<url><loc>https://portal.example/%d/%s</loc><news:news><news:title>%s</news:title></news:news></url>\n",
			i, strings.Repeat("p", 2000), strings.Repeat("word ", 100))
	}
	distinct.WriteString(`</urlset>`)
	alloc = allocated(func() { res, err = Sitemap(bytes.NewReader(distinct.Bytes()), base, now, Limits{}) })
	if err != nil {
		t.Fatal(err)
	}
	kept = 0
	for _, l := range res.Links {
		kept += len(l.URL) + len(l.Text)
	}
	if kept > DefaultMaxKeptBytes || res.Truncated == 0 || len(res.Links)+res.Truncated != n {
		t.Fatalf("%d items of 2 KB URLs: kept %d (%d bytes), truncated %d; want at most %d bytes kept, the rest counted",
			n, len(res.Links), kept, res.Truncated, DefaultMaxKeptBytes)
	}
	t.Logf("%d MiB of distinct items: %d kept, %d KiB allocated in all", distinct.Len()>>20, len(res.Links), alloc>>10)
}

// BoundRuns cuts long runs of text on a rune boundary and leaves short
// ones, and markup, as they are.
func TestBoundRuns(t *testing.T) {
	in := "<a x=\"1\">" + strings.Repeat("Ä", 100) + "</a><b>short</b>"
	out, err := io.ReadAll(BoundRuns(iotest.OneByteReader(strings.NewReader(in)), 51))
	if err != nil {
		t.Fatal(err)
	}
	want := "<a x=\"1\">" + strings.Repeat("Ä", 26) + "</a><b>short</b>"
	if string(out) != want {
		t.Errorf("BoundRuns = %q, want %q", out, want)
	}
	if !utf8.Valid(out) {
		t.Error("cut inside a rune")
	}
}

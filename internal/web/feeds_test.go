package web

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

func TestFeedsReadBackWithAFeedParser(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","name":"Alpha News","tags":["local"]}`)
	a := decode[pageJSON](t, b)
	_, b = e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/b"}`)
	bp := decode[pageJSON](t, b)
	now := time.Now().UTC().Truncate(time.Second)
	e.insertUpdates(a.ID, 120, now, "Alpha <b>&</b>")
	e.insertUpdates(bp.ID, 5, now.Add(-time.Hour), "Beta")

	parser := gofeed.NewParser()
	for _, tt := range []struct {
		path, title, source string
		entries             int
	}{
		{"/feeds/all", "portalwatch: all pages", "Alpha News", 100},
		{fmt.Sprintf("/feeds/pages/%d", bp.ID), "portalwatch: 127.0.0.1:9", "127.0.0.1:9", 5},
		{"/feeds/tags/local", "portalwatch: tag local", "Alpha News", 100},
		{"/feeds/tags/none", "portalwatch: tag none", "", 0},
	} {
		for _, ext := range []string{"atom", "rss", "json"} {
			path := tt.path + "." + ext
			resp, body := e.do("GET", path, e.readTok, "")
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			if resp.Header.Get("ETag") == "" || (tt.entries > 0 && resp.Header.Get("Last-Modified") == "") {
				t.Errorf("%s: ETag %q Last-Modified %q", path, resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"))
			}
			feed, err := parser.Parse(bytes.NewReader(body))
			if err != nil {
				t.Fatalf("%s does not parse: %v\n%.500s", path, err, body)
			}
			wantType := map[string]string{"atom": "atom", "rss": "rss", "json": "json"}[ext]
			if feed.FeedType != wantType || feed.Title != tt.title || len(feed.Items) != tt.entries {
				t.Errorf("%s: %s feed %q with %d items; want %s %q with %d", path, feed.FeedType, feed.Title, len(feed.Items), wantType, tt.title, tt.entries)
				continue
			}
			if ext == "json" && feed.FeedVersion != "https://jsonfeed.org/version/1.1" {
				t.Errorf("%s: JSON Feed version %q, want 1.1", path, feed.FeedVersion)
			}
			if tt.entries == 0 {
				continue
			}
			first := feed.Items[0]
			if first.Title != "Alpha <b>&</b> 120" && tt.source == "Alpha News" {
				t.Errorf("%s: first title %q, want the newest link's text, unescaped once", path, first.Title)
			}
			if !strings.HasPrefix(first.Link, "https://example.com/") || !strings.HasPrefix(first.GUID, "urn:portalwatch:update:") {
				t.Errorf("%s: link %q id %q", path, first.Link, first.GUID)
			}
			if first.PublishedParsed == nil || !first.PublishedParsed.Equal(now) && tt.source == "Alpha News" {
				t.Errorf("%s: published %v, want %v", path, first.PublishedParsed, now)
			}
			source := ""
			switch {
			case first.Author != nil:
				source = first.Author.Name
			case len(first.Authors) > 0:
				source = first.Authors[0].Name
			}
			if ext == "rss" {
				source = rssSourceOf(t, body)
			}
			if source != tt.source {
				t.Errorf("%s: source %q, want the page's name %q", path, source, tt.source)
			}
		}
	}
	if resp, _ := e.do("GET", "/feeds/pages/999.atom", e.readTok, ""); resp.StatusCode != 404 {
		t.Errorf("feed of a missing page: %d", resp.StatusCode)
	}
	if resp, _ := e.do("GET", "/feeds/pages/1.xml", e.readTok, ""); resp.StatusCode != 404 {
		t.Errorf("feed as .xml: %d", resp.StatusCode)
	}
}

// rssSourceOf returns the text of the first <source> of an RSS feed and
// checks it carries the url RSS 2.0 requires.
func rssSourceOf(t *testing.T, body []byte) string {
	t.Helper()
	s := string(body)
	i := strings.Index(s, "<source url=\"")
	if i < 0 {
		t.Errorf("RSS item without <source url=…>")
		return ""
	}
	s = s[i:]
	s = s[strings.Index(s, ">")+1:]
	return s[:strings.Index(s, "<")]
}

func TestFeedConditionalRequestsAnswer304WithoutReadingUpdates(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/a","tags":["x"]}`)
	a := decode[pageJSON](t, b)
	e.insertUpdates(a.ID, 3, time.Now(), "A")
	for _, path := range []string{"/feeds/all.atom", fmt.Sprintf("/feeds/pages/%d.rss", a.ID), "/feeds/tags/x.json"} {
		resp, _ := e.do("GET", path+"?token="+e.readTok, "", "")
		etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
		before := e.reads.queries.Load()
		for _, h := range [][]string{{"If-None-Match", etag}, {"If-None-Match", `"other", ` + etag}, {"If-Modified-Since", lastMod}} {
			resp, body := e.do("GET", path+"?token="+e.readTok, "", "", h...)
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
				t.Errorf("%s with %s: %d (%d bytes), want 304 and no body", path, h[0], resp.StatusCode, len(body))
			}
		}
		if n := e.reads.queries.Load() - before; n != 0 {
			t.Errorf("%s: 304 answers read updates %d times, want 0", path, n)
		}
		if resp, _ := e.do("GET", path+"?token="+e.readTok, "", "", "If-None-Match", `"stale"`); resp.StatusCode != 200 {
			t.Errorf("%s with a stale ETag: %d, want 200", path, resp.StatusCode)
		}
		e.insertUpdates(a.ID, 1, time.Now().Add(time.Minute), "B"+path)
		if resp, _ := e.do("GET", path+"?token="+e.readTok, "", "", "If-None-Match", etag); resp.StatusCode != 200 || resp.Header.Get("ETag") == etag {
			t.Errorf("%s after a new update: %d with the old ETag, want 200 and a new one", path, resp.StatusCode)
		}
	}
	// A rename changes the page's source name in its feed: a new validator.
	path := fmt.Sprintf("/feeds/pages/%d.atom", a.ID)
	resp, _ := e.do("GET", path, e.readTok, "")
	etag := resp.Header.Get("ETag")
	e.do("PATCH", fmt.Sprintf("/api/v1/pages/%d", a.ID), e.writeTk, `{"name":"Renamed"}`)
	if resp, _ := e.do("GET", path, e.readTok, "", "If-None-Match", etag); resp.StatusCode != 200 {
		t.Errorf("after a rename: %d, want 200", resp.StatusCode)
	}
}

// markupPayloads are link texts a hostile or careless page can hold: markup
// as the page's parser hands it over (a source that says &lt;img…&gt; gives
// the first), escaped once and twice, a script, and the ends of CDATA
// sections that would break out of one.
var markupPayloads = []string{
	`<img src=x onerror=alert(1)>`,
	`&lt;img src=x onerror=alert(2)&gt;`,
	`&amp;lt;img src=x onerror=alert(3)&amp;gt;`,
	`<script>alert(4)</script>`,
	`]]><img src=x onerror=alert(5)>`,
	`<![CDATA[<img src=x onerror=alert(6)>]]>`,
}

func TestFeedsHandCrawledTextToReadersAsText(t *testing.T) {
	e := newEnv(t)
	_, b := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/x","tags":["x"]}`)
	p := decode[pageJSON](t, b)
	ctx := context.Background()
	// The page has no name, so feeds call it by its <title>, which the
	// crawler read from the page.
	pageTitle := `<script>alert("title")</script>Ministry &lt;b&gt;`
	if _, err := e.pool.Exec(ctx, `UPDATE pages SET title = $2 WHERE id = $1`, p.ID, pageTitle); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Second)
	// A redesign of the payloads, folded into one entry whose summary
	// quotes them.
	for i, s := range markupPayloads {
		if _, err := e.pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, burst)
			VALUES ($1, 'https://example.com/burst/'||$2::int, $3, 'b'||$2::int, 1000 + $2::int, $4, true)`,
			p.ID, i, s, at.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// Each payload as a headline with a teaser, and one without, whose
	// text the RSS and JSON entries carry as their content.
	noTeaser := `<b>bold</b><iframe src="https://evil.example/"></iframe>`
	for i, s := range append(markupPayloads, noTeaser) {
		summary := "teaser " + s
		if s == noTeaser {
			summary = ""
		}
		if _, err := e.pool.Exec(ctx, `INSERT INTO updates (page_id, url, text, code, link_key, discovered_at, summary)
			VALUES ($1, 'https://example.com/'||$2::int, $3, 'c'||$2::int, $2::int, $4, $5)`,
			p.ID, i, s, at.Add(time.Duration(i)*time.Second), summary); err != nil {
			t.Fatal(err)
		}
	}

	for _, path := range []string{"/feeds/all", fmt.Sprintf("/feeds/pages/%d", p.ID), "/feeds/tags/x"} {
		for _, ext := range []string{"atom", "rss", "json"} {
			path := path + "." + ext
			resp, body := e.do("GET", path, e.readTok, "")
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
			}
			var fields []readerField
			var err error
			if ext == "json" {
				fields, err = jsonReaderFields(body)
			} else {
				fields, err = xmlReaderFields(body)
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", path, err, body)
			}
			shown := map[string]bool{}
			for _, f := range fields {
				text, elements := f.Text, []string(nil)
				if f.HTML {
					text, elements = renderHTML(f.Text)
				}
				shown[text] = true
				if len(elements) > 0 {
					t.Errorf("%s: %s, read as HTML, holds elements the page wrote: %s\n%q", path, f.Path, strings.Join(elements, ", "), f.Text)
				}
			}
			// Escaped once and no more: a reader shows the page's text as it was.
			for _, s := range markupPayloads {
				if !shown["teaser "+s] {
					t.Errorf("%s: no field shows the teaser %q as text", path, "teaser "+s)
				}
			}
			if !shown[noTeaser] {
				t.Errorf("%s: no field shows the headline %q as text", path, noTeaser)
			}
		}
	}
}

// readerField is one field of a feed as a reader decodes it: its path, its
// decoded value and whether readers render it as HTML.
type readerField struct {
	Path string
	Text string
	HTML bool
}

// Namespaces of the XML feeds' fields that readers render as HTML.
const (
	atomNS       = "http://www.w3.org/2005/Atom"
	rssContentNS = "http://purl.org/rss/1.0/modules/content/"
)

// xmlReaderFields decodes an Atom or RSS document and returns every
// element's text, marked HTML where readers render it so: an Atom text
// construct or content of type html (or a media type naming HTML), RSS's
// description and content:encoded. An Atom xhtml construct carries markup
// itself and is an error. RSS titles are plain text, as RSS 2.0 says and
// the feeds write them.
func xmlReaderFields(body []byte) ([]readerField, error) {
	type open struct {
		path  string
		html  bool
		xhtml bool
		text  strings.Builder
	}
	var (
		stack []*open
		out   []readerField
	)
	dec := xml.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode XML: %w", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			path := tok.Name.Local
			if len(stack) > 0 {
				parent := stack[len(stack)-1]
				if parent.xhtml {
					return nil, fmt.Errorf("%s holds the element <%s>", parent.path, tok.Name.Local)
				}
				path = parent.path + "/" + path
			}
			o := &open{path: path}
			typ := ""
			for _, a := range tok.Attr {
				if a.Name.Space == "" && a.Name.Local == "type" {
					typ = strings.ToLower(a.Value)
				}
			}
			switch {
			case tok.Name.Space == atomNS && typ == "xhtml":
				o.xhtml = true
			case tok.Name.Space == atomNS && strings.Contains(typ, "html"):
				o.html = true
			case tok.Name.Space == "" && tok.Name.Local == "description",
				tok.Name.Space == rssContentNS && tok.Name.Local == "encoded":
				o.html = true
			}
			stack = append(stack, o)
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(tok)
			}
		case xml.EndElement:
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			out = append(out, readerField{Path: o.path, Text: o.text.String(), HTML: o.html})
		}
	}
}

// jsonReaderFields decodes a JSON Feed and returns its string values,
// content_html marked HTML: JSON Feed 1.1 says every other field is plain
// text.
func jsonReaderFields(body []byte) ([]readerField, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	var out []readerField
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(path+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s/%d", path, i), x)
			}
		case string:
			out = append(out, readerField{Path: path, Text: v, HTML: strings.HasSuffix(path, "/content_html")})
		}
	}
	walk("", doc)
	return out, nil
}

// renderHTML parses s as a reader parses an HTML field, in a <div>, and
// returns the text it shows and the elements it makes, each with its
// attributes.
func renderHTML(s string) (text string, elements []string) {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(s), ctx)
	if err != nil {
		return "", []string{"unparsable HTML: " + err.Error()}
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
		case html.ElementNode:
			el := "<" + n.Data
			for _, a := range n.Attr {
				el += fmt.Sprintf(" %s=%q", a.Key, a.Val)
			}
			elements = append(elements, el+">")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return b.String(), elements
}

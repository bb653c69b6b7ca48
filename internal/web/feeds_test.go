package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed"
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

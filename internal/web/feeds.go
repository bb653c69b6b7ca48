package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/feeds"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// FeedEntries is how many updates a feed holds: the newest.
const FeedEntries = 100

// Feed formats, by file extension.
var feedTypes = map[string]string{
	"atom": "application/atom+xml; charset=utf-8",
	"rss":  "application/rss+xml; charset=utf-8",
	"json": "application/feed+json; charset=utf-8",
}

func (s *Server) feedAll(w http.ResponseWriter, r *http.Request) {
	s.serveFeed(w, r, watch.FeedScope{}, strings.TrimPrefix(r.URL.Path, "/feeds/all."))
}

func (s *Server) feedPage(w http.ResponseWriter, r *http.Request) {
	stem, format, _ := strings.Cut(r.PathValue("file"), ".")
	id, err := strconv.ParseInt(stem, 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a page id: use /feeds/pages/{id}.atom, .rss or .json", stem))
		return
	}
	s.serveFeed(w, r, watch.FeedScope{PageID: id}, format)
}

func (s *Server) feedTag(w http.ResponseWriter, r *http.Request) {
	stem, format, _ := strings.Cut(r.PathValue("file"), ".")
	tags, err := watch.NormalizeTags([]string{stem})
	if err != nil || len(tags) != 1 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a tag: use /feeds/tags/{tag}.atom, .rss or .json", stem))
		return
	}
	s.serveFeed(w, r, watch.FeedScope{Tag: tags[0]}, format)
}

// serveFeed answers a feed request. A conditional request whose validator
// still holds is answered 304 from the scope's stamp alone: no update row
// is read.
func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, scope watch.FeedScope, format string) {
	ctype, ok := feedTypes[format]
	if !ok {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("format %q: feeds end in .atom, .rss or .json", format))
		return
	}
	stamp, err := s.deps.Updates.FeedStamp(r.Context(), scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	etag := feedETag(scope, format, stamp)
	lastMod := stamp.LastModified().UTC().Truncate(time.Second)
	h := w.Header()
	h.Set("ETag", etag)
	if !lastMod.IsZero() {
		h.Set("Last-Modified", lastMod.Format(http.TimeFormat))
	}
	h.Set("Cache-Control", "private, no-cache")
	if notModified(r, etag, lastMod) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var (
		page  watch.Page
		title = "portalwatch: all pages"
	)
	switch {
	case scope.PageID != 0:
		if page, err = s.deps.Pages.Page(r.Context(), scope.PageID); err != nil {
			s.writeError(w, r, err)
			return
		}
		title = "portalwatch: " + page.DisplayName()
	case scope.Tag != "":
		title = "portalwatch: tag " + scope.Tag
	}
	updates, err := s.deps.Updates.QueryUpdates(r.Context(), watch.UpdateFilter{PageID: scope.PageID, Tag: scope.Tag, Limit: FeedEntries})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	updates = foldBursts(updates)
	f := feedOf(title, s.baseURL(r), r.URL.Path, scope, stamp, updates)
	var buf bytes.Buffer
	switch format {
	case "atom":
		err = writeAtom(&buf, f, updates, s.baseURL(r)+r.URL.Path)
	case "rss":
		err = writeRSS(&buf, f, updates, s.baseURL(r))
	case "json":
		err = writeJSONFeed(&buf, f, updates, s.baseURL(r)+r.URL.Path)
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("write %s feed: %w", format, err))
		return
	}
	h.Set("Content-Type", ctype)
	w.Write(buf.Bytes())
}

// feedETag is a strong validator of the feed's bytes: the same stamp, scope
// and format always give the same feed.
func feedETag(scope watch.FeedScope, format string, st watch.FeedStamp) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d|%s|%s|%d|%d|%d|%d|%d|%d",
		scope.PageID, scope.Tag, format, st.NewestID, st.Newest.UnixMicro(), st.Pages, st.PageSum, st.Changed.UnixMicro(), FeedEntries))
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// notModified applies RFC 9110's rules: If-None-Match when present, else
// If-Modified-Since.
func notModified(r *http.Request, etag string, lastMod time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == etag || t == "*" {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !lastMod.IsZero() {
		if t, err := http.ParseTime(ims); err == nil && !lastMod.After(t) {
			return true
		}
	}
	return false
}

// entryID is an update's stable feed id: it depends on the update only,
// not on the host the feed was read from.
func entryID(u watch.Update) string { return fmt.Sprintf("urn:portalwatch:update:%d", u.ID) }

func feedOf(title, base, path string, scope watch.FeedScope, st watch.FeedStamp, updates []watch.Update) *feeds.Feed {
	home := base + "/"
	switch {
	case scope.PageID != 0:
		home = fmt.Sprintf("%s/pages/%d", base, scope.PageID)
	case scope.Tag != "":
		home = base + "/?tag=" + url.QueryEscape(scope.Tag)
	}
	f := &feeds.Feed{
		Title:       title,
		Link:        &feeds.Link{Href: home},
		Description: "New links on the pages portalwatch watches, newest first",
		Id:          base + path,
		Updated:     st.LastModified().UTC(),
	}
	if f.Updated.IsZero() {
		f.Updated = time.Unix(0, 0).UTC()
	}
	for _, u := range updates {
		f.Items = append(f.Items, &feeds.Item{
			Title:   entryTitle(u),
			Link:    &feeds.Link{Href: u.URL},
			Id:      entryID(u),
			Created: u.DiscoveredAt.UTC(),
			Updated: u.DiscoveredAt.UTC(),
			Author:  &feeds.Author{Name: u.PageName},
			Content: u.Summary,
		})
	}
	return f
}

// entryTitle is the link's text, or its URL when it has none.
func entryTitle(u watch.Update) string {
	if strings.TrimSpace(u.Text) != "" {
		return u.Text
	}
	return u.URL
}

// writeAtom writes f as Atom 1.0. Its texts came from crawled pages or
// from people and none is markup, so every text construct is type="text"
// (RFC 4287 section 3.1.1): a reader shows the characters as they are.
// gorilla/feeds marks content and summary type="html", which has a reader
// decode the crawled text once and render it, a live <img onerror> and all;
// titles, names and the subtitle carry no type, which means text.
//
// The feed names itself (rel="self", RFC 4287 section 4.2.7.2), so a reader
// that was given a copy's address, or followed a redirect, subscribes to
// the feed's own; the token a reader sent is not part of it.
func writeAtom(buf *bytes.Buffer, f *feeds.Feed, updates []watch.Update, self string) error {
	af := (&feeds.Atom{Feed: f}).AtomFeed()
	af.Id = f.Id
	af.Link = nil
	doc := atomDoc{AtomFeed: af, Entries: af.Entries, Links: []*feeds.AtomLink{
		{Href: f.Link.Href, Rel: "alternate", Type: "text/html"},
		{Href: self, Rel: "self", Type: "application/atom+xml"},
	}}
	for i, e := range af.Entries {
		// Atom requires an entry's author, or the feed's: the page is the
		// author of its links. The page's name is the source people know.
		e.Author = &feeds.AtomAuthor{AtomPerson: feeds.AtomPerson{Name: updates[i].PageName}}
		e.Published = e.Updated
		if e.Content != nil {
			e.Content.Type = "text"
		}
		if e.Summary != nil {
			e.Summary.Type = "text"
		}
	}
	return writeXML(buf, doc)
}

// atomDoc is an Atom feed with more than one link: gorilla/feeds writes
// one. Its links and entries hide the embedded feed's.
type atomDoc struct {
	XMLName xml.Name `xml:"feed"`
	*feeds.AtomFeed
	Links   []*feeds.AtomLink  `xml:"link"`
	Entries []*feeds.AtomEntry `xml:"entry"`
}

// rssSource is RSS 2.0's <source url="…">name</source>: the channel an item
// came from, which is its page's own feed, so that a reader of a tag's or of
// every page's feed can subscribe to the one page. gorilla/feeds writes the
// element without its required url, so items are wrapped to carry it.
type rssSource struct {
	XMLName xml.Name `xml:"source"`
	URL     string   `xml:"url,attr"`
	Name    string   `xml:",chardata"`
}

type rssItem struct {
	*feeds.RssItem
	Source *rssSource
}

type rssChannel struct {
	*feeds.RssFeed
	// Self is the channel's own address (<atom:link rel="self">, as the
	// RSS Advisory Board recommends).
	Self  rssSelf   `xml:"atom:link"`
	Items []rssItem `xml:"item"`
}

type rssSelf struct {
	Href string `xml:"href,attr"`
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
}

type rssDoc struct {
	XMLName   xml.Name   `xml:"rss"`
	Version   string     `xml:"version,attr"`
	XMLNSAtom string     `xml:"xmlns:atom,attr"`
	Channel   rssChannel `xml:"channel"`
}

// writeRSS writes f as RSS 2.0. A description is HTML to every reader
// (RSS 2.0 allows "entity-encoded HTML" there, and readers render it), so
// the crawled text is HTML-escaped before it goes in: decoded from the XML it
// is still escaped, and the reader shows the page's characters instead of
// running its markup.
//
// Titles and the source's name stay plain text, escaped for XML only. RSS
// 2.0 allows HTML in descriptions alone, and the RSS Advisory Board says
// titles should not contain HTML; Atom's and JSON Feed's titles are plain
// text too. Escaping titles once more would show "&amp;" for every "&" in
// readers that follow the spec (gofeed decodes a title once); Miniflux
// strips tags from an RSS title and shows it as text either way; and a
// reader that rendered titles as HTML would be open to every feed it reads,
// which escaping here could not fix.
func writeRSS(buf *bytes.Buffer, f *feeds.Feed, updates []watch.Update, base string) error {
	rf := (&feeds.Rss{Feed: f}).RssFeed()
	rf.Description = html.EscapeString(rf.Description)
	doc := rssDoc{Version: "2.0", XMLNSAtom: "http://www.w3.org/2005/Atom", Channel: rssChannel{RssFeed: rf,
		Self: rssSelf{Href: f.Id, Rel: "self", Type: "application/rss+xml"}}}
	for i, it := range rf.Items {
		it.Author = "" // RSS wants an e-mail address there; the page is the source
		it.Description = html.EscapeString(entryContent(updates[i]))
		it.Content = nil // the description carries it
		it.Guid.IsPermaLink = "false"
		source := &rssSource{URL: fmt.Sprintf("%s/feeds/pages/%d.rss", base, updates[i].PageID), Name: updates[i].PageName}
		doc.Channel.Items = append(doc.Channel.Items, rssItem{RssItem: it, Source: source})
	}
	rf.Items = nil
	return writeXML(buf, doc)
}

func writeXML(buf *bytes.Buffer, v any) error {
	buf.WriteString(xml.Header)
	enc := xml.NewEncoder(buf)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return enc.Close()
}

// jsonFeed is JSON Feed 1.1 (https://jsonfeed.org/version/1.1), written by
// hand: gorilla/feeds writes version 1.
type jsonFeed struct {
	Version     string         `json:"version"`
	Title       string         `json:"title"`
	HomePageURL string         `json:"home_page_url"`
	FeedURL     string         `json:"feed_url"`
	Description string         `json:"description,omitempty"`
	Items       []jsonFeedItem `json:"items"`
}

// jsonFeedItem is one entry of a JSON Feed. Its text goes in content_text,
// the plain-text field, never in content_html, which readers render as HTML:
// the text came from a crawled page.
type jsonFeedItem struct {
	ID            string           `json:"id"`
	URL           string           `json:"url"`
	Title         string           `json:"title"`
	ContentText   string           `json:"content_text"`
	DatePublished string           `json:"date_published"`
	Authors       []jsonFeedAuthor `json:"authors,omitempty"`
}

type jsonFeedAuthor struct {
	Name string `json:"name"`
}

func writeJSONFeed(buf *bytes.Buffer, f *feeds.Feed, updates []watch.Update, self string) error {
	jf := jsonFeed{Version: "https://jsonfeed.org/version/1.1", Title: f.Title, HomePageURL: f.Link.Href,
		FeedURL: self, Description: f.Description, Items: make([]jsonFeedItem, len(updates))}
	for i, u := range updates {
		jf.Items[i] = jsonFeedItem{ID: entryID(u), URL: u.URL, Title: entryTitle(u), ContentText: entryContent(u),
			DatePublished: u.DiscoveredAt.UTC().Format(time.RFC3339Nano)}
		if u.PageName != "" {
			jf.Items[i].Authors = []jsonFeedAuthor{{Name: u.PageName}}
		}
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jf); err != nil {
		return errors.New("encode JSON feed: " + err.Error())
	}
	return nil
}

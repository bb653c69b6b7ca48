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

// serveFeed answers a feed request; ?content=full has entries carry their
// articles' bodies. A conditional request whose validator still holds is
// answered 304 from the scope's stamp alone: no update's text is read.
func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, scope watch.FeedScope, format string) {
	ctype, ok := feedTypes[format]
	if !ok {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("format %q: feeds end in .atom, .rss or .json", format))
		return
	}
	var full bool
	switch c := r.URL.Query().Get("content"); c {
	case "":
	case contentFull:
		full = true
	default:
		s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("content %q: want full (entries with their articles), or leave it out", c))
		return
	}
	scope.Entries = FeedEntries
	stamp, err := s.deps.Updates.FeedStamp(r.Context(), scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	etag := feedETag(scope, format, full, stamp)
	lastMod := stamp.LastModified().UTC().Truncate(time.Second)
	if answeredNotModified(w, r, etag, lastMod) {
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
	updates, err := s.deps.Updates.QueryUpdates(r.Context(), watch.UpdateFilter{PageID: scope.PageID, Tag: scope.Tag,
		Limit: FeedEntries, ArticleBody: full})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	updates = foldBursts(updates)
	entries := make([]entry, len(updates))
	for i, u := range updates {
		entries[i] = entryOf(u, full)
	}
	f := feedOf(title, s.baseURL(r), r.URL.Path, scope, stamp, entries)
	var buf bytes.Buffer
	switch format {
	case "atom":
		err = writeAtom(&buf, f, entries, s.baseURL(r)+r.URL.Path)
	case "rss":
		err = writeRSS(&buf, f, entries, s.baseURL(r))
	case "json":
		err = writeJSONFeed(&buf, f, entries, s.baseURL(r)+r.URL.Path)
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("write %s feed: %w", format, err))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(buf.Bytes())
}

// feedETag is a strong validator of the feed's bytes: the same stamp, scope,
// format and content always give the same feed.
func feedETag(scope watch.FeedScope, format string, full bool, st watch.FeedStamp) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d|%s|%s|%t|%d|%d|%d|%d|%d|%d|%d|%d|%d",
		scope.PageID, scope.Tag, format, full, st.NewestID, st.Newest.UnixMicro(), st.Pages, st.PageSum, st.Changed.UnixMicro(),
		st.Articles, st.ArticleSum, st.ArticleFetched.UnixMicro(), FeedEntries))
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

// answeredNotModified sets a feed's validators (ETag, Last-Modified when
// lastMod is known) and Cache-Control, and answers 304 when the request
// holds that version already; it reports whether it did.
func answeredNotModified(w http.ResponseWriter, r *http.Request, etag string, lastMod time.Time) bool {
	h := w.Header()
	h.Set("ETag", etag)
	if !lastMod.IsZero() {
		h.Set("Last-Modified", lastMod.Format(http.TimeFormat))
	}
	h.Set("Cache-Control", "private, no-cache")
	if notModified(r, etag, lastMod) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// entryID is an update's stable feed id: it depends on the update only,
// not on the host the feed was read from.
func entryID(u watch.Update) string { return fmt.Sprintf("urn:portalwatch:update:%d", u.ID) }

// entry is one entry of a feed, whatever its format: an update, and its
// article when one was read.
type entry struct {
	watch.Update
	// ID is the entry's stable id: entryID for an update.
	ID string
	// Channel is the address of the RSS feed the entry belongs to; empty
	// is its page's updates feed.
	Channel string
	// Title is the article's headline, else the link's text (entryTitle).
	Title string
	// Published is when the article says it was published, else when
	// the feed or sitemap that saw the link first says so, else when the
	// link was found; Updated is always when the link was found, which
	// orders the entries.
	Published, Updated time.Time
	// Authors are the article's, else the page's name.
	Authors []string
	// Summary is the article's lead; empty without one.
	Summary string
	// Body is the article's body, with content=full; else empty.
	Body string
}

// text is what the entry says beyond its title when it carries no body:
// the article's lead, else the link's teaser or text (entryContent).
func (e entry) text() string {
	if e.Summary != "" {
		return e.Summary
	}
	return entryContent(e.Update)
}

// entryOf makes u a feed entry; full puts the article's body in Body.
// Only an ok article is used: a pending, failed or paywalled one leaves the
// entry as the link alone.
func entryOf(u watch.Update, full bool) entry {
	e := entry{Update: u, ID: entryID(u), Title: entryTitle(u), Published: u.DiscoveredAt.UTC(), Updated: u.DiscoveredAt.UTC()}
	if u.PageName != "" {
		e.Authors = []string{u.PageName}
	}
	if u.PublishedAt != nil {
		e.Published = u.PublishedAt.UTC()
	}
	a := u.Article
	if a == nil || a.Status != watch.ArticleOK {
		return e
	}
	if h := strings.TrimSpace(a.Headline); h != "" {
		e.Title = h
	}
	if t, ok := a.Published(); ok {
		e.Published = t.UTC()
	}
	if len(a.Author) > 0 {
		e.Authors = a.Author
	}
	e.Summary = strings.TrimSpace(a.Description)
	if full {
		e.Body = strings.TrimSpace(a.Body)
	}
	return e
}

// paragraphsHTML writes text as HTML paragraphs, one for each run of lines
// between blank lines, every character escaped: what the text says is
// shown, never run.
func paragraphsHTML(text string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			b.WriteString("<p>")
			b.WriteString(html.EscapeString(p))
			b.WriteString("</p>")
		}
	}
	return b.String()
}

func feedOf(title, base, path string, scope watch.FeedScope, st watch.FeedStamp, entries []entry) *feeds.Feed {
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
	for _, e := range entries {
		// Atom's summary is the lead; its content the body, else, for an
		// entry without a lead, the link's teaser.
		content := e.Body
		if content == "" && e.Summary == "" {
			content = e.Update.Summary
		}
		f.Items = append(f.Items, &feeds.Item{
			Title:       e.Title,
			Link:        &feeds.Link{Href: e.URL},
			Id:          e.ID,
			Created:     e.Published,
			Updated:     e.Updated,
			Description: e.Summary,
			Content:     content,
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
func writeAtom(buf *bytes.Buffer, f *feeds.Feed, entries []entry, self string) error {
	af := (&feeds.Atom{Feed: f}).AtomFeed()
	af.Id = f.Id
	af.Link = nil
	doc := atomDoc{AtomFeed: af, Links: []*feeds.AtomLink{
		{Href: f.Link.Href, Rel: "alternate", Type: "text/html"},
		{Href: self, Rel: "self", Type: "application/atom+xml"},
	}}
	for i, e := range af.Entries {
		// Atom requires an entry's author, or the feed's: the article's
		// authors, else the page, the author of its links, by the name
		// people know it by.
		authors := make([]*feeds.AtomAuthor, 0, 1)
		for _, name := range entries[i].Authors {
			authors = append(authors, &feeds.AtomAuthor{AtomPerson: feeds.AtomPerson{Name: name}})
		}
		if len(authors) == 0 {
			authors = append(authors, &feeds.AtomAuthor{})
		}
		e.Author = nil // the entry's authors are atomEntry's
		var categories []atomCategory
		for _, c := range placeCategories(entries[i].Update) {
			categories = append(categories, atomCategory{Term: c})
		}
		doc.Entries = append(doc.Entries, &atomEntry{AtomEntry: e, Authors: authors, Categories: categories})
		// published is when the article says it appeared; updated, when
		// the link was found, which is what orders the entries.
		e.Published = entries[i].Published.Format(time.RFC3339)
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
	Links   []*feeds.AtomLink `xml:"link"`
	Entries []*atomEntry      `xml:"entry"`
}

// atomEntry is an Atom entry with more than one author: gorilla/feeds
// writes one.
type atomEntry struct {
	*feeds.AtomEntry
	Authors []*feeds.AtomAuthor `xml:"author"`
	// Categories are the entry's place (placeCategories); gorilla/feeds
	// writes a category's term as its text, where Atom wants an attribute.
	Categories []atomCategory `xml:"category"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

// placeCategories says where an update's link stood on its page as feed
// categories, which readers show and filter by: "position:3", then
// "landmark:main" unless the landmark is none, then "heading:2" when its
// text is a heading; none when its place is not known. A story a feed or
// a news sitemap saw first has no place, and says "via:feed" or
// "via:sitemap" instead.
func placeCategories(u watch.Update) []string {
	if u.Source != "" && u.Source != watch.SourceHomepage {
		return []string{"via:" + u.Source}
	}
	p := u.Place
	if !p.Known() {
		return nil
	}
	c := []string{"position:" + strconv.Itoa(p.Position)}
	if p.Landmark != watch.LandmarkNone && p.Landmark != "" {
		c = append(c, "landmark:"+string(p.Landmark))
	}
	if p.Heading > 0 {
		c = append(c, "heading:"+strconv.Itoa(p.Heading))
	}
	return c
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
	// Creators are the article's authors (Dublin Core, as readers take
	// them: RSS 2.0's own author wants an e-mail address).
	Creators []string `xml:"dc:creator"`
	Source   *rssSource
	// Categories are the item's place (placeCategories).
	Categories []string `xml:"category"`
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
	XMLNSDC   string     `xml:"xmlns:dc,attr"`
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
//
// An article's body (content=full) goes in the description as paragraphs,
// <p> elements around text escaped the same way. The item's pubDate is when
// the article says it appeared, else when the link was found.
func writeRSS(buf *bytes.Buffer, f *feeds.Feed, entries []entry, base string) error {
	rf := (&feeds.Rss{Feed: f}).RssFeed()
	rf.Description = html.EscapeString(rf.Description)
	doc := rssDoc{Version: "2.0", XMLNSAtom: "http://www.w3.org/2005/Atom", XMLNSDC: "http://purl.org/dc/elements/1.1/",
		Channel: rssChannel{RssFeed: rf, Self: rssSelf{Href: f.Id, Rel: "self", Type: "application/rss+xml"}}}
	for i, it := range rf.Items {
		e := entries[i]
		it.Author = "" // RSS wants an e-mail address there; the page is the source
		it.Description = html.EscapeString(e.text())
		if e.Body != "" {
			it.Description = paragraphsHTML(e.Body)
		}
		it.Content = nil // the description carries it
		it.Guid.IsPermaLink = "false"
		var creators []string
		if e.Article != nil && e.Article.Status == watch.ArticleOK {
			creators = e.Article.Author
		}
		source := &rssSource{URL: e.Channel, Name: e.PageName}
		if source.URL == "" {
			source.URL = fmt.Sprintf("%s/feeds/pages/%d.rss", base, e.PageID)
		}
		doc.Channel.Items = append(doc.Channel.Items, rssItem{RssItem: it, Creators: creators, Source: source,
			Categories: placeCategories(e.Update)})
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
	ID          string `json:"id"`
	URL         string `json:"url"`
	Title       string `json:"title"`
	ContentText string `json:"content_text"`
	// Summary is the article's lead, plain text as JSON Feed says.
	Summary       string `json:"summary,omitempty"`
	DatePublished string `json:"date_published"`
	// DateModified is when the link was found, given when the article
	// states another publication time.
	DateModified string           `json:"date_modified,omitempty"`
	Authors      []jsonFeedAuthor `json:"authors,omitempty"`
	// Tags are the item's place (placeCategories).
	Tags []string `json:"tags,omitempty"`
}

type jsonFeedAuthor struct {
	Name string `json:"name"`
}

func writeJSONFeed(buf *bytes.Buffer, f *feeds.Feed, entries []entry, self string) error {
	jf := jsonFeed{Version: "https://jsonfeed.org/version/1.1", Title: f.Title, HomePageURL: f.Link.Href,
		FeedURL: self, Description: f.Description, Items: make([]jsonFeedItem, len(entries))}
	for i, e := range entries {
		item := jsonFeedItem{ID: e.ID, URL: e.URL, Title: e.Title, ContentText: e.text(), Summary: e.Summary,
			DatePublished: e.Published.Format(time.RFC3339Nano), Tags: placeCategories(e.Update)}
		if e.Body != "" {
			item.ContentText = e.Body
		}
		if !e.Published.Equal(e.Updated) {
			item.DateModified = e.Updated.Format(time.RFC3339Nano)
		}
		for _, name := range e.Authors {
			item.Authors = append(item.Authors, jsonFeedAuthor{Name: name})
		}
		jf.Items[i] = item
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(jf); err != nil {
		return errors.New("encode JSON feed: " + err.Error())
	}
	return nil
}

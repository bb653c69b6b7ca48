package pagefile

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Write writes pages in format (CSV or OPML).
func Write(w io.Writer, format string, pages []watch.Page) error {
	switch format {
	case CSV:
		cw := csv.NewWriter(w)
		cw.Write(csvHeader)
		for _, p := range pages {
			o := p.Options
			cw.Write([]string{p.BaseURL, p.Name, strings.Join(p.Tags, " "), p.Interval.String(),
				strconv.FormatBool(p.Enabled), strconv.FormatBool(o.SameSiteOnly), lines(o.Ignore),
				lines(o.Within), lines(o.Exclude), lines(o.IncludeText), lines(o.ExcludeText), lines(o.IncludeURL), lines(o.ExcludeURL),
				strconv.FormatBool(p.BurstDetection), strconv.FormatBool(p.Articles), headerLines(p.Headers),
				strconv.FormatBool(p.Render), p.WaitFor, p.Proxy, strings.Join(sourcesOf(p), ","), strings.Join(p.RenderAllow, " ")})
		}
		cw.Flush()
		return cw.Error()
	case OPML:
		doc := opml{Version: "2.0", Title: "portalwatch pages"}
		for _, p := range pages {
			po := p.Options
			o := outline{Text: p.DisplayName(), Type: "link", URL: p.BaseURL, Interval: p.Interval.String(),
				SameSite: po.SameSiteOnly, Ignore: lines(po.Ignore), Within: lines(po.Within), Exclude: lines(po.Exclude),
				IncludeText: lines(po.IncludeText), ExcludeText: lines(po.ExcludeText),
				IncludeURL: lines(po.IncludeURL), ExcludeURL: lines(po.ExcludeURL), Headers: headerLines(p.Headers), Proxy: p.Proxy,
				Render: p.Render, WaitFor: p.WaitFor, RenderAllow: strings.Join(p.RenderAllow, " ")}
			if watch.HasBeyondHomepage(p.Sources) {
				o.Sources = strings.Join(p.Sources, ",")
			}
			if !p.Enabled {
				o.Enabled = "false"
			}
			if !p.BurstDetection {
				o.BurstDetection = "false"
			}
			if !p.Articles {
				o.Articles = "false"
			}
			// Always written, so that an empty name (the page is shown by
			// its title or host, the outline's text) comes back empty.
			o.Name = &p.Name
			for _, t := range p.Tags {
				o.Category = append(o.Category, "/"+t)
			}
			doc.Outlines = append(doc.Outlines, o)
		}
		return doc.write(w)
	}
	return fmt.Errorf("unknown format %q: want csv or opml", format)
}

// WriteFeeds writes feeds as an OPML 2.0 list of "rss" outlines titled
// title, the list a feed reader imports. Each outline is named after its
// page and its own title (feedName), links the page, and carries the
// page's tags as its categories ("/tag", as Write writes them).
func WriteFeeds(w io.Writer, title string, feeds []watch.PageFeed) error {
	doc := opml{Version: "2.0", Title: title, Outlines: make([]outline, 0, len(feeds))}
	for _, f := range feeds {
		text := feedName(f)
		o := outline{Text: text, Title: text, Type: "rss", XMLURL: f.URL, HTMLURL: f.PageURL}
		for _, t := range f.Tags {
			o.Category = append(o.Category, "/"+t)
		}
		doc.Outlines = append(doc.Outlines, o)
	}
	return doc.write(w)
}

// opml is the document Write writes.
type opml struct {
	XMLName  xml.Name  `xml:"opml"`
	Version  string    `xml:"version,attr"`
	Title    string    `xml:"head>title"`
	Outlines []outline `xml:"body>outline"`
}

// feedName names f after its page and its own title, without saying a
// name twice: "Ministry of Health — Press releases", but "Ministry of
// Health" for a feed titled "Health" and "Ministry of Health news" for one
// titled so.
func feedName(f watch.PageFeed) string {
	page, title := strings.ToLower(f.PageName), strings.ToLower(f.Title)
	switch {
	case title == "" || strings.Contains(page, title):
		return f.PageName
	case strings.Contains(title, page):
		return f.Title
	}
	return f.PageName + " — " + f.Title
}

// write writes the document, indented, with its XML declaration.
func (doc opml) write(w io.Writer) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write OPML: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// outline is an OPML 2.0 outline of type "link", as Write writes it; the
// pw-prefixed attributes carry what OPML has no word for. Other readers
// ignore them. The reader (opml.go) reads the same attributes token by
// token, never into this tree: a test writes every one and reads it back.
type outline struct {
	Text     string  `xml:"text,attr"`
	Title    string  `xml:"title,attr,omitempty"`
	Type     string  `xml:"type,attr,omitempty"`
	URL      string  `xml:"url,attr,omitempty"`
	HTMLURL  string  `xml:"htmlUrl,attr,omitempty"`
	XMLURL   string  `xml:"xmlUrl,attr,omitempty"`
	Category catList `xml:"category,attr,omitempty"`
	Name     *string `xml:"pwName,attr,omitempty"` // nil: absent, as in other programs' OPML
	Interval string  `xml:"pwInterval,attr,omitempty"`
	Enabled  string  `xml:"pwEnabled,attr,omitempty"`
	SameSite bool    `xml:"pwSameSite,attr,omitempty"`
	Ignore   string  `xml:"pwIgnore,attr,omitempty"`
	// Regions and keyword rules, one selector or pattern a line (the
	// encoder writes a line break in an attribute as &#xA;, so it survives).
	Within         string `xml:"pwWithin,attr,omitempty"`
	Exclude        string `xml:"pwExclude,attr,omitempty"`
	IncludeText    string `xml:"pwIncludeText,attr,omitempty"`
	ExcludeText    string `xml:"pwExcludeText,attr,omitempty"`
	IncludeURL     string `xml:"pwIncludeUrl,attr,omitempty"`
	ExcludeURL     string `xml:"pwExcludeUrl,attr,omitempty"`
	BurstDetection string `xml:"pwBurstDetection,attr,omitempty"` // written only as "false"
	Articles       string `xml:"pwArticles,attr,omitempty"`       // written only as "false"
	// Headers are the request headers in clear, "Name: value" a line;
	// never a secret.
	Headers string `xml:"pwHeaders,attr,omitempty"`
	// Proxy names the proxy the page is fetched through.
	Proxy string `xml:"pwProxy,attr,omitempty"`
	// Render and WaitFor are the page's rendering in headless Chromium.
	Render  bool   `xml:"pwRender,attr,omitempty"`
	WaitFor string `xml:"pwWaitFor,attr,omitempty"`
	// RenderAllow are the hosts beyond the site a rendered page may load
	// from, separated by spaces.
	RenderAllow string `xml:"pwRenderAllow,attr,omitempty"`
	// Sources are what the page is watched through, comma-separated;
	// written only beyond the homepage alone.
	Sources string `xml:"pwSources,attr,omitempty"`
}

// sourcesOf is what p is watched through, its homepage when it says
// nothing.
func sourcesOf(p watch.Page) []string {
	if len(p.Sources) == 0 {
		return watch.DefaultSources
	}
	return p.Sources
}

// lines joins a list as its cell or attribute holds it.
func lines(l []string) string { return strings.Join(l, "\n") }

// catList is OPML's comma-separated category list.
type catList []string

func (c catList) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: strings.Join(c, ",")}, nil
}

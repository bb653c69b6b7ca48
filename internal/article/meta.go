package article

import (
	"net/url"
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/publicsuffix"
)

// page is what one walk of the DOM gathers for the metadata.
type page struct {
	meta      map[string]string // lower-cased name, property or itemprop → first content
	metaAll   map[string][]string
	jsonLD    []string
	canonical string
	lang      string
	title     string
	h1        string
	times     []timeElem
	bylines   []string
}

type timeElem struct {
	datetime string
	// published: marked as the publication time (pubdate, itemprop
	// datePublished, a class naming it).
	published bool
	modified  bool
}

// maxJSONLD caps the JSON-LD a page may bring: blocks and bytes.
const (
	maxJSONLDBlocks = 32
	maxJSONLDBytes  = 1 << 20
	maxBylines      = 8
)

// gather walks doc once, depth first, with an explicit stack.
func gather(doc *html.Node) *page {
	p := &page{meta: map[string]string{}, metaAll: map[string][]string{}}
	jsonBytes := 0
	stack := []*html.Node{doc}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Type == html.ElementNode {
			switch n.DataAtom {
			case atom.Html:
				p.lang = attr(n, "lang")
				if p.lang == "" {
					p.lang = attr(n, "xml:lang")
				}
			case atom.Title:
				if p.title == "" {
					p.title = text(n)
				}
			case atom.Meta:
				content, ok := attrOK(n, "content")
				if !ok {
					break
				}
				content = strings.TrimSpace(content)
				for _, key := range []string{"property", "name", "itemprop", "http-equiv"} {
					if k := strings.ToLower(strings.TrimSpace(attr(n, key))); k != "" && content != "" {
						if _, seen := p.meta[k]; !seen {
							p.meta[k] = content
						}
						p.metaAll[k] = append(p.metaAll[k], content)
					}
				}
			case atom.Link:
				if p.canonical == "" && hasToken(attr(n, "rel"), "canonical") {
					p.canonical = strings.TrimSpace(attr(n, "href"))
				}
			case atom.Script:
				if strings.Contains(strings.ToLower(attr(n, "type")), "ld+json") && len(p.jsonLD) < maxJSONLDBlocks {
					if t := text(n); jsonBytes+len(t) <= maxJSONLDBytes {
						jsonBytes += len(t)
						p.jsonLD = append(p.jsonLD, t)
					}
				}
				continue
			case atom.Style, atom.Noscript, atom.Template:
				continue
			case atom.H1:
				if p.h1 == "" {
					p.h1 = text(n)
				}
			case atom.Time:
				if dt := attr(n, "datetime"); dt != "" {
					hint := strings.ToLower(attr(n, "itemprop") + " " + attr(n, "class") + " " + attr(n, "id"))
					_, pubdate := attrOK(n, "pubdate")
					p.times = append(p.times, timeElem{
						datetime:  dt,
						published: pubdate || strings.Contains(hint, "published") || strings.Contains(hint, "pubdate"),
						modified:  strings.Contains(hint, "modified") || strings.Contains(hint, "updated"),
					})
				}
			}
			if len(p.bylines) < maxBylines && isByline(n) {
				if t := text(n); t != "" && len(t) < 200 {
					p.bylines = append(p.bylines, t)
				}
			}
		}
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, c)
		}
	}
	return p
}

// isByline says whether n is marked as naming an author.
func isByline(n *html.Node) bool {
	if hasToken(attr(n, "rel"), "author") {
		return true
	}
	if ip := strings.ToLower(attr(n, "itemprop")); ip == "author" || ip == "creator" {
		// A microdata author holds its name in itemprop=name, if any.
		return true
	}
	class := strings.ToLower(attr(n, "class"))
	for _, f := range strings.Fields(class) {
		switch f {
		case "byline", "author", "author-name", "byline__name", "byline-name", "article-author", "post-author", "entry-author", "author__name", "c-byline__author":
			return true
		}
	}
	return false
}

// readMetadata fills every field of a but the body.
func readMetadata(doc *html.Node, pageURL *url.URL, a *Article) {
	p := gather(doc)
	ld := readJSONLD(p.jsonLD)
	if ld.notFree {
		notFree := false
		a.IsAccessibleForFree, a.Sources["isAccessibleForFree"] = &notFree, "json-ld"
	}
	set := func(field string, dst *string, candidates ...source) {
		for _, c := range candidates {
			if v := clean(c.value); v != "" {
				*dst = v
				a.Sources[field] = c.name
				return
			}
		}
	}
	m := func(names ...string) []source {
		var out []source
		for _, name := range names {
			src := "meta:" + name
			if strings.HasPrefix(name, "og:") || strings.HasPrefix(name, "article:") {
				src = "opengraph"
			}
			out = append(out, source{src, p.meta[name]})
		}
		return out
	}

	set("headline", &a.Headline, append(append([]source{{"json-ld", ld.headline}}, m("og:title", "twitter:title", "parsely-title", "sailthru.title", "dc.title", "dcterms.title")...),
		source{"dom", p.h1}, source{"dom", p.title})...)
	set("description", &a.Description, append([]source{{"json-ld", ld.description}}, m("og:description", "twitter:description", "description", "dc.description", "dcterms.description", "sailthru.description")...)...)
	set("articleSection", &a.ArticleSection, append([]source{{"json-ld", ld.section}}, m("article:section", "parsely-section", "sailthru.section")...)...)
	set("inLanguage", &a.InLanguage, append([]source{{"json-ld", ld.language}, {"dom", p.lang}}, m("og:locale", "content-language", "dc.language", "language")...)...)
	a.InLanguage = strings.ReplaceAll(a.InLanguage, "_", "-")

	// Image: absolute, http(s).
	var images []source
	images = append(images, source{"json-ld", ld.image})
	images = append(images, m("og:image", "og:image:url", "og:image:secure_url", "twitter:image", "twitter:image:src", "parsely-image-url", "sailthru.image.full")...)
	for i := range images {
		images[i].value = resolveHTTP(pageURL, images[i].value)
	}
	set("image", &a.Image, images...)

	// Dates.
	pubs := []source{{"json-ld", ld.published}}
	pubs = append(pubs, m("article:published_time", "og:published_time", "article:published", "datepublished", "parsely-pub-date", "sailthru.date", "dc.date.issued", "dcterms.issued", "dc.date.created", "dcterms.created", "dc.date", "dcterms.date", "pubdate", "publishdate", "publish-date", "publish_date", "date", "article.published", "cxenseparse:recs:publishtime", "citation_publication_date", "citation_date")...)
	for _, t := range p.times {
		if t.published {
			pubs = append(pubs, source{"time[datetime]", t.datetime})
		}
	}
	for _, t := range p.times {
		if !t.modified {
			pubs = append(pubs, source{"time[datetime]", t.datetime})
			break
		}
	}
	setDate(a, "datePublished", &a.DatePublished, pubs)
	if a.DatePublished == "" {
		if d := dateInURL(pageURL); d != "" {
			a.DatePublished = d
			a.Sources["datePublished"] = "url"
		}
	}
	if a.DatePublished == "" {
		// Nothing stated: go-htmldate's reading of the text, its
		// bylines and its date patterns (fast mode: no extensive scan).
		if d := dateInText(doc, pageURL); d != "" {
			a.DatePublished = d
			a.Sources["datePublished"] = "htmldate"
		}
	}
	mods := []source{{"json-ld", ld.modified}}
	mods = append(mods, m("article:modified_time", "og:updated_time", "article:modified", "datemodified", "dc.date.modified", "dcterms.modified", "last-modified", "sailthru.lastmodified")...)
	for _, t := range p.times {
		if t.modified {
			mods = append(mods, source{"time[datetime]", t.datetime})
		}
	}
	setDate(a, "dateModified", &a.DateModified, mods)

	// Authors.
	switch {
	case len(ld.authors) > 0:
		a.Author, a.Sources["author"] = names(ld.authors), "json-ld"
	default:
		for _, name := range []string{"author", "article:author", "parsely-author", "sailthru.author", "dc.creator", "dcterms.creator", "byl", "citation_author"} {
			var vals []string
			for _, v := range p.metaAll[name] {
				if !looksLikeURL(v) {
					vals = append(vals, splitAuthors(v)...)
				}
			}
			if len(vals) > 0 {
				src := "meta:" + name
				if name == "article:author" {
					src = "opengraph"
				}
				a.Author, a.Sources["author"] = names(vals), src
				break
			}
		}
		if len(a.Author) == 0 && len(p.bylines) > 0 {
			var vals []string
			for _, b := range p.bylines {
				vals = append(vals, splitAuthors(stripBy(b))...)
			}
			if a.Author = names(vals); len(a.Author) > 0 {
				a.Sources["author"] = "dom"
			}
		}
	}
	if len(a.Author) == 0 {
		a.Author = nil
	}

	// Keywords.
	switch {
	case len(ld.keywords) > 0:
		a.Keywords, a.Sources["keywords"] = dedupe(ld.keywords), "json-ld"
	case len(p.metaAll["article:tag"]) > 0:
		var tags []string
		for _, v := range p.metaAll["article:tag"] {
			tags = append(tags, strings.Split(v, ",")...)
		}
		a.Keywords, a.Sources["keywords"] = dedupe(tags), "opengraph"
	default:
		for _, name := range []string{"news_keywords", "keywords", "parsely-tags", "sailthru.tags"} {
			if v := p.meta[name]; v != "" {
				a.Keywords, a.Sources["keywords"] = dedupe(strings.Split(v, ",")), "meta:"+name
				break
			}
		}
	}
	if len(a.Keywords) == 0 {
		a.Keywords = nil
	}

	// Canonical URL: only on the page's own registrable domain.
	a.URL = pageURL.String()
	a.Sources["url"] = "page"
	for _, c := range []source{{"link[rel=canonical]", p.canonical}, {"opengraph", p.meta["og:url"]}, {"json-ld", ld.url}} {
		if u := resolveHTTP(pageURL, c.value); u != "" && sameSite(pageURL, u) {
			a.URL, a.Sources["url"] = u, c.name
			break
		}
	}
}

type source struct{ name, value string }

// setDate sets dst to the first candidate that parses as a date.
func setDate(a *Article, field string, dst *string, candidates []source) {
	for _, c := range candidates {
		if d := normalizeDate(c.value); d != "" {
			*dst = d
			a.Sources[field] = c.name
			return
		}
	}
}

// sameSite says whether raw is on base's registrable domain (eTLD+1).
func sameSite(base *url.URL, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h1, h2 := strings.ToLower(base.Hostname()), strings.ToLower(u.Hostname())
	if h1 == h2 {
		return true
	}
	d1, err1 := publicsuffix.EffectiveTLDPlusOne(h1)
	d2, err2 := publicsuffix.EffectiveTLDPlusOne(h2)
	return err1 == nil && err2 == nil && d1 == d2
}

// resolveHTTP resolves raw against base; "" unless the result is http(s).
func resolveHTTP(base *url.URL, raw string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > 4096 {
		return ""
	}
	u, err := base.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return u.String()
}

func looksLikeURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "/")
}

var byPrefix = regexp.MustCompile(`(?i)^\s*(by|von|par|por|di|door|av|af)\s*[:\s]\s*`)

// stripBy removes a leading "By " and anything after a line break or a "|".
func stripBy(s string) string {
	s = byPrefix.ReplaceAllString(s, "")
	if i := strings.IndexAny(s, "|\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

var authorSep = regexp.MustCompile(`\s*(?:,|;|&|\band\b|\bund\b|\bet\b|\by\b)\s*`)

func splitAuthors(s string) []string {
	return authorSep.Split(s, -1)
}

// names cleans, filters and dedupes author names.
func names(in []string) []string {
	var out []string
	for _, n := range in {
		n = clean(stripBy(n))
		if n == "" || len(n) > 100 || looksLikeURL(n) || strings.Count(n, " ") > 6 {
			continue
		}
		out = append(out, n)
	}
	return dedupe(out)
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		s = clean(s)
		k := strings.ToLower(s)
		if s == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// clean collapses whitespace and unescapes what a page escaped twice.
func clean(s string) string {
	if strings.Contains(s, "&") {
		s = html.UnescapeString(s)
	}
	return strings.Join(strings.Fields(s), " ")
}

func attr(n *html.Node, key string) string {
	v, _ := attrOK(n, key)
	return v
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return a.Val, true
		}
	}
	return "", false
}

func hasToken(list, token string) bool {
	for _, f := range strings.Fields(list) {
		if strings.EqualFold(f, token) {
			return true
		}
	}
	return false
}

// maxText caps the text gathered from one element.
const maxText = 64 << 10

// text is n's text, whitespace collapsed, scripts and styles left out.
func text(n *html.Node) string {
	var b strings.Builder
	stack := []*html.Node{n}
	for len(stack) > 0 && b.Len() < maxText {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch c.Type {
		case html.TextNode:
			b.WriteString(c.Data)
			b.WriteByte(' ')
		case html.ElementNode, html.DocumentNode:
			if c.DataAtom == atom.Style || (c.DataAtom == atom.Script && c != n) {
				continue
			}
			for k := c.LastChild; k != nil; k = k.PrevSibling {
				stack = append(stack, k)
			}
		}
	}
	if n.DataAtom == atom.Script {
		return strings.TrimSpace(b.String())
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

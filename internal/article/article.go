// Package article reads one article page — a news story, a blog post — into
// its headline, dates, authors, lead and body, named as schema.org names them.
//
// Extract prefers what the page states about itself: JSON-LD (Article,
// NewsArticle, BlogPosting and their kin, in @graph, in arrays, in several
// blocks), then OpenGraph and article:* meta, then Dublin Core, parsely and
// sailthru meta, then <time datetime>, and only then the DOM (h1, bylines)
// and dates in the URL. The body is the main text found by go-trafilatura,
// paragraphs kept and boilerplate left out. Article.Sources says where each
// field came from.
package article

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Article is one article page's content, its fields and JSON names those of
// schema.org's Article. An empty field was not found.
type Article struct {
	Headline string `json:"headline,omitempty"`
	// Description is the lead: the summary the page gives of itself.
	Description string `json:"description,omitempty"`
	// ArticleBody is the main text, paragraphs separated by a blank line.
	ArticleBody string `json:"articleBody,omitempty"`
	// DatePublished and DateModified are RFC 3339 with the offset the page
	// stated ("2024-05-01T09:30:00+02:00"); a date stated without a time
	// stays a date ("2024-05-01"), and a time stated without an offset has
	// none ("2024-05-01T09:30:00").
	DatePublished string `json:"datePublished,omitempty"`
	DateModified  string `json:"dateModified,omitempty"`
	// Author lists the authors' names, without duplicates.
	Author     []string `json:"author,omitempty"`
	InLanguage string   `json:"inLanguage,omitempty"`
	// URL is the canonical URL the page states, when it is on the page's
	// own registrable domain; otherwise the page's URL.
	URL            string   `json:"url,omitempty"`
	Image          string   `json:"image,omitempty"`
	ArticleSection string   `json:"articleSection,omitempty"`
	Keywords       []string `json:"keywords,omitempty"`
	// BodySkipped says why ArticleBody is empty when the page was not
	// read for it at all (a page too large for the body step); empty when
	// it was read, whether or not a body was found.
	BodySkipped string `json:"bodySkipped,omitempty"`
	// IsAccessibleForFree is false when the page says its content is not
	// free (a paywall); nil when it says nothing or that it is free.
	IsAccessibleForFree *bool `json:"isAccessibleForFree,omitempty"`
	// Sources maps each field found (by its JSON name) to where it came from:
	// "json-ld", "opengraph", "meta:<name>", "time[datetime]", "dom", "url"
	// or "trafilatura".
	Sources map[string]string `json:"sources,omitempty"`
}

// Default limits.
const (
	DefaultMaxBytes = 5 << 20
	DefaultMaxNodes = 200_000
)

// Options bound Extract. The zero value is the defaults.
type Options struct {
	// MaxBytes is the largest page accepted, in bytes; 0 is DefaultMaxBytes
	// (5 MiB), the crawler's cap on a page.
	MaxBytes int
	// MaxNodes is the most HTML nodes a page may parse into; 0 is
	// DefaultMaxNodes (200,000). It bounds the time every later step takes.
	MaxNodes int
}

// WithDefaults returns o with every zero field set to its default.
func (o Options) WithDefaults() Options {
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxNodes == 0 {
		o.MaxNodes = DefaultMaxNodes
	}
	return o
}

// Errors Extract returns, wrapped with the details of the page.
var (
	// ErrTooLarge: the page is over Options.MaxBytes or Options.MaxNodes,
	// or nests elements deeper than x/net/html parses (512).
	ErrTooLarge = errors.New("page too large")
	// ErrNoArticle: the page has no headline and less than 25 words of body.
	ErrNoArticle = errors.New("no article found")
	// ErrBadURL: the page's URL is not an absolute http(s) URL.
	ErrBadURL = errors.New("bad page URL")
)

// Extract reads the article in page, HTML already decoded to UTF-8 (invalid
// bytes are read as U+FFFD), fetched from pageURL, which must be an absolute
// http or https URL: relative links resolve against it, the canonical URL must
// share its registrable domain, and dates in it are a last resort.
//
// ctx is checked between steps; each step is bounded by Options.MaxNodes, so
// a page cannot hold Extract much past ctx's deadline. Errors: ErrBadURL,
// ErrTooLarge, ErrNoArticle (each wrapped with what was wrong), or ctx's
// error. Extract is safe for concurrent use and never panics on any input.
func Extract(ctx context.Context, page []byte, pageURL *url.URL, opts Options) (*Article, error) {
	opts = opts.WithDefaults()
	if pageURL == nil || !pageURL.IsAbs() || (pageURL.Scheme != "http" && pageURL.Scheme != "https") || pageURL.Host == "" {
		return nil, fmt.Errorf("%w: %v: want an absolute http(s) URL, the one the page was fetched from (watchctl extract --url)", ErrBadURL, pageURL)
	}
	if len(page) > opts.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d (Options.MaxBytes)", ErrTooLarge, len(page), opts.MaxBytes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !utf8.Valid(page) {
		page = []byte(strings.ToValidUTF8(string(page), "\uFFFD"))
	}
	doc, err := html.Parse(strings.NewReader(string(page)))
	if err != nil {
		// x/net/html repairs any markup but refuses more than 512 open
		// elements (a page nested deeper); a read error cannot happen.
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	if n := countNodes(doc, opts.MaxNodes); n > opts.MaxNodes {
		return nil, fmt.Errorf("%w: over %d HTML nodes (Options.MaxNodes)", ErrTooLarge, opts.MaxNodes)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := &Article{Sources: map[string]string{}}
	readMetadata(doc, pageURL, a)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The body extractor prunes the tree it is given: it comes last.
	body, skipped := extractBody(doc, pageURL)
	a.BodySkipped = skipped
	if body != "" {
		a.ArticleBody = body
		a.Sources["articleBody"] = "trafilatura"
	}
	if a.Headline == "" && len(strings.Fields(a.ArticleBody)) < minWords {
		return nil, fmt.Errorf("%w at %s: no headline and %d words of body text (is it an article page, and is it the whole page?)", ErrNoArticle, pageURL.Redacted(), len(strings.Fields(a.ArticleBody)))
	}
	return a, nil
}

// minWords is the least body text that makes an article of a page without
// a headline.
const minWords = 25

// countNodes counts doc's nodes, stopping once past limit.
func countNodes(doc *html.Node, limit int) int {
	n := 0
	stack := []*html.Node{doc}
	for len(stack) > 0 && n <= limit {
		node := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		for c := node.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
	return n
}

// StatedURL is the absolute http(s) URL page states as its own (its
// <link rel=canonical>, else its og:url), or nil. It is for a page saved
// without the URL it was fetched from; Extract then trusts it.
func StatedURL(page []byte) *url.URL {
	if len(page) > DefaultMaxBytes {
		page = page[:DefaultMaxBytes]
	}
	doc, err := html.Parse(strings.NewReader(strings.ToValidUTF8(string(page), "\uFFFD")))
	if err != nil {
		return nil
	}
	p := gather(doc)
	for _, raw := range []string{p.canonical, p.meta["og:url"]} {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			return u
		}
	}
	return nil
}

package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// acceptOf is the Accept header of a request for want.
func acceptOf(want watch.ContentKind) string {
	switch want {
	case watch.ContentFeed:
		return "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.1"
	case watch.ContentSitemap:
		return "application/xml, text/xml, application/gzip;q=0.9, */*;q=0.1"
	}
	return accept
}

// accepts reports whether a response of mediaType ("" when it had none)
// may hold content of kind want. Servers send feeds and sitemaps under
// many types (text/plain, text/html, application/octet-stream); only
// types that cannot be them are refused, and the parser decides the rest.
func accepts(want watch.ContentKind, mediaType string) bool {
	switch {
	case mediaType == "", strings.HasSuffix(mediaType, "+xml"), strings.HasSuffix(mediaType, "/xml"),
		mediaType == "text/plain", mediaType == "text/html", mediaType == "application/octet-stream":
		return true
	case want == watch.ContentFeed:
		return mediaType == "application/json" || mediaType == "application/feed+json"
	case want == watch.ContentSitemap:
		return mediaType == "application/gzip" || mediaType == "application/x-gzip"
	}
	return false
}

// readOther reads the body of a response to a request for a feed or a
// sitemap: its type checked against the kind, its bytes returned as
// received (a gzipped sitemap unpacked, within the same cap).
func (c *Client) readOther(ctx, fctx context.Context, req Request, start time.Time, resp *http.Response, mediaType string, res Result) (Result, error) {
	if !accepts(req.Want, mediaType) {
		return res, &Error{Kind: KindNotHTML, URL: req.URL, Status: resp.StatusCode,
			Err: fmt.Errorf("content type %q cannot be a %s", mediaType, kindName(req.Want))}
	}
	body, err := readBody(resp.Body, resp.Header.Get("Content-Encoding"), c.cfg.MaxBodyBytes, false, 0)
	if err != nil {
		return res, c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, err)
	}
	// A sitemap may be a gzip file (sitemap.xml.gz) rather than a body
	// sent with Content-Encoding: gzip.
	if req.Want == watch.ContentSitemap && bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		if body, err = readBody(bytes.NewReader(body), "gzip", c.cfg.MaxBodyBytes, false, 0); err != nil {
			return res, c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, err)
		}
	}
	res.Body = body
	return res, nil
}

func kindName(k watch.ContentKind) string {
	switch k {
	case watch.ContentFeed:
		return "feed"
	case watch.ContentSitemap:
		return "sitemap"
	}
	return "HTML page"
}

package fetch

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
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
	if req.Read != nil {
		return res, c.streamOther(ctx, fctx, req, start, resp)
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

// streamOther hands the body of a response to a request with Read to it,
// decompressed (a sitemap's gzip file unpacked too) and capped at
// req.MaxBytes, or MaxBodyBytes when that is 0. Nothing but the
// decompressors' windows and Read's own reading is held: a gzip bomb
// costs the time to inflate MaxBytes, not their memory.
func (c *Client) streamOther(ctx, fctx context.Context, req Request, start time.Time, resp *http.Response) error {
	limit := req.MaxBytes
	if limit <= 0 {
		limit = c.cfg.MaxBodyBytes
	}
	tr := &transportReader{r: resp.Body}
	r, err := decoder(tr, resp.Header.Get("Content-Encoding"))
	if err != nil {
		if tr.err != nil {
			err = tr.err
		}
		return c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, err)
	}
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); req.Want == watch.ContentSitemap && bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, &decodeError{fmt.Errorf("gzip file: %w", err)})
		}
		r = zr
	} else {
		r = br
	}
	capped := &cappedReader{r: r, left: limit}
	readErr := req.Read(capped, resp.Request.URL)
	switch {
	case tr.err != nil:
		return c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, tr.err)
	case capped.over:
		return c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, &tooLargeError{max: limit})
	case capped.err != nil:
		return c.classifyBody(ctx, fctx, req.URL, start, resp.StatusCode, &decodeError{capped.err})
	case readErr != nil:
		return fmt.Errorf("read %s: %w", req.URL, readErr)
	}
	return nil
}

// cappedReader reads r up to left bytes; a byte past them is an error,
// and over says so. It remembers the first error of r other than EOF.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
	err  error
}

var errOverCap = errors.New("body over its byte cap")

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.over {
		return 0, errOverCap
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	if int64(n) > c.left {
		c.over, n, err = true, int(c.left), errOverCap
	}
	c.left -= int64(n)
	if err != nil && err != io.EOF && err != errOverCap && c.err == nil {
		c.err = err
	}
	return n, err
}

package fetch

import (
	"bytes"
	"io"
	"net/http"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// rawTee keeps the bytes of a response body as they come off the
// connection (content-coded, the transfer coding already removed by
// net/http), up to max, for the archive; past max the capture is dropped,
// the page failing its own size cap anyway or the coding expanding less
// than it shrank.
type rawTee struct {
	r   io.ReadCloser
	max int64
	// identity is true for a body without content coding: the body read
	// is the entity as received, so it is kept instead of a copy.
	identity bool
	buf      bytes.Buffer
	over     bool
}

func (t *rawTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 && !t.over && !t.identity {
		if int64(t.buf.Len()+n) > t.max {
			t.over = true
			t.buf = bytes.Buffer{}
		} else {
			t.buf.Write(p[:n])
		}
	}
	return n, err
}

func (t *rawTee) Close() error { return t.r.Close() }

// capture returns the exchange of resp with the body t kept, or with
// body, the body read, when it came without content coding; nil when t is
// (no capture asked) or the body was over its cap. The request's secret
// headers are kept out of it here already.
func (t *rawTee) capture(resp *http.Response, at time.Time, body []byte) *watch.Capture {
	if t == nil || t.over {
		return nil
	}
	kept := body
	if !t.identity {
		// Drain what the decoder left unread (a trailer after a gzip
		// member), bounded, so the stored entity is the one sent.
		_, _ = io.Copy(io.Discard, io.LimitReader(t, 64<<10))
		if t.over {
			return nil
		}
		kept = t.buf.Bytes()
	}
	req := resp.Request
	reqHeader := req.Header.Clone()
	for name := range reqHeader {
		if watch.IsSecretHeader(name) {
			reqHeader[name] = []string{"(secret, not kept)"}
		}
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	return &watch.Capture{URL: req.URL.String(), Method: req.Method, RequestURI: req.URL.RequestURI(), Host: host,
		RequestHeader: reqHeader, Proto: resp.Proto, Status: resp.Status, Header: resp.Header.Clone(),
		TransferEncoding: resp.TransferEncoding, Body: kept, At: at.UTC()}
}

package fetch

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"golang.org/x/text/encoding/charmap"
)

const testPage = "<!DOCTYPE html><html><head><title>Front page</title></head><body><a href=/a>A</a></body></html>"

// newServer starts an httptest server on 127.0.0.1 that counts the
// connections it accepts.
func newServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// newClient returns a Client for tests: private addresses allowed and
// robots.txt ignored unless cfg says otherwise by its own fields.
func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func htmlHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}
}

// wantKind fails the test unless err is an *Error of kind.
func wantKind(t *testing.T, err error, kind Kind) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v (%T), want an *Error of kind %v", err, err, kind)
	}
	if fe.Kind != kind {
		t.Fatalf("error = %q of kind %v, want kind %v", err, fe.Kind, kind)
	}
	if strings.ContainsAny(err.Error(), "\r\n") {
		t.Errorf("message %q is not one line", err)
	}
	return fe
}

func TestFetchOK(t *testing.T) {
	var got http.Header
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", "text/html; charset=windows-1251")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		b, _ := charmap.Windows1251.NewEncoder().Bytes([]byte("<p>Новости</p>"))
		w.Write(b)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || res.FinalURL.String() != srv.URL+"/" || res.ETag != `"v1"` ||
		res.LastModified != "Mon, 02 Jan 2006 15:04:05 GMT" || res.NotModified || res.FetchedAt.IsZero() {
		t.Errorf("result = %+v", res)
	}
	if string(res.HTML) != "<p>Новости</p>" || res.Charset != "windows-1251" {
		t.Errorf("HTML = %q in %q", res.HTML, res.Charset)
	}
	for k, want := range map[string]string{
		"User-Agent":        DefaultUserAgent,
		"Accept":            "text/html, application/xhtml+xml;q=0.9, */*;q=0.1",
		"Accept-Encoding":   "gzip, deflate, br",
		"If-None-Match":     "",
		"If-Modified-Since": "",
	} {
		if got.Get(k) != want {
			t.Errorf("request header %s = %q, want %q", k, got.Get(k), want)
		}
	}
}

func TestFetchConditional(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/always304":
			w.WriteHeader(http.StatusNotModified)
		case r.Header.Get("If-None-Match") == `"v1"`:
			w.Header().Set("ETag", `"v1"`)
			w.WriteHeader(http.StatusNotModified)
		case r.Header.Get("If-Modified-Since") == "Mon, 02 Jan 2006 15:04:05 GMT":
			w.WriteHeader(http.StatusNotModified) // without validators
		default:
			w.Header().Set("ETag", `"v2"`)
			htmlHandler(testPage)(w, r)
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	ctx := context.Background()

	res, err := c.Fetch(ctx, Request{URL: srv.URL, ETag: `"v1"`})
	if err != nil || !res.NotModified || res.Status != 304 || len(res.HTML) != 0 || res.ETag != `"v1"` {
		t.Errorf("If-None-Match: %+v, %v", res, err)
	}
	lm := "Mon, 02 Jan 2006 15:04:05 GMT"
	res, err = c.Fetch(ctx, Request{URL: srv.URL, LastModified: lm})
	if err != nil || !res.NotModified || res.LastModified != lm {
		t.Errorf("If-Modified-Since: %+v, %v (the request's validators must be kept)", res, err)
	}
	res, err = c.Fetch(ctx, Request{URL: srv.URL, ETag: `"old"`})
	if err != nil || res.NotModified || res.ETag != `"v2"` || string(res.HTML) != testPage {
		t.Errorf("changed page: %+v, %v", res, err)
	}
	// A 304 to an unconditional request is an error.
	res, err = c.Fetch(ctx, Request{URL: srv.URL + "/always304"})
	fe := wantKind(t, err, KindHTTPStatus)
	if res.Status != 304 || fe.Status != 304 {
		t.Errorf("status = %d / %d, want 304", res.Status, fe.Status)
	}
}

// A body with the digest the request names is not decoded; the digest
// depends on the salt and the Content-Type as well as the body.
func TestFetchSkipsTheSameBody(t *testing.T) {
	ctype := "text/html; charset=utf-8"
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		io.WriteString(w, testPage)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	ctx := context.Background()
	first, err := c.Fetch(ctx, Request{URL: srv.URL, DigestSalt: "limits 1"})
	if err != nil || first.BodyDigest == "" || first.SameBody || string(first.HTML) != testPage {
		t.Fatalf("first fetch: %+v, %v", first, err)
	}
	same, err := c.Fetch(ctx, Request{URL: srv.URL, DigestSalt: "limits 1", BodyDigest: first.BodyDigest})
	if err != nil || !same.SameBody || len(same.HTML) != 0 || same.Status != 200 || same.BodyDigest != first.BodyDigest {
		t.Errorf("the same body: %+v, %v; want it skipped, not decoded", same, err)
	}
	if other, _ := c.Fetch(ctx, Request{URL: srv.URL, DigestSalt: "limits 2", BodyDigest: first.BodyDigest}); other.SameBody || len(other.HTML) == 0 {
		t.Error("a digest made with other settings matched")
	}
	ctype = "text/html; charset=windows-1252"
	if other, _ := c.Fetch(ctx, Request{URL: srv.URL, DigestSalt: "limits 1", BodyDigest: first.BodyDigest}); other.SameBody {
		t.Error("the same bytes under another charset matched")
	}
}

func TestFetchHTTPStatus(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(code)
		io.WriteString(w, "<p>error page</p>")
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	for _, code := range []int{404, 410, 403, 500, 503, 204 + 400} {
		u := fmt.Sprintf("%s/%d", srv.URL, code)
		res, err := c.Fetch(context.Background(), Request{URL: u})
		fe := wantKind(t, err, KindHTTPStatus)
		if res.Status != code || fe.Status != code {
			t.Errorf("%d: Result.Status %d, Error.Status %d", code, res.Status, fe.Status)
		}
		want := fmt.Sprintf("%s: HTTP %d %s", u, code, http.StatusText(code))
		if err.Error() != strings.TrimSpace(want) {
			t.Errorf("message = %q, want %q", err, want)
		}
	}
}

func TestFetchContentEncodings(t *testing.T) {
	page := strings.Repeat(testPage, 50)
	compress := func(coding string) []byte {
		var b bytes.Buffer
		var w io.WriteCloser
		switch coding {
		case "gzip", "x-gzip":
			w = gzip.NewWriter(&b)
		case "deflate":
			w = zlib.NewWriter(&b)
		case "raw-deflate":
			w, _ = flate.NewWriter(&b, flate.BestSpeed)
		case "br":
			w = brotli.NewWriter(&b)
		default:
			return []byte(page)
		}
		io.WriteString(w, page)
		w.Close()
		return b.Bytes()
	}
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		coding := r.URL.Query().Get("ce")
		body := compress(coding)
		switch coding {
		case "raw-deflate":
			coding = "deflate"
		case "gzip-br":
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write([]byte(page))
			zw.Close()
			var br bytes.Buffer
			bw := brotli.NewWriter(&br)
			bw.Write(gz.Bytes())
			bw.Close()
			body, coding = br.Bytes(), "gzip, br"
		case "corrupt-gzip":
			body, coding = compress("gzip")[:40], "gzip"
		case "not-gzip":
			body, coding = []byte(page), "gzip"
		}
		if coding != "" {
			w.Header().Set("Content-Encoding", coding)
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write(body)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	for _, ce := range []string{"", "identity", "gzip", "x-gzip", "deflate", "raw-deflate", "br", "gzip-br"} {
		res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/?ce=" + ce})
		if err != nil || string(res.HTML) != page {
			t.Errorf("%s: err %v, %d bytes (want %d)", ce, err, len(res.HTML), len(page))
		}
	}
	for _, ce := range []string{"corrupt-gzip", "not-gzip", "zstd"} {
		res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/?ce=" + ce})
		wantKind(t, err, KindBadResponse)
		if res.Status != 200 {
			t.Errorf("%s: status %d", ce, res.Status)
		}
	}
}

// zeroBombs returns a gzip stream of n MiB of zeros, made by repeating one
// compressed MiB as gzip members (readers concatenate them), so that the
// test does not spend seconds compressing a GiB.
func zeroBomb(t *testing.T, mib int) []byte {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return bytes.Repeat(member.Bytes(), mib)
}

func TestFetchGzipBomb(t *testing.T) {
	bomb := zeroBomb(t, 1024) // 1 GiB decompressed
	t.Logf("bomb: %d KiB compressed, 1 GiB decompressed", len(bomb)>>10)
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true}) // MaxBodyBytes: 10 MiB
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL})
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)

	fe := wantKind(t, err, KindTooLarge)
	if !strings.Contains(err.Error(), "body larger than 10485760 bytes") || fe.Status != 200 || res.Status != 200 {
		t.Errorf("error = %q, status %d", err, res.Status)
	}
	if elapsed > 5*time.Second {
		t.Errorf("cutting the bomb took %v", elapsed)
	}
	// Reading 10 MiB allocates about twice that as the buffer grows; the
	// whole GiB would be 1024 MiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("allocated %d MiB while cutting the bomb", alloc>>20)
	}
	t.Logf("cut after %v, allocated %d MiB", elapsed, (after.TotalAlloc-before.TotalAlloc)>>20)
}

func TestFetchTooLarge(t *testing.T) {
	const limit = 64 << 10
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/%d", &n)
		body := bytes.Repeat([]byte("a"), n)
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Query().Get("ce") {
		case "br":
			w.Header().Set("Content-Encoding", "br")
			bw := brotli.NewWriter(w)
			bw.Write(body)
			bw.Close()
		case "deflate":
			w.Header().Set("Content-Encoding", "deflate")
			zw := zlib.NewWriter(w)
			zw.Write(body)
			zw.Close()
		default:
			w.Write(body)
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, MaxBodyBytes: limit})
	for _, ce := range []string{"", "br", "deflate"} {
		res, err := c.Fetch(context.Background(), Request{URL: fmt.Sprintf("%s/%d?ce=%s", srv.URL, limit, ce)})
		if err != nil || len(res.HTML) != limit {
			t.Errorf("%q: a body of exactly the limit: %d bytes, %v", ce, len(res.HTML), err)
		}
		_, err = c.Fetch(context.Background(), Request{URL: fmt.Sprintf("%s/%d?ce=%s", srv.URL, limit+1, ce)})
		wantKind(t, err, KindTooLarge)
		if !strings.Contains(err.Error(), fmt.Sprintf("body larger than %d bytes", limit)) {
			t.Errorf("%q: message %q", ce, err)
		}
	}
	// A large plain body: 20 MiB against the default 10 MiB.
	c = newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	_, err := c.Fetch(context.Background(), Request{URL: fmt.Sprintf("%s/%d", srv.URL, 20<<20)})
	wantKind(t, err, KindTooLarge)
}

func TestFetchContentType(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.URL.Query().Get("ct")
		body := r.URL.Query().Get("body")
		if ct == "none" {
			w.Header()["Content-Type"] = nil // stop net/http from sniffing one
		} else {
			w.Header().Set("Content-Type", ct)
		}
		io.WriteString(w, body)
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	fetch := func(ct, body string) (Result, error) {
		q := url.Values{"ct": {ct}, "body": {body}}
		return c.Fetch(context.Background(), Request{URL: srv.URL + "/?" + q.Encode()})
	}
	for _, ct := range []string{"text/html", "TEXT/HTML; charset=UTF-8", "application/xhtml+xml", "text/html;;", "html"} {
		if res, err := fetch(ct, testPage); err != nil || string(res.HTML) != testPage {
			t.Errorf("%q: %v", ct, err)
		}
	}
	for _, body := range []string{testPage, "  <!-- x --><p>hi", "\xef\xbb\xbf<html><body>bom</body></html>"} {
		if _, err := fetch("none", body); err != nil {
			t.Errorf("no content type, HTML body %q: %v", body, err)
		}
	}
	for _, tt := range []struct{ ct, body, msg string }{
		{"application/pdf", "%PDF-1.4", `content type "application/pdf" is not HTML`},
		{"image/png", "\x89PNG\r\n\x1a\n", `"image/png"`},
		{"text/plain", testPage, `"text/plain"`},
		{"application/json", "{}", `"application/json"`},
		{"none", "\x89PNG\r\n\x1a\n\x00\x00", `no content type, and the body sniffs as "image/png"`},
		{"none", "just text", `sniffs as "text/plain"`},
	} {
		res, err := fetch(tt.ct, tt.body)
		wantKind(t, err, KindNotHTML)
		if !strings.Contains(err.Error(), tt.msg) || res.Status != 200 || res.HTML != nil {
			t.Errorf("%s: %q (status %d), want it to contain %q", tt.ct, err, res.Status, tt.msg)
		}
	}
}

func TestFetchSlowBody(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(200)
		tick := time.NewTicker(time.Second) // one byte a second
		defer tick.Stop()
		for {
			if _, err := w.Write([]byte("a")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, Timeout: 700 * time.Millisecond})
	start := time.Now()
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL})
	elapsed := time.Since(start)
	fe := wantKind(t, err, KindTimeout)
	if elapsed < 600*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("cut after %v, want about 700ms", elapsed)
	}
	if res.Status != 200 || fe.Status != 200 || !strings.Contains(err.Error(), "timed out after") {
		t.Errorf("status %d, error %q", res.Status, err)
	}
}

func TestFetchHeaderTimeout(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // never answers until the client gives up
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, HeaderTimeout: 300 * time.Millisecond})
	start := time.Now()
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL})
	wantKind(t, err, KindTimeout)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("header timeout took %v", d)
	}
	if res.Status != 0 || !strings.Contains(err.Error(), "awaiting response headers") {
		t.Errorf("status %d, error %q", res.Status, err)
	}
}

func TestFetchContextCanceledAndDeadline(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := c.Fetch(ctx, Request{URL: srv.URL})
	wantKind(t, err, KindCanceled)

	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Fetch(ctx, Request{URL: srv.URL})
	wantKind(t, err, KindTimeout)
}

func TestFetchRedirects(t *testing.T) {
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil && n > 0 {
			http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
			return
		}
		switch r.URL.Path {
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusMovedPermanently)
		case "/to-ftp":
			http.Redirect(w, r, "ftp://example.com/", http.StatusFound)
		case "/to-userinfo":
			w.Header().Set("Location", "http://user:pw@"+r.Host+"/hop/0")
			w.WriteHeader(http.StatusFound)
		default:
			htmlHandler(testPage)(w, r)
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, MaxRedirects: DefaultMaxRedirects})
	ctx := context.Background()

	res, err := c.Fetch(ctx, Request{URL: srv.URL + "/hop/5"})
	if err != nil || res.FinalURL.Path != "/hop/0" || res.Status != 200 {
		t.Fatalf("5 redirects: %v, final %v", err, res.FinalURL)
	}
	res, err = c.Fetch(ctx, Request{URL: srv.URL + "/hop/6"})
	wantKind(t, err, KindTooManyRedirects)
	if res.Status != http.StatusFound || err.Error() != srv.URL+"/hop/6: stopped after 5 redirects" {
		t.Errorf("6 redirects: status %d, %q", res.Status, err)
	}

	// Zero follows none: the first redirect fails the fetch.
	none := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	_, err = none.Fetch(ctx, Request{URL: srv.URL + "/hop/1"})
	wantKind(t, err, KindTooManyRedirects)
	if !strings.Contains(err.Error(), "redirects are not followed") {
		t.Errorf("MaxRedirects 0: %q, want it to say redirects are not followed", err)
	}

	for path, msg := range map[string]string{
		"/to-file":     `redirect to file:///etc/passwd: scheme "file" is not allowed`,
		"/to-ftp":      `scheme "ftp" is not allowed`,
		"/to-userinfo": "user info",
	} {
		res, err := c.Fetch(ctx, Request{URL: srv.URL + path})
		wantKind(t, err, KindBadURL)
		if !strings.Contains(err.Error(), msg) || !strings.HasPrefix(err.Error(), srv.URL+path+": ") || res.Status < 300 {
			t.Errorf("%s: %q (status %d), want it to contain %q", path, err, res.Status, msg)
		}
	}
}

func TestFetchBadURL(t *testing.T) {
	c := newClient(t, Config{IgnoreRobots: true})
	for _, u := range []string{"file:///etc/passwd", "not a url", `http://a\@b/`, "http://u:p@example.com/", "/relative"} {
		res, err := c.Fetch(context.Background(), Request{URL: u})
		wantKind(t, err, KindBadURL)
		if res.Status != 0 || res.FinalURL != nil {
			t.Errorf("%q: result %+v", u, res)
		}
	}
}

func TestFetchNetworkErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	_, err = c.Fetch(context.Background(), Request{URL: "http://" + addr + "/"})
	wantKind(t, err, KindNetwork)
	if !strings.Contains(err.Error(), "refused") {
		t.Errorf("message %q", err)
	}

	// A server that hangs up mid-body.
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, "<p>short")
	}))
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL})
	wantKind(t, err, KindNetwork)
	if res.Status != 200 {
		t.Errorf("status %d", res.Status)
	}
}

func TestClassifyDNSError(t *testing.T) {
	// Resolving a name would query the machine's DNS server, which tests
	// must not; classify is checked on the error the dialer returns.
	c := newClient(t, Config{})
	dnsErr := &url.Error{Op: "Get", URL: "http://nosuch.example/", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nosuch.example", Server: "10.9.8.7:53", IsNotFound: true}}}
	ctx := context.Background()
	fe := c.classify(ctx, ctx, "http://nosuch.example/", time.Now(), dnsErr)
	// A page's last error is shown to its readers: the resolver's address
	// is not theirs to see.
	if fe.Kind != KindDNS || fe.Error() != "http://nosuch.example/: cannot resolve nosuch.example: no such host" {
		t.Errorf("got %v %q", fe.Kind, fe)
	}
	var de *net.DNSError
	if !errors.As(fe, &de) || !de.IsNotFound {
		t.Errorf("the *net.DNSError is not kept in %v", fe)
	}
	timeout := &url.Error{Op: "Get", URL: "http://slow.example/", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "slow.example", IsTimeout: true}}}
	if fe := c.classify(ctx, ctx, "http://slow.example/", time.Now(), timeout); fe.Kind != KindTimeout {
		t.Errorf("DNS timeout classified as %v", fe.Kind)
	}
}

func TestDialGuard(t *testing.T) {
	var hits atomic.Int64
	srv, conns := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		htmlHandler(testPage)(w, r)
	}))
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	c := newClient(t, Config{IgnoreRobots: true}) // AllowPrivate: false, the production default
	ctx := context.Background()

	// An IP literal is refused before dialing.
	u := fmt.Sprintf("http://127.0.0.1:%d/", port)
	_, err := c.Fetch(ctx, Request{URL: u})
	wantKind(t, err, KindBlocked)
	want := u + ": resolves to 127.0.0.1, a loopback address; set PORTALWATCH_ALLOW_PRIVATE=true to allow private addresses"
	if err.Error() != want {
		t.Errorf("message = %q\nwant      %q", err, want)
	}

	// A name is resolved by the dialer and refused by the guard.
	_, err = c.Fetch(ctx, Request{URL: fmt.Sprintf("http://localhost:%d/", port)})
	wantKind(t, err, KindBlocked)
	if !strings.Contains(err.Error(), "127.0.0.1 is a loopback address; set PORTALWATCH_ALLOW_PRIVATE=true") {
		t.Errorf("message = %q", err)
	}

	// Other spellings are refused before anything is resolved (the
	// transport's own handling of them is in TestDialGuardResolvedNames).
	for _, host := range []string{"2130706433", "0x7f.1", "127.1", "0177.0.0.1", "[::ffff:127.0.0.1]", "[::1]"} {
		_, err := c.Fetch(ctx, Request{URL: fmt.Sprintf("http://%s:%d/", host, port)})
		wantKind(t, err, KindBlocked)
	}
	resp, err := c.direct.hc.Get(fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port))
	if err == nil {
		resp.Body.Close()
		t.Error("the transport reached an IPv4-mapped loopback address")
	}
	// With robots.txt obeyed, its fetch is refused too, and the page's
	// error is still the refusal rather than anything about robots.txt.
	polite := newClient(t, Config{})
	_, err = polite.Fetch(ctx, Request{URL: fmt.Sprintf("http://localhost:%d/", port)})
	wantKind(t, err, KindBlocked)

	if hits.Load() != 0 || conns.Load() != 0 {
		t.Fatalf("the guarded client reached the server: %d requests, %d connections", hits.Load(), conns.Load())
	}

	// With AllowPrivate the same server is reachable.
	open := newClient(t, Config{IgnoreRobots: true, AllowPrivate: true})
	if _, err := open.Fetch(ctx, Request{URL: fmt.Sprintf("http://localhost:%d/", port)}); err != nil {
		t.Fatalf("AllowPrivate: %v", err)
	}
}

func TestDialGuardRedirect(t *testing.T) {
	// "internal" stands for a service that must stay unreachable.
	var internalHits atomic.Int64
	internal, internalConns := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		htmlHandler("<p>secret</p>")(w, r)
	}))
	internalPort := internal.Listener.Addr().(*net.TCPAddr).Port

	// "public" stands for a public site; the test hook lets the guard
	// through to it, and to it only.
	public, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			htmlHandler(testPage)(w, r)
		case "/to-name":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/", internalPort), http.StatusFound)
		case "/to-literal":
			http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/", internalPort), http.StatusFound)
		case "/to-mapped":
			http.Redirect(w, r, fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", internalPort), http.StatusFound)
		case "/to-decimal":
			http.Redirect(w, r, fmt.Sprintf("http://2130706433:%d/", internalPort), http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	}))
	publicAddr := netip.MustParseAddrPort(public.Listener.Addr().String())
	cfg := Config{IgnoreRobots: true, MaxRedirects: DefaultMaxRedirects}
	cfg.dialAllowed = func(ap netip.AddrPort) bool { return ap == publicAddr }
	c := newClient(t, cfg)
	base := fmt.Sprintf("http://localhost:%d", publicAddr.Port())

	if _, err := c.Fetch(context.Background(), Request{URL: base + "/page"}); err != nil {
		t.Fatalf("the allowed test server: %v", err)
	}
	for _, path := range []string{"/to-name", "/to-literal", "/to-mapped", "/to-decimal", "/to-metadata"} {
		res, err := c.Fetch(context.Background(), Request{URL: base + path})
		wantKind(t, err, KindBlocked)
		if res.Status != http.StatusFound || !strings.Contains(err.Error(), ": redirect to http://") {
			t.Errorf("%s: status %d, %q", path, res.Status, err)
		}
		t.Logf("%s: %v", path, err)
	}
	if internalHits.Load() != 0 || internalConns.Load() != 0 {
		t.Fatalf("a redirect reached the internal server: %d requests, %d connections", internalHits.Load(), internalConns.Load())
	}
}

func TestConfigWithDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.UserAgent != DefaultUserAgent || c.Timeout != 30*time.Second || c.HeaderTimeout != 10*time.Second ||
		c.DialTimeout != 5*time.Second || c.MaxBodyBytes != 10<<20 || c.MaxRedirects != 0 || c.AllowPrivate ||
		c.IgnoreRobots || c.RobotsTTL != time.Hour || c.RobotsMaxBytes != 512<<10 || c.MaxCrawlDelay != 30*time.Second ||
		c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
	c = Config{MaxRedirects: 3, MinHostSpacing: 0, MaxBodyBytes: 7}.WithDefaults()
	if c.MaxRedirects != 3 || c.MinHostSpacing != 0 || c.MaxBodyBytes != 7 {
		t.Errorf("explicit values: %+v", c)
	}
	if got := productToken(DefaultUserAgent); got != "portalwatch" {
		t.Errorf("productToken = %q", got)
	}
}

// TestNewRefusesInvalidConfig: a limit no default can mend is an error from
// New, not a silent default (PORTALWATCH_MAX_REDIRECTS=0 once became 5).
func TestNewRefusesInvalidConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxRedirects: -1},
		{MaxRedirects: MaxMaxRedirects + 1},
		{Timeout: -time.Second},
		{MinHostSpacing: -time.Millisecond},
		{MaxBodyBytes: -1},
	} {
		if c, err := New(cfg); err == nil {
			c.CloseIdleConnections()
			t.Errorf("New(%+v) = nil error, want one naming the bad field", cfg)
		} else if !strings.HasPrefix(err.Error(), "fetch: ") {
			t.Errorf("New(%+v) = %q, want it to name the component", cfg, err)
		}
	}
	for _, cfg := range []Config{{}, {MaxRedirects: MaxMaxRedirects}} {
		c, err := New(cfg)
		if err != nil {
			t.Errorf("New(%+v) = %v, want a client", cfg, err)
			continue
		}
		c.CloseIdleConnections()
	}
}

func TestKindString(t *testing.T) {
	if KindTooLarge.String() != "too_large" || Kind(99).String() != "kind(99)" {
		t.Error(KindTooLarge.String(), Kind(99).String())
	}
	if KindOf(errors.New("x")) != KindUnknown || KindOf(fmt.Errorf("w: %w", &Error{Kind: KindDNS, Err: errors.New("x")})) != KindDNS {
		t.Error("KindOf")
	}
}

func TestLastModifiedWithinAMinuteOfDateIsNotKept(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, lastModified, date string
		want                     bool
	}{
		{"old enough", now.Add(-2 * time.Minute).Format(http.TimeFormat), now.Format(http.TimeFormat), true},
		{"same second", now.Format(http.TimeFormat), now.Format(http.TimeFormat), false},
		{"59 s", now.Add(-59 * time.Second).Format(http.TimeFormat), now.Format(http.TimeFormat), false},
		{"no Date header: fetch time", now.Add(-time.Hour).Format(http.TimeFormat), "", true},
		{"unparsable", "yesterday", now.Format(http.TimeFormat), false},
	}
	for _, tt := range tests {
		h := http.Header{}
		h.Set("Last-Modified", tt.lastModified)
		if tt.date != "" {
			h.Set("Date", tt.date)
		}
		if got := strongLastModified(h, now) != ""; got != tt.want {
			t.Errorf("%s: kept = %v, want %v", tt.name, got, tt.want)
		}
	}
}

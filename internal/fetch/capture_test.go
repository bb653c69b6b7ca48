package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestFetchCapturesTheExchangeAsReceived(t *testing.T) {
	var sent bytes.Buffer
	zw := gzip.NewWriter(&sent)
	zw.Write([]byte("<html><title>t</title><a href=/a>a</a></html>")) //nolint:errcheck // to memory
	zw.Close()                                                        //nolint:errcheck // to memory
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("X-Farm", "1")
		w.WriteHeader(http.StatusOK)
		// Two writes with a flush between: chunked on the wire.
		b := sent.Bytes()
		w.Write(b[:10]) //nolint:errcheck // the client checks
		w.(http.Flusher).Flush()
		w.Write(b[10:]) //nolint:errcheck // the client checks
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true})
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/p?x=1", Capture: true,
		Header: []watch.Header{{Name: "Cookie", Value: "s=secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	cp := res.Capture
	if cp == nil {
		t.Fatal("no capture")
	}
	if !bytes.Equal(cp.Body, sent.Bytes()) {
		t.Fatalf("captured %d bytes, the server sent %d: want them as sent, still gzip", len(cp.Body), sent.Len())
	}
	if cp.Status != "200 OK" || cp.Proto != "HTTP/1.1" || cp.Header.Get("X-Farm") != "1" || cp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("capture head %q %q %v", cp.Proto, cp.Status, cp.Header)
	}
	if strings.Join(cp.TransferEncoding, ",") != "chunked" || cp.RequestURI != "/p?x=1" || cp.Method != "GET" {
		t.Fatalf("capture framing %v, request %s %s", cp.TransferEncoding, cp.Method, cp.RequestURI)
	}
	if got := cp.RequestHeader.Get("Cookie"); got == "" || strings.Contains(got, "s=secret") {
		t.Fatalf("request Cookie kept as %q: want it named, its value withheld", got)
	}
	if string(res.HTML) == "" {
		t.Fatal("the page was not decoded as well")
	}

	// Without asking, nothing is kept.
	res, err = c.Fetch(context.Background(), Request{URL: srv.URL + "/p"})
	if err != nil || res.Capture != nil {
		t.Fatalf("capture %v without asking (err %v)", res.Capture, err)
	}
}

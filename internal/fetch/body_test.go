package fetch

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// The size guess is shared by every fetch of a client: one 10 MiB page of
// unknown length made each later page allocate 10 MiB up front. Now the
// guess is capped, and still sizes pages of ordinary size.
func TestSizeGuessIsBounded(t *testing.T) {
	big := bytes.Repeat([]byte("<p>"), 10<<20/3)
	small := []byte(`<a href="/x">x</a>`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		body := small
		if r.URL.Path == "/big" {
			body = big
		}
		// Flushing first sends the body chunked: its length is unknown.
		w.(http.Flusher).Flush()
		w.Write(body)
	}))
	defer srv.Close()
	c, err := New(Config{AllowPrivate: true, IgnoreRobots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	if _, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/big"}); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/small"})
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(res.HTML, small) {
		t.Fatalf("small page = %q, %v", res.HTML, err)
	}
	if heap := after.TotalAlloc - before.TotalAlloc; heap > 2*maxSizeGuess {
		t.Errorf("a %d-byte page after a 10 MiB one allocated %d KiB, want at most %d KiB", len(small), heap>>10, 2*maxSizeGuess>>10)
	}

	var g sizeGuess
	g.observe(300 << 10)
	if h := g.hint(); h < 300<<10 {
		t.Errorf("after a 300 KiB body the guess is %d bytes: a body of the same size would grow its buffer", h)
	}
	g.observe(10 << 20)
	if h := g.hint(); h > maxSizeGuess {
		t.Errorf("after a 10 MiB body the guess is %d bytes, over the cap of %d", h, maxSizeGuess)
	}
}

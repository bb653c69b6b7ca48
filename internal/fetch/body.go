package fetch

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/andybalholm/brotli"
)

// acceptEncoding is sent by us rather than by the Transport: when the
// Transport adds "gzip" itself it decodes transparently, but it knows
// neither deflate nor br, and we want to cap the decoded size ourselves.
const acceptEncoding = "gzip, deflate, br"

// tooLargeError reports a body over the cap of max bytes.
type tooLargeError struct{ max int64 }

func (e *tooLargeError) Error() string { return fmt.Sprintf("body larger than %d bytes", e.max) }

// decodeError marks a failure of a decompressor (as opposed to the
// connection), so that it is reported as KindBadResponse.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// transportReader remembers the error of the underlying body, so that an
// error coming out of a decompressor can be told apart from a broken or
// timed-out connection underneath it.
type transportReader struct {
	r   io.Reader
	err error
}

func (t *transportReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}

// readBody reads a response body encoded with contentEncoding (the
// Content-Encoding header) and returns at most max decoded bytes. Bytes
// are counted after decompression, so a small compressed body that expands
// without bound (a "zip bomb") is stopped after max+1 bytes, in time and
// memory proportional to max. A longer body is a *tooLargeError unless truncate is set, in which case it is cut at max.
// Errors of the decompressors are *decodeError; connection errors are
// returned as they are.
//
// sizeHint, when positive, is the expected decoded size (Content-Length of
// an identity-encoded body): reading into a buffer of that size spares the
// copies of a growing one.
func readBody(body io.Reader, contentEncoding string, max int64, truncate bool, sizeHint int64) ([]byte, error) {
	tr := &transportReader{r: body}
	r, err := decoder(tr, contentEncoding)
	if err != nil {
		if tr.err != nil {
			return nil, tr.err
		}
		return nil, err
	}
	b, err := readAllSized(io.LimitReader(r, max+1), min(sizeHint, max)+1)
	if err != nil {
		if tr.err != nil {
			return nil, tr.err
		}
		return nil, &decodeError{err: err}
	}
	if int64(len(b)) > max {
		if truncate {
			return b[:max], nil
		}
		return nil, &tooLargeError{max: max}
	}
	return b, nil
}

// decoder wraps r with decoders for the listed content codings, the last
// applied first. Unknown codings are a *decodeError.
func decoder(r io.Reader, contentEncoding string) (io.Reader, error) {
	codings := strings.Split(contentEncoding, ",")
	if len(codings) > 3 {
		return nil, &decodeError{fmt.Errorf("too many content codings %q", contentEncoding)}
	}
	for i := len(codings) - 1; i >= 0; i-- {
		switch c := strings.ToLower(strings.TrimSpace(codings[i])); c {
		case "", "identity":
		case "gzip", "x-gzip":
			zr, err := gzip.NewReader(r)
			if err != nil {
				return nil, &decodeError{fmt.Errorf("gzip: %w", err)}
			}
			r = zr
		case "deflate":
			r = deflateReader(r)
		case "br":
			r = brotli.NewReader(r)
		default:
			return nil, &decodeError{fmt.Errorf("unsupported Content-Encoding %q", c)}
		}
	}
	return r, nil
}

// deflateReader decodes "deflate", which RFC 9110 defines as a zlib stream
// but which some servers send as raw DEFLATE; the zlib header tells them
// apart, as browsers do.
func deflateReader(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	h, _ := br.Peek(2)
	if len(h) == 2 && h[0]&0x0f == 8 && h[0]>>4 <= 7 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
		zr, err := zlib.NewReader(br)
		if err == nil {
			return zr
		}
		return errReader{&decodeError{fmt.Errorf("zlib: %w", err)}}
	}
	return flate.NewReader(br)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// maxSizeGuess caps sizeGuess: nine homepages in ten of the corpus are under
// 470 KB, so 1 MiB keeps the guess's benefit for them, while one page of 10
// MiB no longer makes every next page of unknown length allocate 10 MiB.
const maxSizeGuess = 1 << 20

// sizeGuess is the first buffer size for a body of unknown length (chunked
// or compressed): the size of the last body read, a quarter more, at most
// maxSizeGuess. Portals are of a size, so it spares the copies of a buffer
// grown from nothing. Safe for concurrent use.
type sizeGuess struct{ last atomic.Int64 }

// hint returns the guess for the next body.
func (g *sizeGuess) hint() int64 { return g.last.Load() * 5 / 4 }

// observe records the size of a body read.
func (g *sizeGuess) observe(n int64) { g.last.Store(min(n, maxSizeGuess*4/5)) }

// readAllSized is io.ReadAll starting from a buffer of size bytes.
func readAllSized(r io.Reader, size int64) ([]byte, error) {
	if size < 512 {
		size = 512
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // let append pick the growth
		}
	}
}

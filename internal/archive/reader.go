package archive

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/nlnwa/gowarc/v3"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Response is a stored response as read back: its status line, header and
// payload (the entity body as received, still content-coded).
type Response struct {
	RecordID      string
	PayloadDigest string
	StatusLine    string
	Header        http.Header
	Payload       []byte
}

// ErrCorrupt marks stored records that do not read back whole: a digest
// that does not match, a record missing from its range.
var ErrCorrupt = errors.New("archived records are corrupt")

// ReadResponse reads the response of snapshot s from store, digests
// verified; a revisit's payload is read from its original. A payload over
// max bytes is an error (max <= 0: no cap).
func ReadResponse(ctx context.Context, store Store, s watch.Snapshot, max int64) (Response, error) {
	res, err := readRange(ctx, store, s.Ref, max)
	if err != nil {
		return Response{}, err
	}
	if s.Ref.RevisitOf == "" {
		return res, nil
	}
	if s.Original == nil {
		return Response{}, fmt.Errorf("%w: revisit %s refers to %s, which is not indexed", ErrCorrupt, s.Ref.RecordID, s.Ref.RevisitOf)
	}
	orig, err := readRange(ctx, store, *s.Original, max)
	if err != nil {
		return Response{}, fmt.Errorf("original of revisit %s: %w", s.Ref.RecordID, err)
	}
	if orig.PayloadDigest != res.PayloadDigest {
		return Response{}, fmt.Errorf("%w: revisit %s has payload digest %s, its original %s", ErrCorrupt, s.Ref.RecordID, res.PayloadDigest, orig.PayloadDigest)
	}
	res.Payload = orig.Payload
	return res, nil
}

// readRange reads the response or revisit record ref names from its
// range of gzip members.
func readRange(ctx context.Context, store Store, ref watch.SnapshotRef, max int64) (Response, error) {
	rc, err := store.Open(ctx, ref.File, ref.Offset, ref.Length)
	if err != nil {
		return Response{}, err
	}
	defer rc.Close()
	gowarcOptions.Lock()
	wr, err := gowarc.NewWarcFileReaderFromStream(rc, ref.Offset, gowarc.WithStrictValidation())
	gowarcOptions.Unlock()
	if err != nil {
		return Response{}, fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, ref.File, ref.Offset, err)
	}
	defer wr.Close()
	for {
		rec, err := wr.Next()
		if errors.Is(err, io.EOF) {
			return Response{}, fmt.Errorf("%w: no record %s in %s at %d", ErrCorrupt, ref.RecordID, ref.File, ref.Offset)
		}
		if err != nil {
			return Response{}, fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, ref.File, ref.Offset, err)
		}
		res, found, err := responseOf(rec.WarcRecord, ref, max)
		_ = rec.Close()
		if err != nil || found {
			return res, err
		}
	}
}

func responseOf(rec gowarc.WarcRecord, ref watch.SnapshotRef, max int64) (Response, bool, error) {
	if rec.RecordId() != ref.RecordID {
		return Response{}, false, nil
	}
	res := Response{RecordID: ref.RecordID, PayloadDigest: rec.WarcHeader().Get(gowarc.WarcPayloadDigest)}
	head, ok := rec.Block().(gowarc.ProtocolHeaderBlock)
	if !ok || (rec.Type() != gowarc.Response && rec.Type() != gowarc.Revisit) {
		return Response{}, true, fmt.Errorf("%w: record %s is a %s record without an HTTP response", ErrCorrupt, ref.RecordID, rec.Type())
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head.ProtocolHeaderBytes())))
	line, err := tp.ReadLine()
	if err != nil {
		return Response{}, true, fmt.Errorf("%w: record %s: status line: %v", ErrCorrupt, ref.RecordID, err)
	}
	mh, err := tp.ReadMIMEHeader()
	if err != nil && !errors.Is(err, io.EOF) {
		return Response{}, true, fmt.Errorf("%w: record %s: HTTP header: %v", ErrCorrupt, ref.RecordID, err)
	}
	res.StatusLine, res.Header = line, http.Header(mh)
	if rec.Type() == gowarc.Response {
		block, ok := rec.Block().(gowarc.PayloadBlock)
		if !ok {
			return res, true, fmt.Errorf("%w: response %s has no payload", ErrCorrupt, ref.RecordID)
		}
		r, err := block.PayloadBytes()
		if err != nil {
			return res, true, fmt.Errorf("%w: payload of %s: %v", ErrCorrupt, ref.RecordID, err)
		}
		if res.Payload, err = readCapped(r, max); err != nil {
			return res, true, fmt.Errorf("payload of %s: %w", ref.RecordID, err)
		}
		// Read whole, so the digests are checked.
		if v, err := rec.ValidateDigest(); err != nil || len(v) > 0 {
			return res, true, fmt.Errorf("%w: record %s: %v", ErrCorrupt, ref.RecordID, errors.Join(append(v, err)...))
		}
		if got := PayloadDigest(res.Payload); got != res.PayloadDigest {
			return res, true, fmt.Errorf("%w: record %s has payload digest %s, its payload %s", ErrCorrupt, ref.RecordID, res.PayloadDigest, got)
		}
	}
	return res, true, nil
}

// ErrNotRendered is returned for the rendered DOM of a snapshot whose
// check was a plain fetch.
var ErrNotRendered = watch.ErrSnapshotNotRendered

// ReadRendered reads the DOM a rendered check kept beside the response of
// ref, its digest verified; ErrNotRendered when the range holds none, an
// error wrapping ErrTooLarge past max bytes (max <= 0: no cap).
func ReadRendered(ctx context.Context, store Store, ref watch.SnapshotRef, max int64) ([]byte, error) {
	if ref.RenderedBytes == 0 {
		return nil, fmt.Errorf("snapshot %s: %w", ref.RecordID, ErrNotRendered)
	}
	rc, err := store.Open(ctx, ref.File, ref.Offset, ref.Length)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	gowarcOptions.Lock()
	wr, err := gowarc.NewWarcFileReaderFromStream(rc, ref.Offset, gowarc.WithStrictValidation())
	gowarcOptions.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, ref.File, ref.Offset, err)
	}
	defer wr.Close()
	want := RenderedURI(ref.TargetURI)
	for {
		rec, err := wr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: no rendered DOM beside %s in %s at %d", ErrCorrupt, ref.RecordID, ref.File, ref.Offset)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s at %d: %v", ErrCorrupt, ref.File, ref.Offset, err)
		}
		h := rec.WarcRecord.WarcHeader()
		if rec.WarcRecord.Type() != gowarc.Resource || h.Get(gowarc.WarcTargetURI) != want ||
			h.Get(gowarc.WarcConcurrentTo) != "<"+ref.RecordID+">" {
			_ = rec.Close()
			continue
		}
		dom, err := renderedOf(rec.WarcRecord, max)
		_ = rec.Close()
		return dom, err
	}
}

func renderedOf(rec gowarc.WarcRecord, max int64) ([]byte, error) {
	r, err := rec.Block().RawBytes()
	if err != nil {
		return nil, fmt.Errorf("%w: rendered DOM %s: %v", ErrCorrupt, rec.RecordId(), err)
	}
	dom, err := readCapped(r, max)
	if err != nil {
		return nil, fmt.Errorf("rendered DOM %s: %w", rec.RecordId(), err)
	}
	// Read whole, so the block digest is checked.
	if v, err := rec.ValidateDigest(); err != nil || len(v) > 0 {
		return nil, fmt.Errorf("%w: rendered DOM %s: %v", ErrCorrupt, rec.RecordId(), errors.Join(append(v, err)...))
	}
	return dom, nil
}

// ErrTooLarge is returned for a payload over the reader's cap.
var ErrTooLarge = watch.ErrSnapshotTooLarge

func readCapped(r io.Reader, max int64) ([]byte, error) {
	if max <= 0 {
		return io.ReadAll(r)
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, max)
	}
	return b, nil
}

// Decoded returns the payload with its Content-Encoding undone (gzip,
// deflate, br), at most max bytes; a payload in another coding is returned
// as it is, with its coding named.
func (r Response) Decoded(max int64) ([]byte, string, error) {
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	var (
		dec io.Reader
		err error
		in  = strings.NewReader(string(r.Payload))
	)
	switch enc {
	case "", "identity":
		b, err := readCapped(in, max)
		return b, "", err
	case "gzip", "x-gzip":
		dec, err = gzip.NewReader(in)
	case "deflate":
		// HTTP's deflate is zlib; some servers send it raw.
		if dec, err = zlib.NewReader(in); err != nil {
			dec, err = flate.NewReader(strings.NewReader(string(r.Payload))), nil
		}
	case "br":
		dec = brotli.NewReader(in)
	default:
		b, err := readCapped(in, max)
		return b, enc, err
	}
	if err != nil {
		return nil, "", fmt.Errorf("decode stored %s body: %w", enc, err)
	}
	b, err := readCapped(dec, max)
	if err != nil {
		return nil, "", fmt.Errorf("decode stored %s body: %w", enc, err)
	}
	return b, "", nil
}

// Bodies reads the bodies of snapshots from a Store for the API.
type Bodies struct {
	Store Store
	// Max caps a body, stored and decoded (Config.ServeBytes).
	Max int64
}

// MaxBytes is b.Max.
func (b Bodies) MaxBytes() int64 { return b.Max }

// Rendered returns the DOM the rendered check of snapshot s kept, at most
// max bytes; an error wrapping ErrNotRendered for a plain fetch.
func (b Bodies) Rendered(ctx context.Context, s watch.Snapshot, max int64) ([]byte, error) {
	return ReadRendered(ctx, b.Store, s.Ref, max)
}

// Body returns the body snapshot s stored, its content coding undone, at
// most max bytes (an error wrapping ErrTooLarge past it).
func (b Bodies) Body(ctx context.Context, s watch.Snapshot, max int64) ([]byte, error) {
	res, err := ReadResponse(ctx, b.Store, s, max)
	if err != nil {
		return nil, err
	}
	body, _, err := res.Decoded(max)
	return body, err
}

// Package warcread reads gzip WARC files for tests without the library
// that wrote them, so that a test proves the files are WARC, not merely
// what that library reads back.
package warcread

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha1" //nolint:gosec // WARC digests
	"encoding/base32"
	"fmt"
	"io"
	"net/textproto"
	"strconv"
	"strings"
	"testing"
)

// Record is a record as Read sees it.
type Record struct {
	Header  textproto.MIMEHeader
	Block   []byte
	Payload []byte // the HTTP entity of a response, nil otherwise
	Offset  int64  // of its gzip member in the file
}

// Read reads a gzip WARC file without the library that wrote it: one
// gzip member per record, WARC/1.1 headers, Content-Length, the block and
// payload digests checked, each record ended by two CRLFs. It fails t on
// anything a WARC tool would refuse.
func Read(t testing.TB, data []byte) []Record {
	t.Helper()
	var recs []Record
	br := bytes.NewReader(data)
	for br.Len() > 0 {
		off := int64(len(data) - br.Len())
		zr, err := gzip.NewReader(br)
		if err != nil {
			t.Fatalf("gzip member at %d: %v", off, err)
		}
		zr.Multistream(false)
		member, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("gzip member at %d: %v", off, err)
		}
		rec := parseRecord(t, member)
		rec.Offset = off
		recs = append(recs, rec)
	}
	return recs
}

func parseRecord(t testing.TB, member []byte) Record {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(member))
	version, _ := r.ReadString('\n')
	if version != "WARC/1.1\r\n" {
		t.Fatalf("record starts %q, not WARC/1.1", version)
	}
	h, err := textproto.NewReader(r).ReadMIMEHeader()
	if err != nil {
		t.Fatalf("WARC header: %v", err)
	}
	for _, name := range []string{"WARC-Record-ID", "WARC-Date", "WARC-Type", "Content-Length"} {
		if h.Get(name) == "" {
			t.Fatalf("record without %s: %v", name, h)
		}
	}
	n, err := strconv.Atoi(h.Get("Content-Length"))
	if err != nil {
		t.Fatalf("Content-Length %q: %v", h.Get("Content-Length"), err)
	}
	block := make([]byte, n)
	if _, err := io.ReadFull(r, block); err != nil {
		t.Fatalf("block of %d bytes: %v", n, err)
	}
	if tail, _ := io.ReadAll(r); string(tail) != "\r\n\r\n" {
		t.Fatalf("record ends %q, not CRLF CRLF", tail)
	}
	rec := Record{Header: h, Block: block}
	if d := h.Get("WARC-Block-Digest"); d != Digest(block) {
		t.Fatalf("%s record %s: block digest %s, computed %s", h.Get("WARC-Type"), h.Get("WARC-Record-ID"), d, Digest(block))
	}
	if h.Get("WARC-Type") == "response" || h.Get("WARC-Type") == "revisit" {
		i := bytes.Index(block, []byte("\r\n\r\n"))
		if i < 0 {
			t.Fatalf("response block without the end of its HTTP header")
		}
		if h.Get("WARC-Type") == "response" {
			rec.Payload = block[i+4:]
			if d := h.Get("WARC-Payload-Digest"); d != Digest(rec.Payload) {
				t.Fatalf("payload digest %s, computed %s", d, Digest(rec.Payload))
			}
		}
	}
	return rec
}

// Digest is the WARC digest of b: sha1: and base32.
func Digest(b []byte) string {
	sum := sha1.Sum(b) //nolint:gosec // WARC digests
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// HTTPHead returns the start line and the header of a block holding an
// HTTP message.
func HTTPHead(block []byte) (string, textproto.MIMEHeader, error) {
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(block)))
	line, err := r.ReadLine()
	if err != nil {
		return "", nil, err
	}
	h, err := r.ReadMIMEHeader()
	if err != nil {
		return "", nil, fmt.Errorf("HTTP header: %w", err)
	}
	return strings.TrimSpace(line), h, nil
}

package watch

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"
)

// Capture is one HTTP exchange of a check as the fetcher saw it, kept for
// the archive (docs/archive.md): the request as sent, secret headers
// withheld, and the response as received, its body the entity as the
// server coded it (gzip stays gzip) with the transfer coding removed.
type Capture struct {
	// URL is the URL of the final request, after redirects.
	URL string
	// Method, RequestURI and RequestHeader are the final request: the
	// value of a secret header (IsSecretHeader) is never kept.
	Method        string
	RequestURI    string
	Host          string
	RequestHeader http.Header
	// Proto and Status are the response's status line ("HTTP/1.1",
	// "200 OK"); Header its header fields.
	Proto  string
	Status string
	Header http.Header
	// TransferEncoding is the transfer coding the body came in (chunked),
	// removed from Body.
	TransferEncoding []string
	// Body is the entity body as received, still content-coded.
	Body []byte
	// Rendered is the DOM headless Chromium built from Body, as HTML,
	// when the check rendered the page: kept beside the response as a
	// resource record, since it is what the check read its links from.
	Rendered []byte
	// At is when the request was sent.
	At time.Time
}

// SnapshotRef locates the WARC records one crawler wrote for a check (a
// request, a response or revisit, a metadata record) in the archive: the
// crawler sends it in the task, and the processor indexes it with the
// check when the check recorded something.
type SnapshotRef struct {
	// File is the WARC file's name in the archive store; Offset and Length
	// the byte range of the check's records in it, whole gzip members.
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
	// RecordID is the WARC-Record-ID of the response or revisit record.
	RecordID string `json:"recordId"`
	// PayloadDigest is its WARC-Payload-Digest ("sha1:" and base32).
	PayloadDigest string `json:"payloadDigest"`
	// CheckID names the check in the metadata record and the index.
	CheckID string `json:"checkId"`
	// TargetURI is the URL fetched; Status and ContentType the response's.
	TargetURI   string `json:"uri"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType,omitempty"`
	// PayloadBytes is the size of the entity body as received.
	PayloadBytes int64 `json:"payloadBytes"`
	// WrittenAt is when the records were written; the processor indexes
	// no ref older than half the archive's grace (the sweep may have
	// reclaimed its file by then).
	WrittenAt time.Time `json:"writtenAt"`
	// RevisitOf is the RecordID of the original whose payload a revisit
	// record refers to; empty for a record that holds its payload.
	RevisitOf string `json:"revisitOf,omitempty"`
	// RenderedBytes is the size of the DOM a rendered check keeps in a
	// resource record of the same range; 0 for a plain fetch.
	RenderedBytes int64 `json:"renderedBytes,omitempty"`
}

// SnapshotOriginal is the page's newest snapshot that holds its payload,
// as its job carries it: a body with the same digest is written as a
// revisit record that refers to it, not stored again.
type SnapshotOriginal struct {
	RecordID      string    `json:"recordId"`
	PayloadDigest string    `json:"payloadDigest"`
	TargetURI     string    `json:"uri"`
	Date          time.Time `json:"date"`
}

// Snapshot is one indexed snapshot of a page, as readers list it.
type Snapshot struct {
	ID int64
	// PageID is the page of a homepage check; ArticleID the article of an
	// article fetch instead (PageID 0).
	PageID    int64
	ArticleID int64
	CheckID   string
	FetchedAt time.Time
	Ref       SnapshotRef
	// Original is the ref of the record holding the payload when Ref is a
	// revisit; nil otherwise.
	Original *SnapshotRef
	// What the check recorded: new links, revisions, removals made due,
	// and whether it was the baseline.
	Updates   int
	Revisions int
	Removals  int
	Baseline  bool
}

// Revisit reports whether the snapshot's record is a revisit.
func (s Snapshot) Revisit() bool { return s.Ref.RevisitOf != "" }

// NewCheckID returns a random check id, a UUID (version 4), which names a
// check in its archived metadata record and in the snapshot index.
func NewCheckID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

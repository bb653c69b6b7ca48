package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// SnapshotReader reads the archive's index.
type SnapshotReader interface {
	Snapshots(ctx context.Context, pageID int64, limit int) ([]watch.Snapshot, error)
	Snapshot(ctx context.Context, id int64) (watch.Snapshot, error)
}

// SnapshotBodies reads the body a snapshot stored, its content coding
// undone, at most max bytes (an error wrapping watch.ErrSnapshotTooLarge
// past it).
type SnapshotBodies interface {
	Body(ctx context.Context, s watch.Snapshot, max int64) ([]byte, error)
	// Rendered is the DOM a rendered check kept, an error wrapping
	// watch.ErrSnapshotNotRendered for a plain fetch.
	Rendered(ctx context.Context, s watch.Snapshot, max int64) ([]byte, error)
	MaxBytes() int64
}

// pageSnapshots is how many snapshots the page view lists.
const pageSnapshots = 20

// snapshotJSON is a snapshot as the API shows it.
type snapshotJSON struct {
	ID            int64     `json:"id"`
	PageID        int64     `json:"page_id"`
	CheckID       string    `json:"check_id"`
	FetchedAt     time.Time `json:"fetched_at"`
	URL           string    `json:"url"`
	Status        int       `json:"status"`
	ContentType   string    `json:"content_type"`
	PayloadBytes  int64     `json:"payload_bytes"`
	PayloadDigest string    `json:"payload_digest"`
	RecordID      string    `json:"record_id"`
	RevisitOf     string    `json:"revisit_of,omitempty"`
	File          string    `json:"file"`
	Offset        int64     `json:"offset"`
	Length        int64     `json:"length"`
	Baseline      bool      `json:"baseline"`
	Updates       int       `json:"updates"`
	Revisions     int       `json:"revisions"`
	Removals      int       `json:"removals"`
	Body          string    `json:"body"`
	// The DOM a rendered check kept beside the response, when it was
	// rendered.
	RenderedBytes int64  `json:"rendered_bytes,omitempty"`
	RenderedBody  string `json:"rendered_body,omitempty"`
}

func snapshotOf(s watch.Snapshot) snapshotJSON {
	out := snapshotJSON{ID: s.ID, PageID: s.PageID, CheckID: s.CheckID, FetchedAt: s.FetchedAt.UTC(), URL: s.Ref.TargetURI,
		Status: s.Ref.Status, ContentType: s.Ref.ContentType, PayloadBytes: s.Ref.PayloadBytes, PayloadDigest: s.Ref.PayloadDigest,
		RecordID: s.Ref.RecordID, RevisitOf: s.Ref.RevisitOf, File: s.Ref.File, Offset: s.Ref.Offset, Length: s.Ref.Length,
		Baseline: s.Baseline, Updates: s.Updates, Revisions: s.Revisions, Removals: s.Removals,
		Body: "/api/v1/snapshots/" + strconv.FormatInt(s.ID, 10)}
	if s.Ref.RenderedBytes > 0 {
		out.RenderedBytes, out.RenderedBody = s.Ref.RenderedBytes, out.Body+"/rendered"
	}
	return out
}

// apiPageSnapshots lists a page's snapshots, newest first.
func (s *Server) apiPageSnapshots(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	if s.deps.Snapshots == nil {
		s.problem(w, r, http.StatusServiceUnavailable, "this web program reads no archive (PORTALWATCH_ARCHIVE=false)")
		return
	}
	limit := 100
	for k, v := range r.URL.Query() {
		n, err := strconv.Atoi(v[0])
		if k != "limit" || len(v) != 1 || err != nil || n < 1 || n > watch.MaxUpdatesLimit {
			s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("%s: the snapshots of a page take limit (1 to %d) only", k, watch.MaxUpdatesLimit))
			return
		}
		limit = n
	}
	if _, err := s.deps.Pages.Page(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	snaps, err := s.deps.Snapshots.Snapshots(r.Context(), id, limit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Snapshots []snapshotJSON `json:"snapshots"`
	}{Snapshots: make([]snapshotJSON, len(snaps))}
	for i, snap := range snaps {
		out.Snapshots[i] = snapshotOf(snap)
	}
	writeJSON(w, http.StatusOK, out)
}

// apiSnapshot sends the body a snapshot stored, as a download that no
// browser renders: an attachment of type application/octet-stream, not
// sniffed, sandboxed should anything render it, so a stored page never
// runs as a page of portalwatch's origin.
func (s *Server) apiSnapshot(w http.ResponseWriter, r *http.Request) { s.sendSnapshot(w, r, false) }

// apiSnapshotRendered sends the DOM a rendered check kept, the same way:
// for a page built by scripts it is what the page showed, where the body
// as fetched may hold no story at all.
func (s *Server) apiSnapshotRendered(w http.ResponseWriter, r *http.Request) {
	s.sendSnapshot(w, r, true)
}

func (s *Server) sendSnapshot(w http.ResponseWriter, r *http.Request, rendered bool) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	if s.deps.Snapshots == nil || s.deps.SnapshotBodies == nil {
		s.problem(w, r, http.StatusServiceUnavailable, "this web program reads no archive (PORTALWATCH_ARCHIVE=false)")
		return
	}
	snap, err := s.deps.Snapshots.Snapshot(r.Context(), id)
	if errors.Is(err, watch.ErrSnapshotNotFound) {
		s.problem(w, r, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	read, name := s.deps.SnapshotBodies.Body, fmt.Sprintf("page-%d-snapshot-%d.html", snap.PageID, snap.ID)
	if rendered {
		read, name = s.deps.SnapshotBodies.Rendered, fmt.Sprintf("page-%d-snapshot-%d-rendered.html", snap.PageID, snap.ID)
	}
	body, err := read(r.Context(), snap, s.deps.SnapshotBodies.MaxBytes())
	switch {
	case errors.Is(err, watch.ErrSnapshotNotRendered):
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("snapshot %d: %v; its body is at /api/v1/snapshots/%d", id, err, id))
		return
	case errors.Is(err, watch.ErrSnapshotTooLarge):
		s.problem(w, r, http.StatusForbidden, fmt.Sprintf("snapshot %d: %v; `watchctl archive export %d FILE` writes it whole", id, err, snap.PageID))
		return
	case err != nil:
		s.fail(w, r, fmt.Errorf("snapshot %d: %w", id, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; frame-ancestors 'none'")
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	// What the site said, for a reader who wants it, under names no
	// browser acts on.
	h.Set("X-Snapshot-Content-Type", watch.CleanText(snap.Ref.ContentType))
	h.Set("X-Snapshot-Fetched-At", snap.FetchedAt.UTC().Format(time.RFC3339))
	h.Set("X-Snapshot-Record-Id", snap.Ref.RecordID)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body) //nolint:errcheck // the client left
	}
}

package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// RevisionReader reads the headline revisions of a page.
type RevisionReader interface {
	// Revisions returns watch.ErrPageNotFound for a page not watched.
	Revisions(ctx context.Context, f watch.RevisionFilter) ([]watch.Revision, error)
}

// pageRevisions is how many revisions the page view shows: the newest.
const pageRevisions = 20

// apiPageRevisions lists the headline revisions of a page, newest first,
// with limit and cursor as the links of a page have.
func (s *Server) apiPageRevisions(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	f, err := parseRevisionFilter(r.URL.Query())
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.PageID = id
	revs, err := s.deps.Revisions.Revisions(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Revisions  []watch.Revision `json:"revisions"`
		NextCursor string           `json:"next_cursor,omitempty"`
	}{Revisions: make([]watch.Revision, len(revs))}
	for i, v := range revs {
		v.At = v.At.UTC()
		out.Revisions[i] = v
	}
	if len(revs) == f.LimitOrDefault() {
		out.NextCursor = encodeRevisionCursor(revs[len(revs)-1].ID)
	}
	writeJSON(w, http.StatusOK, out)
}

// parseRevisionFilter reads the query of a revisions list: limit
// (1..1000) and cursor, and refuses any other parameter, as the links of a
// page do.
func parseRevisionFilter(q url.Values) (watch.RevisionFilter, error) {
	var f watch.RevisionFilter
	for k := range q {
		if k != "limit" && k != "cursor" {
			return f, fmt.Errorf("%s: the revisions of a page take limit and cursor only", k)
		}
	}
	var err error
	f.Limit = 100
	if v := strings.TrimSpace(q.Get("limit")); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 || f.Limit > watch.MaxUpdatesLimit {
			return f, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, watch.MaxUpdatesLimit)
		}
	}
	if v := strings.TrimSpace(q.Get("cursor")); v != "" {
		if f.Before, err = decodeRevisionCursor(v); err != nil {
			return f, fmt.Errorf("cursor %q: %w", v, err)
		}
	}
	return f, nil
}

// revisionCursorPrefix names the list a cursor continues, so that the
// cursor of another list is refused rather than read as an id.
const revisionCursorPrefix = "revisions."

// encodeRevisionCursor writes the id of the last revision of an answer as
// an opaque URL-safe string.
func encodeRevisionCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s%d", revisionCursorPrefix, id))
}

func decodeRevisionCursor(s string) (int64, error) {
	bad := errors.New("not a cursor; use the next_cursor of a previous answer")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, bad
	}
	n, ok := strings.CutPrefix(string(raw), revisionCursorPrefix)
	if !ok {
		return 0, bad
	}
	id, err := strconv.ParseInt(n, 10, 64)
	if err != nil || id <= 0 {
		return 0, bad
	}
	return id, nil
}

// recentRevisions returns the newest pageRevisions revisions of page id
// for its view; none without a reader, or when the page went to the trash
// since it was read.
func (s *Server) recentRevisions(r *http.Request, id int64) ([]watch.Revision, error) {
	if s.deps.Revisions == nil {
		return nil, nil
	}
	revs, err := s.deps.Revisions.Revisions(r.Context(), watch.RevisionFilter{PageID: id, Limit: pageRevisions})
	if errors.Is(err, watch.ErrPageNotFound) {
		return nil, nil
	}
	return revs, err
}

// revisionsFeedFile is the file of a page's revisions feed, before its
// format: /feeds/pages/{id}/revisions.atom, .rss or .json.
const revisionsFeedFile = "revisions"

// revisionsFeedPath is the path of page id's revisions feed, without its
// format extension.
func revisionsFeedPath(id int64) string {
	return fmt.Sprintf("/feeds/pages/%d/%s", id, revisionsFeedFile)
}

// feedPageRevisions serves the revisions feed of a page: its newest
// FeedEntries headline rewrites, in the formats of its updates feed.
func (s *Server) feedPageRevisions(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a page id: use /feeds/pages/{id}/revisions.atom, .rss or .json", r.PathValue("id")))
		return
	}
	stem, format, _ := strings.Cut(r.PathValue("file"), ".")
	if stem != revisionsFeedFile {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a feed of page %d: use /feeds/pages/%d/revisions.atom, .rss or .json", r.PathValue("file"), id, id))
		return
	}
	ctype, ok := feedTypes[format]
	if !ok {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("format %q: feeds end in .atom, .rss or .json", format))
		return
	}
	page, err := s.deps.Pages.Page(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	revs, err := s.deps.Revisions.Revisions(r.Context(), watch.RevisionFilter{PageID: id, Limit: FeedEntries})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Reading a hundred revisions through their index costs what a stamp
	// would, so the validator is made of what the feed shows.
	etag := revisionsETag(page, format, revs)
	var lastMod time.Time
	if len(revs) > 0 {
		lastMod = revs[0].At.UTC().Truncate(time.Second)
	}
	if answeredNotModified(w, r, etag, lastMod) {
		return
	}
	base := s.baseURL(r)
	entries := make([]entry, len(revs))
	for i, v := range revs {
		entries[i] = revisionEntry(page, v, base)
	}
	f := feedOf("portalwatch: headline changes on "+page.DisplayName(), base, r.URL.Path, watch.FeedScope{PageID: id},
		watch.FeedStamp{Newest: lastMod}, entries)
	f.Description = "Headlines rewritten on the page, newest first"
	var buf bytes.Buffer
	switch format {
	case "atom":
		err = writeAtom(&buf, f, entries, base+r.URL.Path)
	case "rss":
		err = writeRSS(&buf, f, entries, base)
	case "json":
		err = writeJSONFeed(&buf, f, entries, base+r.URL.Path)
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("write %s revisions feed: %w", format, err))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(buf.Bytes())
}

// revisionsETag is a strong validator of a revisions feed: its page, the
// name the title shows, the format, and the revisions it holds (the newest
// and the oldest, and how many: a new one or a pruned one changes them).
func revisionsETag(p watch.Page, format string, revs []watch.Revision) string {
	var newest, oldest int64
	if len(revs) > 0 {
		newest, oldest = revs[0].ID, revs[len(revs)-1].ID
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "revisions|%d|%s|%s|%d|%d|%d|%d", p.ID, p.DisplayName(), format, newest, oldest, len(revs), FeedEntries))
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// revisionTitle is a revision as a feed titles it: “old” → “new”.
func revisionTitle(v watch.Revision) string {
	return "“" + v.OldText + "” → “" + v.NewText + "”"
}

// revisionEntry makes v a feed entry: its title the two headlines, its link
// the story, its time the check that saw the rewrite, and an id of its own
// (revisions and updates share a sequence, but not their prefix).
func revisionEntry(p watch.Page, v watch.Revision, base string) entry {
	at := v.At.UTC()
	e := entry{
		Update: watch.Update{ID: v.ID, PageID: v.PageID, PageName: p.DisplayName(), URL: v.URL,
			Text: fmt.Sprintf("The headline of %s on %s changed from “%s” to “%s”.", v.URL, p.DisplayName(), v.OldText, v.NewText)},
		ID:        fmt.Sprintf("urn:portalwatch:revision:%d", v.ID),
		Title:     revisionTitle(v),
		Published: at,
		Updated:   at,
		Authors:   []string{p.DisplayName()},
		Channel:   base + revisionsFeedPath(v.PageID) + ".rss",
	}
	return e
}

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// SourceReader lists the feeds and news sitemaps of a page
// (store.Store.Sources).
type SourceReader interface {
	// Sources returns watch.ErrPageNotFound for a page not watched.
	Sources(ctx context.Context, pageID int64) ([]watch.Source, error)
	// Feeds lists the feeds of every watched page, or of those tagged tag.
	Feeds(ctx context.Context, tag string) ([]watch.PageFeed, error)
}

// SourceEditor changes one feed or news sitemap of a page
// (store.Store.EditSource).
type SourceEditor interface {
	// EditSource returns watch.ErrSourceNotFound for a source of no
	// watched page and a *watch.RefusedError for a bad edit.
	EditSource(ctx context.Context, id int64, e watch.SourceEdit) (watch.Source, error)
}

// sourceJSON is a source in the API, with its status in one word and how
// often it is checked.
type sourceJSON struct {
	watch.Source
	Status string `json:"status"`
	watch.SourceSchedule
}

func toSourceJSON(src watch.Source) sourceJSON {
	return sourceJSON{Source: utcSource(src), Status: src.Status(), SourceSchedule: src.Schedule()}
}

// sourceEditJSON is the body of PATCH /api/v1/sources/{id}.
type sourceEditJSON struct {
	// Interval is a duration ("2m", "1h") or "page" to follow the page's
	// interval again.
	Interval *string `json:"interval"`
	// Paused pauses the source (true) or resumes it (false): a resumed
	// source's next check is a silent baseline.
	Paused *bool `json:"paused"`
}

// apiEditSource answers PATCH /api/v1/sources/{id}: changes how often a
// feed or news sitemap is checked, or pauses or resumes it, and answers
// the source as stored.
func (s *Server) apiEditSource(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a source id: ids are positive whole numbers", r.PathValue("id")))
		return
	}
	var in sourceEditJSON
	if !s.decodeJSON(w, r, &in) {
		return
	}
	if in.Interval == nil && in.Paused == nil {
		s.problem(w, r, http.StatusBadRequest, `give interval (a duration such as "2m", or "page" to follow the page's interval), paused (true or false), or both`)
		return
	}
	edit := watch.SourceEdit{Paused: in.Paused}
	if in.Interval != nil {
		d, err := watch.ParseSourceInterval(*in.Interval)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		edit.Interval = &d
	}
	if s.deps.SourceEditor == nil {
		s.problem(w, r, http.StatusServiceUnavailable, "this server changes no sources")
		return
	}
	src, err := s.deps.SourceEditor.EditSource(r.Context(), id, edit)
	if errors.Is(err, watch.ErrSourceNotFound) {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("no source has id %d: GET /api/v1/pages/{id}/sources lists a page's sources with their ids", id))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSourceJSON(src))
}

// pageSources reads the sources of page id; a server without a
// SourceReader has none to show.
func (s *Server) pageSources(ctx context.Context, id int64) ([]watch.Source, error) {
	if s.deps.Sources == nil {
		return nil, nil
	}
	return s.deps.Sources.Sources(ctx, id)
}

// apiPageSources answers GET /api/v1/pages/{id}/sources: the page's feeds
// and news sitemaps, enabled ones first, with the state of their checks.
func (s *Server) apiPageSources(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	if _, err := s.deps.Pages.Page(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	sources, err := s.pageSources(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		Sources []sourceJSON `json:"sources"`
	}{Sources: make([]sourceJSON, len(sources))}
	for i, src := range sources {
		out.Sources[i] = toSourceJSON(src)
	}
	writeJSON(w, http.StatusOK, out)
}

func utcSource(src watch.Source) watch.Source {
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	src.NextCheckAt, src.DiscoveredAt, src.FoundAt = src.NextCheckAt.UTC(), src.DiscoveredAt.UTC(), src.FoundAt.UTC()
	src.LastCheckedAt, src.BaselineAt = utc(src.LastCheckedAt), utc(src.BaselineAt)
	return src
}

// pageSourcesOPML answers GET /pages/{id}/sources.opml: the feeds
// discovery found on the page, enabled ones, as an OPML list a feed
// reader imports.
func (s *Server) pageSourcesOPML(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pathWatchedPage(w, r)
	if !ok {
		return
	}
	sources, err := s.pageSources(r.Context(), p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var feeds []watch.PageFeed
	for _, src := range sources {
		if src.Kind == watch.SourceFeed && src.Enabled {
			feeds = append(feeds, watch.PageFeed{PageID: p.ID, PageName: p.DisplayName(), PageURL: p.BaseURL, Tags: p.Tags,
				Title: src.Title, URL: src.URL})
		}
	}
	s.writeFeedsOPML(w, fmt.Sprintf("Feeds of %s", p.DisplayName()), fmt.Sprintf("page-%d-feeds.opml", p.ID), feeds)
}

// allSourcesOPML answers GET /sources.opml: the feeds found on every
// watched page, or on the pages of ?tag=, as one OPML list, so that an
// analyst takes the feeds of all the portals she watches to her reader
// at once.
func (s *Server) allSourcesOPML(w http.ResponseWriter, r *http.Request) {
	tag := strings.TrimSpace(r.URL.Query().Get("tag"))
	var feeds []watch.PageFeed
	if s.deps.Sources != nil {
		var err error
		if feeds, err = s.deps.Sources.Feeds(r.Context(), tag); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	title, file := "Feeds of the watched pages", "portalwatch-feeds.opml"
	if tag != "" {
		title, file = fmt.Sprintf("Feeds of the pages tagged %s", tag), "portalwatch-feeds-"+fileSafe(tag)+".opml"
	}
	s.writeFeedsOPML(w, title, file, feeds)
}

// writeFeedsOPML answers with feeds as an OPML download named file.
func (s *Server) writeFeedsOPML(w http.ResponseWriter, title, file string, feeds []watch.PageFeed) {
	w.Header().Set("Content-Type", "text/x-opml; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, file))
	if err := pagefile.WriteFeeds(w, title, feeds); err != nil {
		s.log.Warn("write the feeds' OPML", "feeds", len(feeds), "err", err)
	}
}

// fileSafe keeps the letters, digits, '-' and '_' of s, for a download's
// file name.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

package web

import (
	"context"
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

// LinkReader reads the links list of a page: the links on it now, or
// those taken down from it, each with its time on the page.
type LinkReader interface {
	// PageLinks returns watch.ErrPageNotFound for a page not watched, and
	// watch.ErrPageNotFollowed for the current links of a page whose
	// followed set is not kept.
	PageLinks(ctx context.Context, f watch.LinkFilter) ([]watch.PageLink, error)
}

// apiPageLinks lists the links of a page, current (the default) or
// removed, newest first, with keyset pagination as the updates have.
func (s *Server) apiPageLinks(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	f, err := parseLinkFilter(r.URL.Query())
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	f.PageID = id
	links, err := s.deps.Links.PageLinks(r.Context(), f)
	if errors.Is(err, watch.ErrPageNotFollowed) {
		s.problem(w, r, http.StatusConflict, err.Error()+"; state=removed lists the links taken down from it")
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := struct {
		State      watch.LinkState  `json:"state"`
		Links      []watch.PageLink `json:"links"`
		NextCursor string           `json:"next_cursor,omitempty"`
	}{State: f.State, Links: make([]watch.PageLink, len(links))}
	for i, l := range links {
		out.Links[i] = l.Published()
	}
	if len(links) == f.LimitOrDefault() {
		out.NextCursor = encodeLinkCursor(f.State, links[len(links)-1].Cursor)
	}
	writeJSON(w, http.StatusOK, out)
}

// parseLinkFilter reads the query of a links list: state (current or
// removed), limit (1..1000) and cursor. Any other parameter is refused,
// so that a filter the list does not have (since, say) is not silently
// ignored.
func parseLinkFilter(q url.Values) (watch.LinkFilter, error) {
	var f watch.LinkFilter
	for k := range q {
		if k != "state" && k != "limit" && k != "cursor" {
			return f, fmt.Errorf("%s: the links of a page take state, limit and cursor only", k)
		}
	}
	var err error
	if f.State, err = watch.ParseLinkState(strings.TrimSpace(q.Get("state"))); err != nil {
		return f, err
	}
	f.Limit = 100
	if v := strings.TrimSpace(q.Get("limit")); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 || f.Limit > watch.MaxUpdatesLimit {
			return f, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, watch.MaxUpdatesLimit)
		}
	}
	if v := strings.TrimSpace(q.Get("cursor")); v != "" {
		if f.After, err = decodeLinkCursor(f.State, v); err != nil {
			return f, fmt.Errorf("cursor %q: %w", v, err)
		}
	}
	return f, nil
}

// encodeLinkCursor writes c as an opaque URL-safe string that names the
// state of its list, so a cursor is never read against the other one.
func encodeLinkCursor(state watch.LinkState, c watch.LinkCursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s.%d.%d", state, c.At.UnixMicro(), c.ID))
}

func decodeLinkCursor(state watch.LinkState, s string) (watch.LinkCursor, error) {
	const use = "use the next_cursor of a previous answer"
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return watch.LinkCursor{}, errors.New("not a cursor; " + use)
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 3 {
		return watch.LinkCursor{}, errors.New("not a cursor; " + use)
	}
	switch got := watch.LinkState(parts[0]); {
	case got != watch.LinksCurrent && got != watch.LinksRemoved:
		return watch.LinkCursor{}, errors.New("not a cursor; " + use)
	case got != state:
		return watch.LinkCursor{}, fmt.Errorf("it continues the %s links; send it with state=%s", got, got)
	}
	micros, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	// As decodeCursor: no time outside these years reaches PostgreSQL.
	if err1 != nil || err2 != nil || micros < minCursorMicros || micros > maxCursorMicros {
		return watch.LinkCursor{}, errors.New("not a cursor; " + use)
	}
	return watch.LinkCursor{At: time.UnixMicro(micros), ID: id}, nil
}

package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// pageOptionsJSON are a page's regions and keyword rules as the API shows
// and takes them (watch.LinkOptions, in the API's snake_case).
type pageOptionsJSON struct {
	Within      []string `json:"within"`
	Exclude     []string `json:"exclude"`
	IncludeText []string `json:"include_text"`
	ExcludeText []string `json:"exclude_text"`
	IncludeURL  []string `json:"include_url"`
	ExcludeURL  []string `json:"exclude_url"`
}

func toPageOptionsJSON(o watch.LinkOptions) pageOptionsJSON {
	return pageOptionsJSON{Within: nonNil(o.Within), Exclude: nonNil(o.Exclude), IncludeText: nonNil(o.IncludeText),
		ExcludeText: nonNil(o.ExcludeText), IncludeURL: nonNil(o.IncludeURL), ExcludeURL: nonNil(o.ExcludeURL)}
}

func (o pageOptionsJSON) options(sameSite bool, ignore []string) watch.LinkOptions {
	return watch.LinkOptions{SameSiteOnly: sameSite, Ignore: ignore, Within: o.Within, Exclude: o.Exclude,
		IncludeText: o.IncludeText, ExcludeText: o.ExcludeText, IncludeURL: o.IncludeURL, ExcludeURL: o.ExcludeURL}
}

// editOptionsJSON are the lists a page update replaces; an absent field
// stays as it is, [] empties the list.
type editOptionsJSON struct {
	Within      *[]string `json:"within"`
	Exclude     *[]string `json:"exclude"`
	IncludeText *[]string `json:"include_text"`
	ExcludeText *[]string `json:"exclude_text"`
	IncludeURL  *[]string `json:"include_url"`
	ExcludeURL  *[]string `json:"exclude_url"`
}

func (o editOptionsJSON) apply(e *watch.PageEdit) {
	e.Within, e.Exclude, e.IncludeText, e.ExcludeText, e.IncludeURL, e.ExcludeURL =
		o.Within, o.Exclude, o.IncludeText, o.ExcludeText, o.IncludeURL, o.ExcludeURL
}

// RemovalReader reads the links removed from their pages, newest first.
type RemovalReader interface {
	Removals(ctx context.Context, f watch.RemovalFilter) ([]watch.Removal, error)
}

// removalJSON is a removal as the API shows it.
type removalJSON struct {
	ID        int64     `json:"id"`
	PageID    int64     `json:"page_id"`
	URL       string    `json:"url"`
	Text      string    `json:"text"`
	RemovedAt time.Time `json:"removed_at"`
	// DwellSeconds is watch.Removal's; left out when not known.
	DwellSeconds *int64 `json:"dwell_seconds,omitempty"`
	// SnapshotID is watch.Removal's; left out when there is none.
	SnapshotID *int64 `json:"snapshot_id,omitempty"`
}

// apiRemovals lists removals, newest first; it takes the page, since and
// limit filters of the updates.
func (s *Server) apiRemovals(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err == nil && (f.Tag != "" || f.Text != "" || !f.Until.IsZero() || !f.After.IsZero() || f.ArticleBody) {
		err = errors.New("removals take page, since and limit only")
	}
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	removals, err := s.deps.Removals.Removals(r.Context(), watch.RemovalFilter{PageID: f.PageID, Since: f.Since, Limit: f.Limit})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Removals []removalJSON `json:"removals"`
	}{Removals: make([]removalJSON, len(removals))}
	for i, m := range removals {
		out.Removals[i] = removalJSON{ID: m.ID, PageID: m.PageID, URL: m.URL, Text: m.Text, RemovedAt: m.RemovedAt.UTC(),
			DwellSeconds: m.DwellSeconds, SnapshotID: m.SnapshotID}
	}
	writeJSON(w, http.StatusOK, out)
}

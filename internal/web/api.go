package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/portalwatch/portalwatch/internal/pagefile"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// maxBodyBytes bounds a JSON request body.
const maxBodyBytes = 1 << 20

// pageJSON is a page as the API shows it.
type pageJSON struct {
	ID              int64    `json:"id"`
	URL             string   `json:"url"`
	Name            string   `json:"name"`
	DisplayName     string   `json:"display_name"`
	Tags            []string `json:"tags"`
	Interval        string   `json:"interval"`
	IntervalSeconds float64  `json:"interval_seconds"`
	Enabled         bool     `json:"enabled"`
	SameSiteOnly    bool     `json:"same_site_only"`
	Ignore          []string `json:"ignore"`
	pageOptionsJSON
	BurstDetection      bool       `json:"burst_detection"`
	Articles            bool       `json:"articles"`
	RebaselinePending   bool       `json:"rebaseline_pending"`
	Status              string     `json:"status"`
	LastCheckedAt       *time.Time `json:"last_checked_at,omitempty"`
	LastStatus          int        `json:"last_status"`
	LastError           string     `json:"last_error"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	// LastTruncated and LastCut say what the last check left out: links the
	// crawler could not send (link cap, task byte budget) and new links not
	// recorded because of the page's caps on new links.
	LastTruncated int       `json:"last_truncated"`
	LastCut       int       `json:"last_cut"`
	NextCheckAt   time.Time `json:"next_check_at"`
	CreatedAt     time.Time `json:"created_at"`
	// Health says whether the watch may be blind to the page.
	Health healthJSON `json:"health"`
	// Headers are the request headers the checks of the page send, by
	// name; the value of a secret (Cookie, Authorization…) shows as "(set)".
	Headers map[string]string `json:"headers"`
	// Sources are what the page is watched through (homepage, feeds,
	// sitemaps); SourcesDiscoveredAt when its feeds and sitemaps were
	// last discovered, and SourcesDiscoveryError why the last discovery
	// failed (it is tried again within the hour).
	Sources               []string   `json:"sources"`
	SourcesDiscoveredAt   *time.Time `json:"sources_discovered_at,omitempty"`
	SourcesDiscoveryError string     `json:"sources_discovery_error,omitempty"`
	// Proxy names the proxy of the operator's list the page and its
	// articles are fetched through; "" is direct.
	Proxy string `json:"proxy"`
	// Render says the page is checked in headless Chromium; WaitFor is
	// the CSS selector the renderer waits for, "" for the network to go
	// idle.
	Render  bool   `json:"render"`
	WaitFor string `json:"wait_for"`
	// RenderAllow are the hosts beyond the page's site a rendered check
	// may load from; [] for none.
	RenderAllow []string `json:"render_allow"`
	// SuggestRender says the page's last plain check read almost no
	// links but scripts: rendering it may show its links.
	SuggestRender bool `json:"suggest_render"`
	// Restored marks the answer to an add that brought the page back
	// from the trash; DeletedAt and PurgeAt are a trashed page's.
	Restored  bool       `json:"restored,omitempty"`
	DeletedAt *time.Time `json:"deleted_at,omitempty"`
	PurgeAt   *time.Time `json:"purge_at,omitempty"`
}

// healthJSON is a page's watch.Health: status "ok" or "degraded", and
// for a degraded page its reason (a watch.Degradation), the sentence that
// says it, and when the run of degraded checks began.
type healthJSON struct {
	Status string     `json:"status"`
	Reason string     `json:"reason,omitempty"`
	Detail string     `json:"detail,omitempty"`
	Since  *time.Time `json:"since,omitempty"`
}

func toHealthJSON(h watch.Health) healthJSON {
	if !h.Degraded() {
		return healthJSON{Status: "ok"}
	}
	out := healthJSON{Status: "degraded", Reason: string(h.Reason), Detail: h.Detail}
	if !h.Since.IsZero() {
		t := h.Since.UTC()
		out.Since = &t
	}
	return out
}

// pageStatus sums a page's state up in one word: paused, pending (never
// checked), failing (the last check failed) or ok.
func pageStatus(p watch.Page) string {
	switch {
	case !p.Enabled:
		return "paused"
	case p.ConsecutiveFailures > 0:
		return "failing"
	case p.LastCheckedAt.IsZero():
		return "pending"
	}
	return "ok"
}

func toPageJSON(p watch.Page) pageJSON {
	out := pageJSON{
		ID: p.ID, URL: p.BaseURL, Name: p.Name, DisplayName: p.DisplayName(), Tags: nonNil(p.Tags),
		Interval: p.Interval.String(), IntervalSeconds: p.Interval.Seconds(), Enabled: p.Enabled,
		SameSiteOnly: p.Options.SameSiteOnly, Ignore: nonNil(p.Options.Ignore), Status: pageStatus(p),
		LastStatus: p.LastStatus, LastError: p.LastError, ConsecutiveFailures: p.ConsecutiveFailures,
		LastTruncated: p.LastTruncated, LastCut: p.LastCut, pageOptionsJSON: toPageOptionsJSON(p.Options),
		BurstDetection: p.BurstDetection, Articles: p.Articles, RebaselinePending: p.RebaselinePending,
		NextCheckAt: p.NextCheckAt.UTC(), CreatedAt: p.CreatedAt.UTC(), Health: toHealthJSON(p.Health),
		Headers: watch.ShownHeaderMap(p.Headers), Proxy: p.Proxy, Render: p.Render, WaitFor: p.WaitFor, RenderAllow: nonNil(p.RenderAllow),
		SuggestRender: p.SuggestRender(), Sources: nonNil(p.Sources), SourcesDiscoveryError: p.SourcesDiscoveryError,
	}
	if !p.SourcesDiscoveredAt.IsZero() {
		t := p.SourcesDiscoveredAt.UTC()
		out.SourcesDiscoveredAt = &t
	}
	if !p.LastCheckedAt.IsZero() {
		t := p.LastCheckedAt.UTC()
		out.LastCheckedAt = &t
	}
	out.Restored = p.Restored
	if !p.DeletedAt.IsZero() {
		deleted, purge := p.DeletedAt.UTC(), p.PurgeAt().UTC()
		out.DeletedAt, out.PurgeAt = &deleted, &purge
	}
	return out
}

// headerList is an object of headers as a list, sorted by name so that
// a page sends them in a stable order.
func headerList(m map[string]*string) []watch.Header {
	out := make([]watch.Header, 0, len(m))
	for name, v := range m {
		h := watch.Header{Name: name}
		if v != nil {
			h.Value = *v
		}
		out = append(out, h)
	}
	slices.SortFunc(out, func(a, b watch.Header) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *Server) apiListPages(w http.ResponseWriter, r *http.Request) {
	health := r.URL.Query().Get("health")
	if health != "" && health != "ok" && health != "degraded" {
		s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("health=%q: want ok or degraded", health))
		return
	}
	s.writePages(w, r, func(ctx context.Context) ([]watch.Page, error) {
		pages, err := s.deps.Pages.Pages(ctx)
		if health == "" || err != nil {
			return pages, err
		}
		// Every page is read anyway: the list has no paging to keep.
		kept := pages[:0]
		for _, p := range pages {
			if p.Health.Degraded() == (health == "degraded") {
				kept = append(kept, p)
			}
		}
		return kept, nil
	})
}

// writePages answers with the pages list reads, as {"pages": [...]}.
func (s *Server) writePages(w http.ResponseWriter, r *http.Request, list func(context.Context) ([]watch.Page, error)) {
	pages, err := list(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]pageJSON, len(pages))
	for i, p := range pages {
		out[i] = toPageJSON(p)
	}
	writeJSON(w, http.StatusOK, map[string]any{"pages": out})
}

// pathID reads the {id} of the path: a positive whole number, else 404 (no
// page can have it).
func (s *Server) pathID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		// GET /api/v1/pages/import lands here, on the {id} route: a path
		// of its own under other methods deserves 405 and Allow.
		if allow := s.exactMethods(r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.problem(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, ", "))
			return 0, false
		}
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a page id: ids are positive whole numbers", r.PathValue("id")))
		return 0, false
	}
	return id, true
}

func (s *Server) apiGetPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	p, err := s.deps.Pages.Page(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toPageJSON(p))
}

// duration is a JSON duration: a Go duration string ("5m", "1h30m").
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration string such as "5m"`)
	}
	v, err := watch.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

type createPageJSON struct {
	URL          string    `json:"url"`
	Interval     *duration `json:"interval"`
	Name         string    `json:"name"`
	Tags         []string  `json:"tags"`
	Enabled      *bool     `json:"enabled"`
	SameSiteOnly bool      `json:"same_site_only"`
	Ignore       []string  `json:"ignore"`
	pageOptionsJSON
	BurstDetection *bool `json:"burst_detection"`
	Articles       *bool `json:"articles"`
	// Headers are sent with the page's fetches, values in clear here:
	// the secrets are stored sealed and never shown again.
	Headers map[string]*string `json:"headers"`
	// Sources are what the page is watched through; none is homepage.
	Sources []string `json:"sources"`
	// Proxy names one of the proxies of PORTALWATCH_PROXIES; "" or none
	// is direct.
	Proxy   string `json:"proxy"`
	Render  bool   `json:"render"`
	WaitFor string `json:"wait_for"`
	// RenderAllow are hosts beyond the page's site a rendered check may
	// load from (host names, or host:port).
	RenderAllow []string `json:"render_allow"`
}

// decodeJSON reads a JSON body into v: one object, known fields only, at
// most maxBodyBytes. It answers 400 itself and returns false on a bad body.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		s.problem(w, r, http.StatusUnsupportedMediaType, "send the body as application/json")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.problem(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", maxBodyBytes))
			return false
		}
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func (s *Server) apiCreatePage(w http.ResponseWriter, r *http.Request) {
	var in createPageJSON
	if !s.decodeJSON(w, r, &in) {
		return
	}
	p, err := s.createPage(r, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/pages/%d", p.ID))
	writeJSON(w, http.StatusCreated, toPageJSON(p))
}

// createPage checks in through registration, exactly as watchctl add does,
// and stores it.
func (s *Server) createPage(r *http.Request, in createPageJSON) (watch.Page, error) {
	interval := watch.DefaultInterval
	if in.Interval != nil {
		interval = time.Duration(*in.Interval)
	}
	p, err := s.cfg.Policy.CheckPage(r.Context(), watch.PageSpec{
		URL: in.URL, Interval: interval, Name: in.Name, Tags: in.Tags,
		Options:           in.pageOptionsJSON.options(in.SameSiteOnly, in.Ignore),
		Paused:            in.Enabled != nil && !*in.Enabled,
		BurstDetectionOff: in.BurstDetection != nil && !*in.BurstDetection,
		ArticlesOff:       in.Articles != nil && !*in.Articles,
		Headers:           headerList(in.Headers),
		Sources:           in.Sources,
		Proxy:             in.Proxy,
		Render:            in.Render,
		WaitFor:           in.WaitFor,
		RenderAllow:       in.RenderAllow,
	})
	if err != nil {
		return watch.Page{}, err
	}
	return s.deps.Writer.CreatePage(r.Context(), p)
}

type editPageJSON struct {
	Interval     *duration `json:"interval"`
	Enabled      *bool     `json:"enabled"`
	SameSiteOnly *bool     `json:"same_site_only"`
	Ignore       *[]string `json:"ignore"`
	Name         *string   `json:"name"`
	Tags         *[]string `json:"tags"`
	editOptionsJSON
	BurstDetection *bool `json:"burst_detection"`
	Articles       *bool `json:"articles"`
	// Headers are merged by name: a value sets the header, "" or null
	// removes it, and "(set)" keeps a secret as stored. ClearHeaders
	// removes every header first.
	Headers      map[string]*string `json:"headers"`
	ClearHeaders bool               `json:"clear_headers"`
	// Sources replaces what the page is watched through.
	Sources *[]string `json:"sources"`
	// Proxy sets the page's proxy; "" fetches it direct again.
	Proxy   *string `json:"proxy"`
	Render  *bool   `json:"render"`
	WaitFor *string `json:"wait_for"`
	// RenderAllow replaces the hosts a rendered check may load from
	// beyond the page's site; [] allows none.
	RenderAllow *[]string `json:"render_allow"`
}

func (s *Server) apiEditPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	var in editPageJSON
	if !s.decodeJSON(w, r, &in) {
		return
	}
	edit := watch.PageEdit{Enabled: in.Enabled, SameSiteOnly: in.SameSiteOnly, Ignore: in.Ignore, Name: in.Name, Tags: in.Tags,
		BurstDetection: in.BurstDetection, Articles: in.Articles, Render: in.Render, WaitFor: in.WaitFor, RenderAllow: in.RenderAllow}
	in.editOptionsJSON.apply(&edit)
	if in.Headers != nil {
		list := headerList(in.Headers)
		edit.Headers = &list
	}
	edit.ClearHeaders, edit.Proxy = in.ClearHeaders, in.Proxy
	edit.Sources = in.Sources
	if in.Interval != nil {
		d := time.Duration(*in.Interval)
		edit.Interval = &d
	}
	if edit.IsZero() {
		s.problem(w, r, http.StatusBadRequest, "give at least one of interval, enabled, same_site_only, ignore, name, tags, "+
			"within, exclude, include_text, exclude_text, include_url, exclude_url, burst_detection, articles, headers, clear_headers, proxy, sources")
		return
	}
	p, err := s.editPage(r, id, edit)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toPageJSON(p))
}

func (s *Server) editPage(r *http.Request, id int64, edit watch.PageEdit) (watch.Page, error) {
	// Each setting on its own first, so a bad one is named even for a
	// page that does not exist.
	edit, err := edit.Normalize()
	if err != nil {
		return watch.Page{}, err
	}
	// The caps that span a page's lists need the options as they will be
	// stored.
	current, err := s.deps.Pages.Page(r.Context(), id)
	if err != nil {
		return watch.Page{}, err
	}
	if edit, err = s.cfg.Policy.CheckEdit(edit, current.Options); err != nil {
		return watch.Page{}, err
	}
	return s.deps.Writer.EditPage(r.Context(), id, edit)
}

// apiCheckPage makes a page due now: 202, its next check is the
// scheduler's next round (a second or so), not this request.
func (s *Server) apiCheckPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	p, err := s.deps.Writer.CheckNow(r.Context(), id)
	if errors.Is(err, watch.ErrPagePaused) {
		s.problem(w, r, http.StatusConflict, err.Error())
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, toPageJSON(p))
}

func (s *Server) apiDeletePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	if _, err := s.deps.Writer.TrashPage(r.Context(), id); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) apiListTrash(w http.ResponseWriter, r *http.Request) {
	s.writePages(w, r, s.deps.Pages.TrashedPages)
}

func (s *Server) apiRestorePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathID(w, r)
	if !ok {
		return
	}
	p, err := s.deps.Writer.RestorePage(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toPageJSON(p))
}

// listFormat picks CSV or OPML from ?format=, else from the Content-Type.
func listFormat(r *http.Request) (string, error) {
	switch f := r.URL.Query().Get("format"); f {
	case pagefile.CSV, pagefile.OPML:
		return f, nil
	case "":
	default:
		return "", fmt.Errorf("format %q: want csv or opml", f)
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "text/csv":
		return pagefile.CSV, nil
	case "text/x-opml", "application/xml", "text/xml":
		return pagefile.OPML, nil
	}
	return "", errors.New("say the format: ?format=csv|opml, or Content-Type text/csv or text/x-opml")
}

// apiImport reads, checks and registers a list as a stream: the list is
// read a row at a time and held checked and packed (pagefile.ReadChecked),
// registered a page at a time, and the new pages are written to the answer
// a batch at a time, so that no import within pagefile's caps holds its
// pages whole.
func (s *Server) apiImport(w http.ResponseWriter, r *http.Request) {
	format, err := listFormat(r)
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	list, err := pagefile.ReadChecked(ctx, s.cfg.Policy, http.MaxBytesReader(w, r.Body, pagefile.MaxBytes+1), format)
	if err != nil {
		s.importError(w, r, err)
		return
	}
	watched, err := s.deps.Importer.WatchedAmong(ctx, list.URLs())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list.RefuseWatched(watched)
	if err := list.Err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	ids, err := s.deps.Importer.ImportPages(ctx, list.Pages())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	// The answer is writeJSON's {"pages":[...]}, written a page at a time.
	io.WriteString(w, `{"pages":[`)
	var (
		buf   bytes.Buffer
		first = true
	)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err = s.deps.Importer.EachPage(ctx, ids, func(p watch.Page) error {
		buf.Reset()
		if !first {
			buf.WriteByte(',')
		}
		first = false
		if err := enc.Encode(toPageJSON(p)); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		return err
	})
	if err != nil {
		// The pages are stored and the status sent: a cut answer (not
		// JSON) is all that can tell the client, most often gone already.
		s.log.Warn("the answer to an import was cut", "method", r.Method, "path", r.URL.Path, "pages", len(ids), "err", err)
		return
	}
	io.WriteString(w, "]}\n")
}

// importError answers an import that failed before anything was written:
// 400 for a list that cannot be read, else as writeError.
func (s *Server) importError(w http.ResponseWriter, r *http.Request, err error) {
	var unreadable *pagefile.UnreadableError
	if errors.As(err, &unreadable) {
		s.problem(w, r, http.StatusBadRequest, unreadable.Error())
		return
	}
	s.writeError(w, r, err)
}

func (s *Server) apiExport(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = pagefile.CSV
	}
	if format != pagefile.CSV && format != pagefile.OPML {
		s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("format %q: want csv or opml", format))
		return
	}
	pages, err := s.deps.Pages.Pages(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := pagefile.Write(&buf, format, pages); err != nil {
		s.fail(w, r, err)
		return
	}
	ct := "text/csv; charset=utf-8"
	if format == pagefile.OPML {
		ct = "text/x-opml; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Disposition", "attachment; filename=portalwatch-pages."+format)
	w.Write(buf.Bytes())
}

// parseFilter reads the update filters of a query string: page, tag, since,
// until (RFC 3339), q (text), limit (1..1000), cursor, and content=full,
// which has each update's article carry its body.
func parseFilter(q map[string][]string) (watch.UpdateFilter, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	var f watch.UpdateFilter
	var err error
	if v := get("page"); v != "" {
		if f.PageID, err = strconv.ParseInt(v, 10, 64); err != nil || f.PageID <= 0 {
			return f, fmt.Errorf("page %q: want a page id (a positive whole number)", v)
		}
	}
	if v := get("tag"); v != "" {
		tags, err := watch.NormalizeTags([]string{v})
		if err != nil {
			return f, err
		}
		f.Tag = tags[0]
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := get(t.name); v != "" {
			if *t.dst, err = time.Parse(time.RFC3339, v); err == nil {
				continue
			}
			// As watchctl takes it: a duration back from now.
			if d, derr := watch.ParseDuration(v); derr == nil {
				*t.dst = time.Now().Add(-d)
				continue
			}
			return f, fmt.Errorf("%s %q: want an RFC 3339 time such as 2026-11-30T08:00:00Z, or a duration back from now such as 1h or 2d", t.name, v)
		}
	}
	f.Text = get("q")
	if n := utf8.RuneCountInString(f.Text); n > 0 && n < watch.MinSearchRunes {
		// Shorter words match too much of the table to be found through
		// its trigram index, and a walk of every update would hold a
		// connection for seconds.
		return f, fmt.Errorf("q %q: search for at least %d characters", f.Text, watch.MinSearchRunes)
	}
	if len(f.Text) > 200 {
		return f, errors.New("q is longer than 200 bytes")
	}
	f.Limit = 100
	if v := get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 || f.Limit > watch.MaxUpdatesLimit {
			return f, fmt.Errorf("limit %q: want a whole number from 1 to %d", v, watch.MaxUpdatesLimit)
		}
	}
	if v := get("cursor"); v != "" {
		if f.After, err = decodeCursor(v); err != nil {
			return f, fmt.Errorf("cursor %q: %w (use the next_cursor of a previous answer)", v, err)
		}
	}
	switch v := get("content"); v {
	case "":
	case contentFull:
		f.ArticleBody = true
	default:
		return f, fmt.Errorf("content %q: want full (the articles with their bodies), or leave it out", v)
	}
	return f, nil
}

// The times a cursor may hold, in Unix microseconds: years 1 to 9999,
// well inside both Go's and PostgreSQL's ranges.
const (
	minCursorMicros = -62135596800 * 1_000_000
	maxCursorMicros = 253402300799 * 1_000_000
)

// encodeCursor writes c as an opaque URL-safe string.
func encodeCursor(c watch.Cursor) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d.%d", c.DiscoveredAt.UnixMicro(), c.ID))
}

func decodeCursor(s string) (watch.Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return watch.Cursor{}, errors.New("not a cursor")
	}
	at, id, ok := strings.Cut(string(raw), ".")
	micros, err1 := strconv.ParseInt(at, 10, 64)
	n, err2 := strconv.ParseInt(id, 10, 64)
	// A time outside PostgreSQL's timestamps (years 4713 BC to 294276 AD)
	// would wrap on its way there: no cursor this server wrote holds one.
	if !ok || err1 != nil || err2 != nil || n <= 0 || micros < minCursorMicros || micros > maxCursorMicros {
		return watch.Cursor{}, errors.New("not a cursor")
	}
	return watch.Cursor{DiscoveredAt: time.UnixMicro(micros), ID: n}, nil
}

func (s *Server) apiUpdates(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.problem(w, r, http.StatusBadRequest, err.Error())
		return
	}
	updates, err := s.deps.Updates.QueryUpdates(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := struct {
		Updates    []watch.Update `json:"updates"`
		NextCursor string         `json:"next_cursor,omitempty"`
	}{Updates: make([]watch.Update, len(updates))}
	for i, u := range updates {
		out.Updates[i] = u.Published()
	}
	if len(updates) == f.Limit {
		out.NextCursor = encodeCursor(watch.CursorOf(updates[len(updates)-1]))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) apiDeadLetters(w http.ResponseWriter, r *http.Request) {
	queues, err := s.deps.Dead.DeadLetters(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": queues})
}

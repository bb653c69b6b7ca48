package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// pagesPerScreen is how many pages the pages list shows at a time.
const pagesPerScreen = 100

// sparklineHours is the span of a page's sparkline: a week.
const sparklineHours = 7 * 24

// pageForm is the add and edit form's content, as typed, and what was
// wrong with it.
type pageForm struct {
	URL, Name, Tags, Interval, Ignore string
	// Regions and keyword rules, one selector or pattern a line.
	Within, Exclude, IncludeText, ExcludeText, IncludeURL, ExcludeURL string
	SameSite, Enabled, BurstDetection, Articles                       bool
	// Headers are the request headers, "Name: value" a line, secrets
	// as "Name: (set)".
	Headers string
	// Feeds and Sitemaps are the sources checked besides the homepage.
	Feeds, Sitemaps bool
	// Proxy is the proxy chosen, "" for direct; Proxies the names to
	// choose from (PORTALWATCH_PROXIES), and ProxyUnlisted says that
	// Proxy is not one of them (the list changed since it was chosen).
	Proxy         string
	Proxies       []string
	ProxyUnlisted bool
	// Render and WaitFor are the page's rendering in headless Chromium
	// and the selector its renderer waits for.
	Render  bool
	WaitFor string
	// RenderAllow are the hosts beyond the page's site its renderer may
	// load from, as typed: separated by spaces, commas or lines.
	RenderAllow string
	// Errors holds the refusals by watch.RefusedError's Field (url,
	// interval, name, tags, ignore, within, exclude, includeText,
	// excludeText, includeUrl, excludeUrl, options), each shown beside
	// its field: every one at once.
	Errors map[string]string
	// Open says the form shows its options, closed behind "more" unless
	// one of them was refused.
	Open bool
}

// listField is one textarea of a page's option lists, as the "listfield"
// template shows it.
type listField struct {
	Name, Label, Example, Value, Error string
}

// refuse puts every refusal of err beside its field and reports whether
// err held any; any other error is the server's.
func (f *pageForm) refuse(err error) bool {
	refusals := watch.RefusalsOf(err)
	if errors.Is(err, watch.ErrDuplicatePage) {
		refusals = append(refusals, &watch.RefusedError{Field: "url", Err: errors.New("this URL is watched already")})
	}
	if len(refusals) == 0 {
		return false
	}
	f.Errors = map[string]string{}
	for _, r := range refusals {
		if prev, ok := f.Errors[r.Field]; ok {
			f.Errors[r.Field] = prev + "; " + r.Error()
		} else {
			f.Errors[r.Field] = r.Error()
		}
		if r.Field != "url" {
			f.Open = true
		}
	}
	return true
}

// formSettings reads the settings the add and edit forms share: the form
// as typed, to show again beside a refusal, and the link options it asks
// for. An unchecked box is absent from a form, so same-site, burst
// detection and articles are off unless sent.
func formSettings(r *http.Request) (pageForm, watch.LinkOptions) {
	f := pageForm{
		Name: r.PostFormValue("name"), Tags: r.PostFormValue("tags"), Interval: strings.TrimSpace(r.PostFormValue("interval")),
		Ignore: r.PostFormValue("ignore"), Within: r.PostFormValue("within"), Exclude: r.PostFormValue("exclude"),
		IncludeText: r.PostFormValue("include_text"), ExcludeText: r.PostFormValue("exclude_text"),
		IncludeURL: r.PostFormValue("include_url"), ExcludeURL: r.PostFormValue("exclude_url"),
		SameSite: r.PostFormValue("same_site") == "on", BurstDetection: r.PostFormValue("burst_detection") == "on",
		Articles: r.PostFormValue("articles") == "on", Headers: r.PostFormValue("headers"),
		Feeds: r.PostFormValue("source_feeds") == "on", Sitemaps: r.PostFormValue("source_sitemaps") == "on",
		Proxy:  strings.TrimSpace(r.PostFormValue("proxy")),
		Render: r.PostFormValue("render") == "on", WaitFor: strings.TrimSpace(r.PostFormValue("wait_for")),
		RenderAllow: r.PostFormValue("render_allow"),
	}
	o := watch.LinkOptions{SameSiteOnly: f.SameSite, Ignore: splitLines(f.Ignore), Within: splitLines(f.Within),
		Exclude: splitLines(f.Exclude), IncludeText: splitLines(f.IncludeText), ExcludeText: splitLines(f.ExcludeText),
		IncludeURL: splitLines(f.IncludeURL), ExcludeURL: splitLines(f.ExcludeURL)}
	return f, o
}

// formInterval parses the form's interval; empty means def.
func formInterval(typed string, def time.Duration) (time.Duration, error) {
	if typed == "" {
		return def, nil
	}
	d, err := watch.ParseDuration(typed)
	if err != nil {
		return 0, &watch.RefusedError{Field: "interval", Err: err}
	}
	return d, nil
}

// sources are what the form's checkboxes choose: the homepage always.
func (f pageForm) sources() []string {
	out := []string{watch.SourcesHomepage}
	if f.Feeds {
		out = append(out, watch.SourcesFeeds)
	}
	if f.Sitemaps {
		out = append(out, watch.SourcesSitemaps)
	}
	return out
}

// formHeaders reads the headers textarea, "Name: value" a line.
func formHeaders(typed string) ([]watch.Header, error) {
	var out []watch.Header
	for _, line := range splitLines(typed) {
		h, err := watch.ParseHeader(line)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// pageRow is one line of the pages list.
type pageRow struct {
	watch.Page
	Spark sparkline
}

type pagesView struct {
	view
	Rows   []pageRow
	Counts watch.PageCounts
	// Query is the list's filter as the form shows it; Next the address
	// of the next screen, empty on the last.
	Query watch.PageQuery
	Next  string
	Dead  []DeadQueue
	Form  pageForm
	// Statuses fill the status filter's choice.
	Statuses []string
	Error    string
}

func (s *Server) uiPages(w http.ResponseWriter, r *http.Request) {
	s.showPages(w, r, http.StatusOK, pageForm{Interval: watch.FormatDuration(watch.DefaultInterval), Enabled: true, BurstDetection: true, Articles: true})
}

// pageQueryOf reads the pages list's filter from the address.
func pageQueryOf(q url.Values) (watch.PageQuery, error) {
	pq := watch.PageQuery{Tag: strings.TrimSpace(q.Get("tag")), Text: strings.TrimSpace(q.Get("q")), Status: q.Get("status"), Limit: pagesPerScreen}
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			return pq, watch.Refused("after", fmt.Errorf("after=%q: want the number of the last page of the previous screen", a))
		}
		pq.After = n
	}
	return pq, nil
}

func (s *Server) showPages(w http.ResponseWriter, r *http.Request, status int, form pageForm) {
	v := pagesView{view: s.viewOf(r, "Watched pages", "pages"), Form: s.withProxies(form), Statuses: watch.PageStatuses}
	var err error
	v.Query, err = pageQueryOf(r.URL.Query())
	if err == nil {
		var pages []watch.Page
		pages, err = s.deps.Pages.QueryPages(r.Context(), v.Query)
		if err == nil {
			err = s.fillRows(r, &v, pages)
		}
	}
	if watch.RefusalsOf(err) != nil {
		v.Error, status = err.Error(), http.StatusBadRequest
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	if v.Counts, err = s.deps.Pages.CountPages(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.deps.Dead != nil {
		dead, err := s.deps.Dead.DeadLetters(r.Context())
		if err != nil {
			dead = []DeadQueue{{Queue: "dead letters", Error: err.Error()}}
		}
		// The box shows only when there is something in it.
		for _, d := range dead {
			if d.Count > 0 || d.Error != "" {
				v.Dead = append(v.Dead, d)
			}
		}
	}
	s.render(w, r, status, "pages", v)
}

// fillRows puts pages and their sparklines in v, and the address of the
// next screen when this one is full.
func (s *Server) fillRows(r *http.Request, v *pagesView, pages []watch.Page) error {
	ids := make([]int64, len(pages))
	for i, p := range pages {
		ids[i] = p.ID
	}
	lines, err := s.deps.Pages.Sparklines(r.Context(), ids, sparklineHours)
	if err != nil {
		return err
	}
	for _, p := range pages {
		v.Rows = append(v.Rows, pageRow{Page: p, Spark: newSparkline(lines[p.ID])})
	}
	if len(pages) == v.Query.LimitOrDefault() {
		next := r.URL.Query()
		next.Set("after", strconv.FormatInt(pages[len(pages)-1].ID, 10))
		next.Del("done")
		next.Del("n")
		v.Next = "/pages?" + next.Encode()
	}
	return nil
}

// formPage reads the add form into a page to register.
func formPage(r *http.Request) (pageForm, watch.PageSpec, error) {
	f, options := formSettings(r)
	f.URL, f.Enabled = strings.TrimSpace(r.PostFormValue("url")), true
	p := watch.PageSpec{URL: f.URL, Name: f.Name, Tags: splitTags(f.Tags), Options: options, BurstDetectionOff: !f.BurstDetection,
		ArticlesOff: !f.Articles, Proxy: f.Proxy, Render: f.Render, WaitFor: f.WaitFor,
		RenderAllow: watch.SplitRenderAllow(f.RenderAllow)}
	interval, intervalErr := formInterval(f.Interval, watch.DefaultInterval)
	headers, headersErr := formHeaders(f.Headers)
	p.Interval, p.Headers, p.Sources = interval, headers, f.sources()
	return f, p, watch.JoinRefused(intervalErr, headersErr)
}

func (s *Server) uiAddPage(w http.ResponseWriter, r *http.Request) {
	form, p, intervalErr := formPage(r)
	// The interval's refusal joins the others: every error at once.
	checked, err := s.cfg.Policy.CheckPage(r.Context(), p)
	if err = watch.JoinRefused(intervalErr, err); err == nil {
		var page watch.Page
		if page, err = s.deps.Writer.CreatePage(r.Context(), checked); err == nil {
			done := flashWatching
			if page.Restored {
				done = flashRestored
			}
			http.Redirect(w, r, flashURL(fmt.Sprintf("/pages/%d", page.ID), done, page.ID), http.StatusSeeOther)
			return
		}
	}
	if !form.refuse(err) {
		s.fail(w, r, err)
		return
	}
	s.showPages(w, r, http.StatusUnprocessableEntity, form)
}

type pageView struct {
	view
	Page  watch.Page
	Spark sparkline
	River riverView
	Form  pageForm
	// Revisions are the newest headline rewrites of the page; the section
	// that lists them is left out when there are none.
	Revisions []watch.Revision
	// Snapshots are the page's newest archived snapshots, for a signed-in
	// reader only (they need a token); the section is left out without.
	Snapshots []watch.Snapshot
	// Sources are the page's feeds and news sitemaps.
	Sources []watch.Source
}

func (s *Server) uiPage(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.pathWatchedPage(w, r); ok {
		s.showPage(w, r, http.StatusOK, p, editFormOf(p))
	}
}

// pathWatchedPage reads the watched page the path's {id} names; a bad id, a
// page in the trash or none at all is answered 404.
func (s *Server) pathWatchedPage(w http.ResponseWriter, r *http.Request) (watch.Page, bool) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return watch.Page{}, false
	}
	p, err := s.deps.Pages.Page(r.Context(), id)
	if errors.Is(err, watch.ErrPageNotFound) {
		s.missingPage(w, r, id)
		return watch.Page{}, false
	} else if err != nil {
		s.fail(w, r, err)
		return watch.Page{}, false
	}
	return p, true
}

// missingPage answers for a page that is not watched: in the trash, or
// gone.
func (s *Server) missingPage(w http.ResponseWriter, r *http.Request, id int64) {
	s.pageNotFound(w, r, fmt.Sprintf("No page %d is watched. A page removed in the last 7 days is in the trash, where it can be restored.", id))
}

func editFormOf(p watch.Page) pageForm {
	o := p.Options
	lines := func(l []string) string { return strings.Join(l, "\n") }
	return pageForm{URL: p.BaseURL, Name: p.Name, Tags: strings.Join(p.Tags, " "), Interval: watch.FormatDuration(p.Interval),
		Ignore: lines(o.Ignore), Within: lines(o.Within), Exclude: lines(o.Exclude), IncludeText: lines(o.IncludeText),
		ExcludeText: lines(o.ExcludeText), IncludeURL: lines(o.IncludeURL), ExcludeURL: lines(o.ExcludeURL),
		SameSite: o.SameSiteOnly, Enabled: p.Enabled, BurstDetection: p.BurstDetection, Articles: p.Articles,
		Headers: lines(watch.ShownHeaders(p.Headers)), Feeds: slices.Contains(p.Sources, watch.SourcesFeeds),
		Sitemaps: slices.Contains(p.Sources, watch.SourcesSitemaps), Proxy: p.Proxy, Render: p.Render, WaitFor: p.WaitFor,
		RenderAllow: strings.Join(p.RenderAllow, " ")}
}

// withProxies gives form the proxies to choose from.
func (s *Server) withProxies(form pageForm) pageForm {
	form.Proxies = s.cfg.Policy.Proxies
	form.ProxyUnlisted = form.Proxy != "" && !slices.Contains(form.Proxies, form.Proxy)
	return form
}

func (s *Server) showPage(w http.ResponseWriter, r *http.Request, status int, p watch.Page, form pageForm) {
	river, err := s.riverOf(r, watch.UpdateFilter{PageID: p.ID}, fmt.Sprintf("/pages/%d", p.ID))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.markSoFar(r, p.ID, river.Items); err != nil {
		s.fail(w, r, err)
		return
	}
	lines, err := s.deps.Pages.Sparklines(r.Context(), []int64{p.ID}, sparklineHours)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	revs, err := s.recentRevisions(r, p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sources, err := s.pageSources(r.Context(), p.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := pageView{view: s.viewOf(r, p.DisplayName(), "pages"), Page: p, Spark: newSparkline(lines[p.ID]), River: river, Form: s.withProxies(form),
		Revisions: revs, Sources: sources}
	if v.SignedIn && s.deps.Snapshots != nil {
		if v.Snapshots, err = s.deps.Snapshots.Snapshots(r.Context(), p.ID, pageSnapshots); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, status, "page", v)
}

// markSoFar gives each story of items that is still on page pageID its
// time there so far. The current links come newest first, so the 1,000
// read cover the stories of a screen unless the page gained more links
// since; a page whose current links are not known marks none.
func (s *Server) markSoFar(r *http.Request, pageID int64, items []riverItem) error {
	if len(items) == 0 || s.deps.Links == nil {
		return nil
	}
	links, err := s.deps.Links.PageLinks(r.Context(), watch.LinkFilter{PageID: pageID, Limit: watch.MaxUpdatesLimit})
	if errors.Is(err, watch.ErrPageNotFollowed) || errors.Is(err, watch.ErrPageNotFound) {
		return nil // not followed, or trashed since it was read: no story is marked
	}
	if err != nil {
		return err
	}
	on := make(map[string]int64, len(links))
	for _, l := range links {
		if l.DwellSeconds != nil {
			on[l.URL] = *l.DwellSeconds
		}
	}
	for i, it := range items {
		if secs, ok := on[it.URL]; ok && it.Burst == nil && it.RemovedAt == nil {
			items[i].SoFar = watch.HumanDuration(time.Duration(secs) * time.Second)
		}
	}
	return nil
}

func (s *Server) uiEditPage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return
	}
	form, o := formSettings(r)
	// The form shows every setting, so it sends each list whole: an
	// emptied textarea empties its list.
	tags := splitTags(form.Tags)
	edit := watch.PageEdit{Name: &form.Name, Tags: &tags, SameSiteOnly: &o.SameSiteOnly, Ignore: &o.Ignore,
		Within: &o.Within, Exclude: &o.Exclude, IncludeText: &o.IncludeText, ExcludeText: &o.ExcludeText,
		IncludeURL: &o.IncludeURL, ExcludeURL: &o.ExcludeURL, BurstDetection: &form.BurstDetection, Articles: &form.Articles,
		Render: &form.Render, WaitFor: &form.WaitFor}
	allow := watch.SplitRenderAllow(form.RenderAllow)
	edit.RenderAllow = &allow
	d, intervalErr := formInterval(form.Interval, 0)
	if intervalErr == nil && form.Interval == "" {
		intervalErr = &watch.RefusedError{Field: "interval", Err: errors.New("give the time between checks, like 5m, 1h30m or 1d")}
	}
	if intervalErr == nil {
		edit.Interval = &d
	}
	// The form shows every header, secrets as (set), so it sends them
	// whole: a line deleted removes its header.
	headers, headersErr := formHeaders(form.Headers)
	if headersErr == nil {
		edit.Headers, edit.ClearHeaders = &headers, true
	}
	edit.Proxy = &form.Proxy
	intervalErr = watch.JoinRefused(intervalErr, headersErr)
	sources := form.sources()
	edit.Sources = &sources
	before, err := s.deps.Pages.Page(r.Context(), id)
	if err == nil {
		var after watch.Page
		// A bad interval does not stop the other fields' checks.
		if after, err = s.editPage(r, id, edit); err == nil && intervalErr == nil {
			http.Redirect(w, r, flashURL(fmt.Sprintf("/pages/%d", id), savedFlash(before, after), id), http.StatusSeeOther)
			return
		}
		err = watch.JoinRefused(intervalErr, err)
	}
	if errors.Is(err, watch.ErrPageNotFound) {
		s.missingPage(w, r, id)
		return
	}
	if !form.refuse(err) {
		s.fail(w, r, err)
		return
	}
	form.URL, form.Enabled, form.Open = before.BaseURL, before.Enabled, true
	s.showPage(w, r, http.StatusUnprocessableEntity, before, form)
}

// savedFlash says what an edit did, and, as watchctl set does, that the
// page's next check re-baselines silently when the edit changed what the
// page admits.
func savedFlash(before, after watch.Page) string {
	if after.RebaselinePending && !reflect.DeepEqual(before.Options, after.Options) {
		return flashSavedRebaseline
	}
	return flashSaved
}

func (s *Server) uiSetEnabled(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return
	}
	enabled := r.PostFormValue("enabled") == "true"
	if _, err := s.deps.Writer.EditPage(r.Context(), id, watch.PageEdit{Enabled: &enabled}); errors.Is(err, watch.ErrPageNotFound) {
		s.missingPage(w, r, id)
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	done := flashPaused
	if enabled {
		done = flashResumed
	}
	http.Redirect(w, r, flashURL(fmt.Sprintf("/pages/%d", id), done, id), http.StatusSeeOther)
}

func (s *Server) uiCheckNow(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return
	}
	_, err := s.deps.Writer.CheckNow(r.Context(), id)
	switch {
	case errors.Is(err, watch.ErrPageNotFound):
		s.missingPage(w, r, id)
		return
	case errors.Is(err, watch.ErrPagePaused):
		s.errorPage(w, r, http.StatusConflict, fmt.Sprintf("Page %d is paused: resume it to check it.", id))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	back := localPath(r.PostFormValue("back"), fmt.Sprintf("/pages/%d", id))
	http.Redirect(w, r, withFlash(back, flashChecking, id), http.StatusSeeOther)
}

type confirmView struct {
	view
	Page    watch.Page
	PurgeAt time.Time
	Back    string
}

// uiConfirmDelete asks before a page goes to the trash: one stray click
// must not take a page out of every list.
func (s *Server) uiConfirmDelete(w http.ResponseWriter, r *http.Request) {
	p, ok := s.pathWatchedPage(w, r)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "confirm", confirmView{view: s.viewOf(r, "Remove "+p.DisplayName()+"?", "pages"), Page: p,
		PurgeAt: time.Now().Add(watch.TrashRetention), Back: fmt.Sprintf("/pages/%d", p.ID)})
}

func (s *Server) uiDeletePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return
	}
	if _, err := s.deps.Writer.TrashPage(r.Context(), id); errors.Is(err, watch.ErrPageNotFound) {
		s.missingPage(w, r, id)
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, flashURL("/pages", flashPageTrashed, id), http.StatusSeeOther)
}

type trashView struct {
	view
	Pages []watch.Page
}

func (s *Server) uiTrash(w http.ResponseWriter, r *http.Request) {
	pages, err := s.deps.Pages.TrashedPages(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "trash", trashView{view: s.viewOf(r, "Trash", "pages"), Pages: pages})
}

func (s *Server) uiRestorePage(w http.ResponseWriter, r *http.Request) {
	id, ok := s.pathPage(w, r)
	if !ok {
		return
	}
	if _, err := s.deps.Writer.RestorePage(r.Context(), id); errors.Is(err, watch.ErrPageNotFound) {
		s.pageNotFound(w, r, fmt.Sprintf("The trash holds no page %d: it was restored already, or deleted for good after 7 days.", id))
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, flashURL(fmt.Sprintf("/pages/%d", id), flashRestored, id), http.StatusSeeOther)
}

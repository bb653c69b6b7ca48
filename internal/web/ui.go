package web

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// sessionCookie keeps the token a person signed in with.
const sessionCookie = "pw_session"

// sessionMaxAge is how long a sign-in lasts.
const sessionMaxAge = 30 * 24 * time.Hour

var templateNames = []string{"pages", "page", "updates", "signin", "notifications"}

func parseTemplates() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "never"
			}
			return t.UTC().Format("2006-01-02 15:04 UTC")
		},
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"status": pageStatus,
		"join":   strings.Join,
		"lines":  func(s []string) string { return strings.Join(s, "\n") },
		"field": func(name, label, example, value, err string) listField {
			return listField{Name: name, Label: label, Example: example, Value: value, Error: err}
		},
	}
	out := map[string]*template.Template{}
	for _, name := range templateNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/forms.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// view is what every page's layout needs.
type view struct {
	Title    string
	SignedIn bool
	Token    string // the signed-in token's name
	CanWrite bool
	Flash    string
}

func (s *Server) viewOf(r *http.Request, title string) view {
	tok, ok := tokenOf(r)
	return view{Title: title, SignedIn: ok, Token: tok.Name, CanWrite: ok && tok.Write, Flash: flashOf(r)}
}

// render executes a template into a buffer first, so a failure shows an
// error page instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.log.Error("render page", "template", name, "err", err)
		http.Error(w, "the page could not be shown; the server's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageForm is the add and edit form's content, as typed, and what was
// wrong with it.
type pageForm struct {
	URL, Name, Tags, Interval, Ignore string
	// Regions and keyword rules, one selector or pattern a line.
	Within, Exclude, IncludeText, ExcludeText, IncludeURL, ExcludeURL string
	SameSite, Enabled, BurstDetection                                 bool
	// Errors holds each refusal by watch.RefusedError's Field (url,
	// interval, name, tags, ignore, within, exclude, includeText,
	// excludeText, includeUrl, excludeUrl, options), shown beside it.
	Errors map[string]string
}

// listField is one textarea of a page's option lists, as the "listfield"
// template shows it.
type listField struct {
	Name, Label, Example, Value, Error string
}

// formSettings reads the settings the add and edit forms share: the form
// as typed, to show again beside a refusal, and the link options it asks
// for. An unchecked box is absent from a form, so same-site and burst
// detection are off unless sent.
func formSettings(r *http.Request) (pageForm, watch.LinkOptions) {
	f := pageForm{
		Name: r.PostFormValue("name"), Tags: r.PostFormValue("tags"), Interval: strings.TrimSpace(r.PostFormValue("interval")),
		Ignore: r.PostFormValue("ignore"), Within: r.PostFormValue("within"), Exclude: r.PostFormValue("exclude"),
		IncludeText: r.PostFormValue("include_text"), ExcludeText: r.PostFormValue("exclude_text"),
		IncludeURL: r.PostFormValue("include_url"), ExcludeURL: r.PostFormValue("exclude_url"),
		SameSite: r.PostFormValue("same_site") == "on", BurstDetection: r.PostFormValue("burst_detection") == "on",
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

type pagesView struct {
	view
	Pages []watch.Page
	Dead  []DeadQueue
	Form  pageForm
}

func (s *Server) uiPages(w http.ResponseWriter, r *http.Request) {
	s.showPages(w, r, http.StatusOK, pageForm{Interval: watch.FormatDuration(watch.DefaultInterval), Enabled: true, BurstDetection: true})
}

func (s *Server) showPages(w http.ResponseWriter, r *http.Request, status int, form pageForm) {
	pages, err := s.deps.Pages.Pages(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := pagesView{view: s.viewOf(r, "Watched pages"), Pages: pages, Form: form}
	if s.deps.Dead != nil {
		v.Dead, err = s.deps.Dead.DeadLetters(r.Context())
		if err != nil {
			v.Dead = []DeadQueue{{Queue: "dead letters", Error: err.Error()}}
		}
	}
	s.render(w, r, status, "pages", v)
}

// formPage reads the add form into a page to register.
func formPage(r *http.Request) (pageForm, watch.PageSpec, error) {
	f, options := formSettings(r)
	f.URL, f.Enabled = strings.TrimSpace(r.PostFormValue("url")), true
	p := watch.PageSpec{URL: f.URL, Name: f.Name, Tags: splitTags(f.Tags), Options: options, BurstDetectionOff: !f.BurstDetection}
	var err error
	p.Interval, err = formInterval(f.Interval, watch.DefaultInterval)
	return f, p, err
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

// fieldOf names the form field a refusal belongs beside.
func fieldOf(err error) (string, bool) {
	var refused *watch.RefusedError
	if errors.As(err, &refused) {
		return refused.Field, true
	}
	if errors.Is(err, watch.ErrDuplicatePage) {
		return "url", true
	}
	return "", false
}

func (s *Server) uiAddPage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	form, p, err := formPage(r)
	if err == nil {
		p, err = s.cfg.Policy.CheckPage(r.Context(), p)
		if err == nil {
			var page watch.Page
			page, err = s.deps.Writer.CreatePage(r.Context(), p)
			if err == nil {
				http.Redirect(w, r, flashURL("/", flashWatching, page.ID), http.StatusSeeOther)
				return
			}
		}
	}
	field, ok := fieldOf(err)
	if !ok {
		s.fail(w, r, err)
		return
	}
	form.Errors = map[string]string{field: err.Error()}
	s.showPages(w, r, http.StatusUnprocessableEntity, form)
}

type pageView struct {
	view
	Page    watch.Page
	Updates []watch.Update
	Next    string
	Form    pageForm
}

func (s *Server) uiPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	p, err := s.deps.Pages.Page(r.Context(), id)
	if errors.Is(err, watch.ErrPageNotFound) {
		http.NotFound(w, r)
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	s.showPage(w, r, http.StatusOK, p, editFormOf(p))
}

func editFormOf(p watch.Page) pageForm {
	o := p.Options
	lines := func(l []string) string { return strings.Join(l, "\n") }
	return pageForm{URL: p.BaseURL, Name: p.Name, Tags: strings.Join(p.Tags, " "), Interval: watch.FormatDuration(p.Interval),
		Ignore: lines(o.Ignore), Within: lines(o.Within), Exclude: lines(o.Exclude), IncludeText: lines(o.IncludeText),
		ExcludeText: lines(o.ExcludeText), IncludeURL: lines(o.IncludeURL), ExcludeURL: lines(o.ExcludeURL),
		SameSite: o.SameSiteOnly, Enabled: p.Enabled, BurstDetection: p.BurstDetection}
}

func (s *Server) showPage(w http.ResponseWriter, r *http.Request, status int, p watch.Page, form pageForm) {
	f := watch.UpdateFilter{PageID: p.ID, Limit: 100}
	if c := r.URL.Query().Get("cursor"); c != "" {
		f.After, _ = decodeCursor(c) // a bad cursor starts at the newest
	}
	updates, err := s.deps.Updates.QueryUpdates(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := pageView{view: s.viewOf(r, p.DisplayName()), Page: p, Updates: updates, Form: form}
	if len(updates) == f.Limit {
		v.Next = encodeCursor(watch.CursorOf(updates[len(updates)-1]))
	}
	s.render(w, r, status, "page", v)
}

func (s *Server) uiEditPage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	form, o := formSettings(r)
	// The form shows every setting, so it sends each list whole: an
	// emptied textarea empties its list.
	tags := splitTags(form.Tags)
	edit := watch.PageEdit{Name: &form.Name, Tags: &tags, SameSiteOnly: &o.SameSiteOnly, Ignore: &o.Ignore,
		Within: &o.Within, Exclude: &o.Exclude, IncludeText: &o.IncludeText, ExcludeText: &o.ExcludeText,
		IncludeURL: &o.IncludeURL, ExcludeURL: &o.ExcludeURL, BurstDetection: &form.BurstDetection}
	var before watch.Page
	d, err := formInterval(form.Interval, 0)
	if err == nil && form.Interval == "" {
		err = &watch.RefusedError{Field: "interval", Err: errors.New("give the time between checks, like 5m, 1h30m or 1d")}
	}
	if err == nil {
		edit.Interval = &d
		before, err = s.deps.Pages.Page(r.Context(), id)
	}
	if err == nil {
		var after watch.Page
		if after, err = s.editPage(r, id, edit); err == nil {
			http.Redirect(w, r, flashURL(fmt.Sprintf("/pages/%d", id), savedFlash(before, after), id), http.StatusSeeOther)
			return
		}
	}
	if errors.Is(err, watch.ErrPageNotFound) {
		http.NotFound(w, r)
		return
	}
	field, ok := fieldOf(err)
	if !ok {
		s.fail(w, r, err)
		return
	}
	p, perr2 := s.deps.Pages.Page(r.Context(), id)
	if perr2 != nil {
		s.fail(w, r, perr2)
		return
	}
	form.URL, form.Enabled = p.BaseURL, p.Enabled
	form.Errors = map[string]string{field: err.Error()}
	s.showPage(w, r, http.StatusUnprocessableEntity, p, form)
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
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	enabled := r.PostFormValue("enabled") == "true"
	if _, err := s.deps.Writer.EditPage(r.Context(), id, watch.PageEdit{Enabled: &enabled}); errors.Is(err, watch.ErrPageNotFound) {
		http.NotFound(w, r)
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

func (s *Server) uiDeletePage(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return
	}
	if err := s.deps.Writer.RemovePage(r.Context(), id); errors.Is(err, watch.ErrPageNotFound) {
		http.NotFound(w, r)
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	http.Redirect(w, r, flashURL("/", flashPageRemoved, id), http.StatusSeeOther)
}

type updatesView struct {
	view
	Query   string
	Tag     string
	Updates []watch.Update
	Next    string
	Error   string
}

func (s *Server) uiUpdates(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := updatesView{view: s.viewOf(r, "Newest updates"), Query: q.Get("q"), Tag: q.Get("tag")}
	f, err := parseFilter(q)
	if err != nil {
		v.Error = err.Error()
		s.render(w, r, http.StatusBadRequest, "updates", v)
		return
	}
	if v.Updates, err = s.deps.Updates.QueryUpdates(r.Context(), f); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(v.Updates) == f.Limit {
		next := url.Values{"cursor": {encodeCursor(watch.CursorOf(v.Updates[len(v.Updates)-1]))}}
		if v.Query != "" {
			next.Set("q", v.Query)
		}
		if v.Tag != "" {
			next.Set("tag", v.Tag)
		}
		v.Next = "/updates?" + next.Encode()
	}
	s.render(w, r, http.StatusOK, "updates", v)
}

type signinView struct {
	view
	Error string
}

func (s *Server) uiSignInForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", signinView{view: s.viewOf(r, "Sign in")})
}

func (s *Server) uiSignIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	secret := strings.TrimSpace(r.PostFormValue("token"))
	if secret == "" {
		s.render(w, r, http.StatusUnprocessableEntity, "signin", signinView{view: s.viewOf(r, "Sign in"), Error: "paste a token: `watchctl token create NAME` makes one"})
		return
	}
	tok, err := s.deps.Tokens.VerifyToken(r.Context(), secret)
	if errors.Is(err, watch.ErrTokenNotFound) {
		s.render(w, r, http.StatusUnauthorized, "signin", signinView{view: s.viewOf(r, "Sign in"), Error: "that token is not valid (revoked, or mistyped)"})
		return
	} else if err != nil {
		s.fail(w, r, err)
		return
	}
	// The cookie holds a session's random id, never the token: signing out
	// ends the session on the server, and the token stays the reader's.
	id := rand.Text()
	if err := s.deps.Sessions.CreateSession(r.Context(), tok.Name, id, sessionMaxAge); err != nil {
		s.fail(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: int(sessionMaxAge.Seconds()),
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) uiSignOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := s.deps.Sessions.EndSession(r.Context(), c.Value); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	clearSession(w, s.secureCookies(r))
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// clearSession tells the browser to drop its session cookie.
func clearSession(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
}

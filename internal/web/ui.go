package web

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// sessionCookie keeps the token a person signed in with.
const sessionCookie = "pw_session"

// sessionMaxAge is how long a sign-in lasts.
const sessionMaxAge = 30 * 24 * time.Hour

var templateNames = []string{"river", "pages", "page", "confirm", "trash", "feeds", "signin", "notifications", "error", "discover"}

func parseTemplates() (map[string]*template.Template, error) {
	paths, err := assetPaths()
	if err != nil {
		return nil, err
	}
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			if p, ok := paths[name]; ok {
				return p, nil
			}
			return "", fmt.Errorf("no static file %s", name)
		},
		"ago":         func(t time.Time) string { return relativeTime(t, time.Now()) },
		"exact":       exactTime,
		"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"status":      pageStatus,
		"sourceState": sourceState,
		"join":        strings.Join,
		"every":       watch.FormatDuration,
		"spark":       newSparkline,
		"plural":      plural,
		"dict":        dict,
		// published is when an article says it appeared; zero when it
		// states no time that parses.
		"published": func(a *watch.Article) time.Time {
			t, _ := a.Published()
			return t
		},
		"articleNote": articleNote,
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

// assetPaths are the addresses of the static files, each with a digest of
// its content, so that a browser keeps them long and still fetches one
// anew after an upgrade changed it.
func assetPaths() (map[string]string, error) {
	files, err := fs.ReadDir(assets, "static")
	if err != nil {
		return nil, fmt.Errorf("static files: %w", err)
	}
	paths := map[string]string{}
	for _, f := range files {
		body, err := assets.ReadFile("static/" + f.Name())
		if err != nil {
			return nil, fmt.Errorf("static file %s: %w", f.Name(), err)
		}
		sum := sha256.Sum256(body)
		paths[f.Name()] = "/static/" + f.Name() + "?v=" + hex.EncodeToString(sum[:6])
	}
	return paths, nil
}

// relativeTime says when t is from now as people say it ("4 min ago", "in
// 2 h"); static/app.js says the same in the browser and keeps it current.
func relativeTime(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var span string
	switch {
	case d < 45*time.Second:
		if future {
			return "in a moment"
		}
		return "just now"
	case d < 90*time.Minute:
		span = fmt.Sprintf("%d min", max(1, int((d+30*time.Second)/time.Minute)))
	case d < 36*time.Hour:
		span = fmt.Sprintf("%d h", int((d+30*time.Minute)/time.Hour))
	case d < 14*24*time.Hour:
		span = fmt.Sprintf("%d days", int((d+12*time.Hour)/(24*time.Hour)))
	default:
		return "on " + t.UTC().Format("2 Jan 2006")
	}
	if future {
		return "in " + span
	}
	return span + " ago"
}

// exactTime is t to the minute, in UTC; static/app.js shows it in the
// reader's own time zone.
func exactTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("Mon 2 Jan 2006, 15:04 UTC")
}

// dict makes a map of its key and value pairs, to hand a template more
// than one value.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict wants pairs of key and value")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// view is what every page's layout needs.
type view struct {
	Title    string
	SignedIn bool
	Token    string // the signed-in token's name
	CanWrite bool
	Flash    string
	// Section is the navigation entry the page belongs to: river, pages,
	// feeds, notifications.
	Section string
}

func (s *Server) viewOf(r *http.Request, title, section string) view {
	tok, ok := tokenOf(r)
	return view{Title: title, SignedIn: ok, Token: tok.Name, CanWrite: ok && tok.Write, Flash: flashOf(r), Section: section}
}

// render executes a template into a buffer first, so a failure shows an
// error page instead of half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.log.Error("render page", "template", name, "err", err)
		if name != "error" {
			s.errorPage(w, r, http.StatusInternalServerError, "The page could not be shown; the server's log says why.")
			return
		}
		http.Error(w, "the page could not be shown; the server's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

type errorView struct {
	view
	Status int
	Detail string
}

// errorPage answers a request of the web page that went wrong with a page
// in the site's layout, its navigation included.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, detail string) {
	v := errorView{view: s.viewOf(r, http.StatusText(status), ""), Status: status, Detail: detail}
	s.render(w, r, status, "error", v)
}

// isPageRequest says whether r is for the web page (answered in HTML)
// rather than the API, a feed or an operator's endpoint (problem details).
func isPageRequest(r *http.Request) bool {
	p := r.URL.Path
	for _, prefix := range []string{"/api/", "/feeds/", "/static/"} {
		if strings.HasPrefix(p, prefix) {
			return false
		}
	}
	return p != "/healthz" && p != "/metrics"
}

// pageNotFound answers a web page request for something that does not
// exist, saying what.
func (s *Server) pageNotFound(w http.ResponseWriter, r *http.Request, what string) {
	s.errorPage(w, r, http.StatusNotFound, what)
}

// pathPage reads the {id} of a web page path; a bad one is answered 404.
func (s *Server) pathPage(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.pageNotFound(w, r, fmt.Sprintf("%q is not a page number.", r.PathValue("id")))
		return 0, false
	}
	return id, true
}

// localPath returns back when it is a path of this site, else def: a form
// says where to return to, and must not be able to send a person away.
func localPath(back, def string) string {
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		return def
	}
	return back
}

type signinView struct {
	view
	Error string
}

func (s *Server) uiSignInForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signin", signinView{view: s.viewOf(r, "Sign in", "")})
}

func (s *Server) uiSignIn(w http.ResponseWriter, r *http.Request) {
	secret := strings.TrimSpace(r.PostFormValue("token"))
	if secret == "" {
		s.render(w, r, http.StatusUnprocessableEntity, "signin", signinView{view: s.viewOf(r, "Sign in", ""), Error: "paste a token: `watchctl token create NAME` makes one"})
		return
	}
	tok, err := s.deps.Tokens.VerifyToken(r.Context(), secret)
	if errors.Is(err, watch.ErrTokenNotFound) {
		s.render(w, r, http.StatusUnauthorized, "signin", signinView{view: s.viewOf(r, "Sign in", ""), Error: "that token is not valid (revoked, or mistyped)"})
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

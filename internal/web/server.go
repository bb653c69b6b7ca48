// Package web is portalwatch's face to people: the HTTP API under /api/v1,
// Atom, RSS and JSON feeds under /feeds, and a server-rendered web page,
// all on one net/http server beside /healthz and /metrics.
//
// It reads and writes PostgreSQL through the small interfaces below (the
// store satisfies them) and registers pages only through
// internal/registration, the gate watchctl uses, so no entry point is
// weaker than another. Every route is declared in one table (routes).
//
// Access: reads need a token (any) unless Config.PublicRead; writes need a
// write token. The API takes "Authorization: Bearer <token>"; feeds also take
// "?token=" (feed readers cannot send headers); the web page keeps the
// token a person signed in with in an HttpOnly, SameSite=Strict cookie.
// Unsafe cross-origin requests are refused (http.CrossOriginProtection).
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// PageReader reads registered pages.
type PageReader interface {
	Pages(ctx context.Context) ([]watch.Page, error)
	Page(ctx context.Context, id int64) (watch.Page, error)
}

// PageWriter registers, changes and removes pages. Its input has passed
// registration already.
type PageWriter interface {
	CreatePage(ctx context.Context, p watch.PageSpec) (watch.Page, error)
	EditPage(ctx context.Context, id int64, e watch.PageEdit) (watch.Page, error)
	RemovePage(ctx context.Context, id int64) error
}

// PageImporter is what an import needs of the store, none of which holds an
// import whole: which of its URLs are registered, the registration of its
// pages one at a time in one transaction (all or none; a URL registered
// meanwhile wraps watch.ErrDuplicatePage), and the new pages read back a
// batch at a time for the answer.
type PageImporter interface {
	WatchedAmong(ctx context.Context, urls []string) ([]string, error)
	ImportPages(ctx context.Context, pages iter.Seq[watch.PageSpec]) ([]int64, error)
	EachPage(ctx context.Context, ids []int64, fn func(watch.Page) error) error
}

// UpdateReader reads updates and the stamps that identify feeds.
type UpdateReader interface {
	QueryUpdates(ctx context.Context, f watch.UpdateFilter) ([]watch.Update, error)
	FeedStamp(ctx context.Context, scope watch.FeedScope) (watch.FeedStamp, error)
}

// TokenVerifier finds the token of a secret, or returns
// watch.ErrTokenNotFound.
type TokenVerifier interface {
	VerifyToken(ctx context.Context, secret string) (watch.Token, error)
}

// DeadLetterCounter reports the dead-letter queues.
type DeadLetterCounter interface {
	DeadLetters(ctx context.Context) ([]DeadQueue, error)
}

// DeadQueue is one dead-letter queue: how many messages it holds and why
// they died (from a sample of the first ones).
type DeadQueue struct {
	Queue   string        `json:"queue"`
	Count   int           `json:"count"`
	Reasons []ReasonCount `json:"reasons"`
	// Error says why the queue could not be read (the broker is down, say).
	Error string `json:"error,omitempty"`
}

// ReasonCount is how many sampled messages died for one reason.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Config holds what the server needs besides its adapters.
type Config struct {
	// PublicRead lets anyone read pages, updates, removals and feeds
	// without a token; writes and subscriptions always need one.
	PublicRead bool `env:"PORTALWATCH_WEB_PUBLIC_READ"`
	// Policy is what registration allows (PORTALWATCH_ALLOW_PRIVATE).
	Policy registration.Policy
	// Health and Metrics serve /healthz and /metrics; nil answers 404.
	Health, Metrics http.Handler
	// Registerer, when set, gets the request metrics:
	// portalwatch_web_requests_total{route,code} and
	// portalwatch_web_request_duration_seconds{route}.
	Registerer prometheus.Registerer
}

// Deps are the adapters the server reads and writes through.
type Deps struct {
	Pages  PageReader
	Writer PageWriter
	// Importer registers imported lists.
	Importer PageImporter
	Updates  UpdateReader
	Tokens   TokenVerifier
	Dead     DeadLetterCounter
	// Removals reads the links removed from their pages.
	Removals RemovalReader
	// Subscriptions reads and writes notification subscriptions.
	Subscriptions SubscriptionStore
	// Tester sends test messages; nil answers 503 to a test.
	Tester TestSender
}

// Server serves the API, the feeds and the web page. It is safe for
// concurrent use.
type Server struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	pages    map[string]*template.Template
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

//go:embed templates/*.html static/* openapi.json
var assets embed.FS

// New returns a Server. It fails if the embedded templates do not parse or
// the metrics are already registered with cfg.Registerer.
func New(cfg Config, deps Deps, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, deps: deps, log: log}
	var err error
	if s.pages, err = parseTemplates(); err != nil {
		return nil, err
	}
	if cfg.Registerer != nil {
		s.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_web_requests_total", Help: "Requests answered, by route and status code.",
		}, []string{"route", "code"})
		s.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "portalwatch_web_request_duration_seconds", Help: "Time to answer a request, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"})
		for _, c := range []prometheus.Collector{s.requests, s.duration} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("register web metrics: %w", err)
			}
		}
	}
	return s, nil
}

// access says who may use a route.
type access int

const (
	open access = iota // anyone: health, metrics, the OpenAPI document, sign-in
	read               // any token, or anyone when PublicRead
	// private is a read of what names people or carries their secrets
	// (webhook URLs often hold a receiver's token, e-mail addresses):
	// any token, even when PublicRead.
	private
	write // a write token
)

// route is one line of the route table.
type route struct {
	method, pattern string
	access          access
	handler         func(http.ResponseWriter, *http.Request)
	// api routes answer errors with problem details and are described in
	// openapi.json; the others are the web page's, feeds, and operations.
	api bool
}

// routes is every route the server answers, in one place.
func (s *Server) routes() []route {
	return []route{
		{"GET", "/healthz", open, s.health, false},
		{"GET", "/metrics", open, s.metrics, false},
		{"GET", "/api/v1/openapi.json", open, s.openAPI, true},

		{"GET", "/api/v1/pages", read, s.apiListPages, true},
		{"POST", "/api/v1/pages", write, s.apiCreatePage, true},
		{"GET", "/api/v1/pages/{id}", read, s.apiGetPage, true},
		{"PATCH", "/api/v1/pages/{id}", write, s.apiEditPage, true},
		{"DELETE", "/api/v1/pages/{id}", write, s.apiDeletePage, true},
		{"POST", "/api/v1/pages/import", write, s.apiImport, true},
		{"GET", "/api/v1/pages/export", read, s.apiExport, true},
		{"GET", "/api/v1/updates", read, s.apiUpdates, true},
		{"GET", "/api/v1/dead-letters", read, s.apiDeadLetters, true},
		{"GET", "/api/v1/removals", read, s.apiRemovals, true},
		{"GET", "/api/v1/subscriptions", private, s.apiListSubscriptions, true},
		{"POST", "/api/v1/subscriptions", write, s.apiCreateSubscription, true},
		{"DELETE", "/api/v1/subscriptions/{id}", write, s.apiDeleteSubscription, true},
		{"GET", "/api/v1/subscriptions/{id}/deliveries", private, s.apiDeliveries, true},
		{"POST", "/api/v1/subscriptions/{id}/test", write, s.apiTestSubscription, true},
		{"POST", "/api/v1/subscriptions/{id}/resume", write, s.apiResumeSubscription, true},

		{"GET", "/feeds/all.atom", read, s.feedAll, false},
		{"GET", "/feeds/all.rss", read, s.feedAll, false},
		{"GET", "/feeds/all.json", read, s.feedAll, false},
		{"GET", "/feeds/pages/{file}", read, s.feedPage, false},
		{"GET", "/feeds/tags/{file}", read, s.feedTag, false},

		{"GET", "/{$}", read, s.uiPages, false},
		{"POST", "/pages", write, s.uiAddPage, false},
		{"GET", "/pages/{id}", read, s.uiPage, false},
		{"POST", "/pages/{id}", write, s.uiEditPage, false},
		{"POST", "/pages/{id}/enabled", write, s.uiSetEnabled, false},
		{"POST", "/pages/{id}/delete", write, s.uiDeletePage, false},
		{"GET", "/updates", read, s.uiUpdates, false},
		{"GET", "/notifications", private, s.uiNotifications, false},
		{"POST", "/notifications", write, s.uiAddSubscription, false},
		{"POST", "/notifications/{id}/{action}", write, s.uiSubscriptionAction, false},
		{"GET", "/signin", open, s.uiSignInForm, false},
		{"POST", "/signin", open, s.uiSignIn, false},
		{"POST", "/signout", open, s.uiSignOut, false},
		{"GET", "/static/{file}", open, s.static, false},
	}
}

// Handler returns the server's routes behind its cross-origin protection.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.pattern, s.instrument(rt, s.guard(rt)))
	}
	// The catch-all below would answer every method the table lacks with a
	// 404; a path the API has under other methods deserves 405 and Allow.
	known := http.NewServeMux()
	for _, rt := range s.routes() {
		known.Handle(rt.method+" "+rt.pattern, http.NotFoundHandler())
	}
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(known, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.problem(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, ", "))
			return
		}
		s.problem(w, r, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not part of the API (see /api/v1/openapi.json)")
	})
	// Forms post same-origin; a cross-site POST (a CSRF attempt) is
	// refused before any handler runs. API clients send no browser
	// headers and pass.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, http.StatusForbidden, "this form can only be sent from the portalwatch page itself")
	}))
	return securityHeaders(cop.Handler(mux))
}

// allowedMethods returns the methods known routes r's path under.
func allowedMethods(known *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := known.Handler(probe); pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

// instrument counts and times h's requests under rt's pattern.
func (s *Server) instrument(rt route, h http.Handler) http.Handler {
	if s.requests == nil {
		return h
	}
	label := prometheus.Labels{"route": rt.method + " " + rt.pattern}
	return promhttp.InstrumentHandlerCounter(s.requests.MustCurryWith(label),
		promhttp.InstrumentHandlerDuration(s.duration.MustCurryWith(label), h))
}

// securityHeaders sets what every response carries: a strict
// Content-Security-Policy (no script, styles from this server only), and no
// framing or sniffing.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

type ctxKey struct{}

// tokenOf returns the token the request was let in with; zero when public.
func tokenOf(r *http.Request) (watch.Token, bool) {
	t, ok := r.Context().Value(ctxKey{}).(watch.Token)
	return t, ok
}

// guard lets a request through to rt's handler only with the right token.
func (s *Server) guard(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := s.credential(r, rt)
		var tok watch.Token
		if secret != "" {
			var err error
			tok, err = s.deps.Tokens.VerifyToken(r.Context(), secret)
			switch {
			case errors.Is(err, watch.ErrTokenNotFound):
				if rt.access == open {
					break // a stale cookie does not lock anyone out of sign-in
				}
				s.denied(w, r, rt, http.StatusUnauthorized, "the token is not valid (revoked, or mistyped)")
				return
			case err != nil:
				s.fail(w, r, fmt.Errorf("verify token: %w", err))
				return
			default:
				r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, tok))
			}
		}
		switch {
		case rt.access == read && secret == "" && !s.cfg.PublicRead:
			s.denied(w, r, rt, http.StatusUnauthorized, "reading needs a token: send \"Authorization: Bearer <token>\" (feeds also take ?token=); `watchctl token create NAME` makes one")
			return
		case rt.access == private && secret == "":
			s.denied(w, r, rt, http.StatusUnauthorized, "subscriptions name their receivers: reading them needs a token even when reads are public; send \"Authorization: Bearer <token>\"")
			return
		case rt.access == write && secret == "":
			s.denied(w, r, rt, http.StatusUnauthorized, "changes need a write token: send \"Authorization: Bearer <token>\"; `watchctl token create NAME --write` makes one")
			return
		case rt.access == write && !tok.Write:
			s.denied(w, r, rt, http.StatusForbidden, fmt.Sprintf("token %q may only read; changes need a token made with --write", tok.Name))
			return
		}
		rt.handler(w, r)
	})
}

// credential finds the request's token: the Authorization header always,
// ?token= on feeds, the session cookie on the web page and feeds.
func (s *Server) credential(r *http.Request, rt route) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t)
		}
		return h // not Bearer: verified as it is, and refused
	}
	isFeed := strings.HasPrefix(rt.pattern, "/feeds/")
	if isFeed {
		if t := r.URL.Query().Get("token"); t != "" {
			return t
		}
	}
	if !rt.api || isFeed {
		if c, err := r.Cookie(sessionCookie); err == nil {
			return c.Value
		}
	}
	return ""
}

// denied answers a request the guard refuses: problem details for the API
// and feeds, the sign-in page for the web page.
func (s *Server) denied(w http.ResponseWriter, r *http.Request, rt route, status int, detail string) {
	if rt.api || strings.HasPrefix(rt.pattern, "/feeds/") {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="portalwatch"`)
		}
		s.problem(w, r, status, detail)
		return
	}
	if r.Method == http.MethodGet && status == http.StatusUnauthorized {
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return
	}
	s.render(w, r, status, "signin", signinView{view: s.viewOf(r, "Sign in"), Error: detail})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Health == nil {
		http.NotFound(w, r)
		return
	}
	s.cfg.Health.ServeHTTP(w, r)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		http.NotFound(w, r)
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := assets.ReadFile("openapi.json")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	body, err := assets.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(name, ".css") {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "max-age=3600")
	w.Write(body)
}

// Serve serves h on addr until ctx ends, then stops taking connections and
// waits up to drain for requests in flight.
func Serve(ctx context.Context, addr string, h http.Handler, drain time.Duration, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (PORTALWATCH_WEB_ADDR): %w", addr, err)
	}
	return ServeListener(ctx, ln, h, drain, log)
}

// ServeListener is Serve on a listener the caller opened.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler, drain time.Duration, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("serving the API, feeds and web page", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		srv.Close()
		log.Warn("requests cut off at the end of the drain", "err", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web server: %w", err)
	}
	return nil
}

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
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// PageReader reads watched pages (Pages, Page, QueryPages leave the trash
// out) and the trash.
type PageReader interface {
	Pages(ctx context.Context) ([]watch.Page, error)
	Page(ctx context.Context, id int64) (watch.Page, error)
	QueryPages(ctx context.Context, q watch.PageQuery) ([]watch.Page, error)
	CountPages(ctx context.Context) (watch.PageCounts, error)
	TrashedPages(ctx context.Context) ([]watch.Page, error)
	// Tags returns the tags of the watched pages, sorted.
	Tags(ctx context.Context) ([]string, error)
	// Sparklines returns the new links of each page of ids per hour of
	// the last hours, oldest first; a page without any is absent.
	Sparklines(ctx context.Context, ids []int64, hours int) (map[int64][]int, error)
}

// PageWriter registers, changes, trashes and restores pages. Its input has
// passed registration already. Every delete goes through the trash.
type PageWriter interface {
	// CreatePage restores a page of the trash with the same URL.
	CreatePage(ctx context.Context, p watch.PageSpec) (watch.Page, error)
	EditPage(ctx context.Context, id int64, e watch.PageEdit) (watch.Page, error)
	TrashPage(ctx context.Context, id int64) (watch.Page, error)
	RestorePage(ctx context.Context, id int64) (watch.Page, error)
	// CheckNow makes a page due now; watch.ErrPagePaused for a paused one.
	CheckNow(ctx context.Context, id int64) (watch.Page, error)
}

// ReadingStore keeps what each reader has read: a reader is the token a
// person signed in with, and a mark is the newest update they marked read.
type ReadingStore interface {
	ReadMark(ctx context.Context, token string) (watch.Cursor, bool, error)
	MarkRead(ctx context.Context, token string, mark watch.Cursor) error
	CountUnread(ctx context.Context, mark watch.Cursor, max int) (int, error)
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

// UpdateReader reads updates, the stamps that identify feeds, and the
// articles updates link.
type UpdateReader interface {
	QueryUpdates(ctx context.Context, f watch.UpdateFilter) ([]watch.Update, error)
	FeedStamp(ctx context.Context, scope watch.FeedScope) (watch.FeedStamp, error)
	// Article returns an article with its sightings, or
	// watch.ErrArticleNotFound.
	Article(ctx context.Context, id int64) (watch.ArticleSightings, error)
}

// TokenStore finds the token of a secret, or returns
// watch.ErrTokenNotFound, and makes the read tokens of feed readers.
type TokenStore interface {
	VerifyToken(ctx context.Context, secret string) (watch.Token, error)
	// CreateToken returns watch.ErrDuplicateToken for a name in use.
	CreateToken(ctx context.Context, name, secret string, write bool) (watch.Token, error)
}

// SessionStore keeps the web page's sign-ins: a session is a random id
// the cookie holds, bound to the token that signed in.
type SessionStore interface {
	CreateSession(ctx context.Context, tokenName, id string, ttl time.Duration) error
	// VerifySession returns the session's token, or watch.ErrTokenNotFound
	// for a session that does not exist, ended or expired.
	VerifySession(ctx context.Context, id string) (watch.Token, error)
	EndSession(ctx context.Context, id string) error
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
	// BaseURL is the address people reach the web program at, such as
	// https://watch.example.org (a TLS proxy in front): every absolute URL
	// the server writes (feeds' ids and links) starts with it, requests
	// for any other host are refused, and the session cookie is Secure
	// when it is https. Empty: the server answers to the listening
	// address and localhost only, and writes absolute URLs for the host a
	// request names.
	BaseURL string `env:"PORTALWATCH_WEB_BASE_URL"`
	// ListenAddr is the host:port the server listens on, which requests
	// may name besides BaseURL's host and localhost.
	ListenAddr string
	// QueryBudget and TransferBudget bound a request's time: a request
	// still running at the end of its budget is cut (its statements
	// cancelled) and answered 503, so a costly search cannot hold the
	// connections other readers wait for. TransferBudget is an import's
	// and an export's (up to 10,000 pages), QueryBudget every other
	// request's. Defaults DefaultQueryBudget (5s) and
	// DefaultTransferBudget (2 min).
	QueryBudget, TransferBudget time.Duration
	// Policy is what registration allows (PORTALWATCH_ALLOW_PRIVATE).
	Policy registration.Policy
	// Health and Metrics serve /healthz and /metrics; nil answers 404.
	Health, Metrics http.Handler
	// Registerer, when set, gets the request metrics:
	// portalwatch_web_requests_total{route,code} and
	// portalwatch_web_request_duration_seconds{route}.
	Registerer prometheus.Registerer
}

// Validate checks BaseURL: http or https, a host, no path, query or
// fragment (every route is at the root).
func (c Config) Validate() error {
	if c.BaseURL == "" {
		return nil
	}
	u, err := url.Parse(c.BaseURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return config.Invalid("BaseURL", c.BaseURL, "want an http:// or https:// URL with a host, such as https://watch.example.org")
	case strings.TrimSuffix(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return config.Invalid("BaseURL", c.BaseURL, "want a scheme and a host only: portalwatch serves every page at the root of its host")
	}
	return nil
}

// Deps are the adapters the server reads and writes through.
type Deps struct {
	Pages  PageReader
	Writer PageWriter
	// Importer registers imported lists.
	Importer PageImporter
	Updates  UpdateReader
	// Reading keeps each reader's unread state.
	Reading ReadingStore
	Tokens  TokenStore
	// Sessions keeps the sign-ins of the web page.
	Sessions SessionStore
	Dead     DeadLetterCounter
	// Removals reads the links removed from their pages.
	Removals RemovalReader
	// Links reads the links list of a page, with times on the page.
	Links LinkReader
	// Revisions reads the headline revisions of a page.
	Revisions RevisionReader
	// Subscriptions reads and writes notification subscriptions.
	Subscriptions SubscriptionStore
	// Tester sends test messages; nil answers 503 to a test.
	Tester TestSender
	// Discoverer lists a page's feeds and sitemaps; nil answers 503.
	Discoverer Discoverer
	// Snapshots reads the archive's index, and SnapshotBodies the bodies
	// stored in it; nil (archiving off) answers 503.
	Snapshots      SnapshotReader
	SnapshotBodies SnapshotBodies
	// Sources lists the feeds and news sitemaps a page is watched
	// through; nil lists none.
	Sources SourceReader
	// SourceEditor changes how often a source is checked; nil answers 503.
	SourceEditor SourceEditor
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
	// discoveries bounds the discoveries tokens ask for.
	discoveries discoveryLimiter
}

//go:embed templates/*.html static/* openapi.json
var assets embed.FS

// New returns a Server. It fails if the embedded templates do not parse or
// the metrics are already registered with cfg.Registerer.
func New(cfg Config, deps Deps, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
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
	// (webhook URLs often hold a receiver's token, e-mail addresses,
	// receivers' answers): a write token, even when PublicRead. Read
	// tokens travel in feed readers' URLs; they must not open these.
	private
	// token is a read of the pages as fetched: any token, even when
	// PublicRead, since a stored page can hold what its site showed the
	// crawler alone (a page sent a cookie) and is costly to serve.
	token
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
		{"POST", "/api/v1/pages/{id}/check", write, s.apiCheckPage, true},
		{"GET", "/api/v1/pages/{id}/links", read, s.apiPageLinks, true},
		{"GET", "/api/v1/pages/{id}/revisions", read, s.apiPageRevisions, true},
		{"GET", "/api/v1/pages/{id}/snapshots", token, s.apiPageSnapshots, true},
		{"GET", "/api/v1/snapshots/{id}", token, s.apiSnapshot, true},
		{"GET", "/api/v1/snapshots/{id}/rendered", token, s.apiSnapshotRendered, true},
		{"GET", "/api/v1/pages/{id}/sources", read, s.apiPageSources, true},
		{"PATCH", "/api/v1/sources/{id}", write, s.apiEditSource, true},
		{"GET", "/pages/{id}/sources.opml", read, s.pageSourcesOPML, false},
		{"GET", "/sources.opml", read, s.allSourcesOPML, false},
		{"GET", "/api/v1/trash", read, s.apiListTrash, true},
		{"POST", "/api/v1/trash/{id}/restore", write, s.apiRestorePage, true},
		{"POST", "/api/v1/pages/import", write, s.apiImport, true},
		{"GET", "/api/v1/pages/export", read, s.apiExport, true},
		{"GET", "/api/v1/updates", read, s.apiUpdates, true},
		{"GET", "/api/v1/articles/{id}", read, s.apiArticle, true},
		{"GET", "/api/v1/dead-letters", read, s.apiDeadLetters, true},
		{"POST", "/api/v1/discover", write, s.apiDiscover, true},
		{"GET", "/api/v1/removals", read, s.apiRemovals, true},
		{"GET", "/api/v1/subscriptions", private, s.apiListSubscriptions, true},
		{"POST", "/api/v1/subscriptions", write, s.apiCreateSubscription, true},
		{"PATCH", "/api/v1/subscriptions/{id}", write, s.apiEditSubscription, true},
		{"DELETE", "/api/v1/subscriptions/{id}", write, s.apiDeleteSubscription, true},
		{"GET", "/api/v1/subscriptions/{id}/deliveries", private, s.apiDeliveries, true},
		{"POST", "/api/v1/subscriptions/{id}/test", write, s.apiTestSubscription, true},
		{"POST", "/api/v1/subscriptions/{id}/resume", write, s.apiResumeSubscription, true},

		{"GET", "/feeds/all.atom", read, s.feedAll, false},
		{"GET", "/feeds/all.rss", read, s.feedAll, false},
		{"GET", "/feeds/all.json", read, s.feedAll, false},
		{"GET", "/feeds/pages/{file}", read, s.feedPage, false},
		{"GET", "/feeds/pages/{id}/{file}", read, s.feedPageRevisions, false},
		{"GET", "/feeds/tags/{file}", read, s.feedTag, false},

		{"GET", "/{$}", read, s.uiRiver, false},
		{"POST", "/read", read, s.uiMarkRead, false},
		{"GET", "/updates", read, s.uiOldUpdates, false},
		{"GET", "/pages", read, s.uiPages, false},
		{"POST", "/pages", write, s.uiAddPage, false},
		{"POST", "/pages/discover", write, s.uiDiscover, false},
		{"GET", "/pages/{id}", read, s.uiPage, false},
		{"GET", "/snapshots/{id}", token, s.apiSnapshot, false},
		{"GET", "/snapshots/{id}/rendered", token, s.apiSnapshotRendered, false},
		{"POST", "/pages/{id}", write, s.uiEditPage, false},
		{"POST", "/pages/{id}/enabled", write, s.uiSetEnabled, false},
		{"POST", "/pages/{id}/check", write, s.uiCheckNow, false},
		{"GET", "/pages/{id}/delete", write, s.uiConfirmDelete, false},
		{"POST", "/pages/{id}/delete", write, s.uiDeletePage, false},
		{"GET", "/trash", read, s.uiTrash, false},
		{"POST", "/trash/{id}/restore", write, s.uiRestorePage, false},
		{"GET", "/feeds", read, s.uiFeeds, false},
		{"POST", "/feeds", write, s.uiCreateFeedToken, false},
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
		h := s.guard(rt)
		if rt.method == http.MethodPost && !rt.api {
			h = s.formBody(h)
		}
		h = withBudget(s.budgetOf(rt), h)
		mux.Handle(rt.method+" "+rt.pattern, s.instrument(rt, h))
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
	// The same for the web page, whose answers are pages with navigation.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(known, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			s.problem(w, r, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, ", "))
			return
		}
		s.problem(w, r, http.StatusNotFound, "there is nothing at "+r.URL.Path)
	})
	// Forms post same-origin; a cross-site POST (a CSRF attempt) is
	// refused before any handler runs. API clients send no browser
	// headers and pass.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.problem(w, r, http.StatusForbidden, "this form can only be sent from the portalwatch page itself")
	}))
	return securityHeaders(s.checkHost(cop.Handler(mux)))
}

// checkHost refuses a request for a host the server does not answer to: a
// page on another site that a DNS name pointing at this machine lets the
// browser call (DNS rebinding) names that site's host, and would otherwise
// read a loopback instance whose reads are public.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.answersTo(r.Host) {
			want := "this machine's loopback address or its listening address"
			if s.cfg.BaseURL != "" {
				want = s.cfg.BaseURL
			}
			s.problem(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("this portalwatch answers to %s, not to %q; "+
				"an installation reached by another name sets PORTALWATCH_WEB_BASE_URL to it", want, r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// answersTo reports whether host (a request's Host, host[:port]) is one the
// server answers to: BaseURL's, the listening address, or a loopback name.
func (s *Server) answersTo(host string) bool {
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = host, ""
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	switch name {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	if s.cfg.BaseURL != "" {
		if u, err := url.Parse(s.cfg.BaseURL); err == nil {
			want := defaultPort(u.Scheme, u.Port())
			if name == strings.ToLower(u.Hostname()) && (port == "" || port == want) {
				return true
			}
		}
	}
	if lh, lp, err := net.SplitHostPort(s.cfg.ListenAddr); err == nil && lh != "" {
		if ip := net.ParseIP(lh); ip == nil || !ip.IsUnspecified() {
			return name == strings.ToLower(strings.Trim(lh, "[]")) && (port == lp || port == "" && lp == "80")
		}
	}
	return false
}

func defaultPort(scheme, port string) string {
	switch {
	case port != "":
		return port
	case scheme == "https":
		return "443"
	}
	return "80"
}

// baseURL is where absolute links point: BaseURL, or the scheme and host
// the request came to (a host checkHost let in).
func (s *Server) baseURL(r *http.Request) string {
	if s.cfg.BaseURL != "" {
		return strings.TrimSuffix(s.cfg.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// secureCookies says whether the session cookie is sent over TLS only: a
// request over TLS, or a BaseURL of https (a TLS proxy in front).
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.cfg.BaseURL, "https://")
}

// Defaults of Config's time budgets.
const (
	DefaultQueryBudget = 5 * time.Second
	// An import of 10,000 pages took 18 to 30 s on a busy two-core
	// machine: a budget at the edge of that would refuse the largest
	// files whenever the database is busy, and cut the import whole.
	DefaultTransferBudget = 2 * time.Minute
)

func (s *Server) budgetOf(rt route) time.Duration {
	budget, def := s.cfg.QueryBudget, DefaultQueryBudget
	switch {
	case strings.HasSuffix(rt.pattern, "/discover"):
		return DiscoverBudget
	case strings.HasSuffix(rt.pattern, "/import") || strings.HasSuffix(rt.pattern, "/export"):
		budget, def = s.cfg.TransferBudget, DefaultTransferBudget
	}
	if budget <= 0 {
		return def
	}
	return budget
}

// withBudget runs next with a context that ends after budget.
func withBudget(budget time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), budget)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// maxFormBytes bounds a form's body: the page form with every list full
// (seven lists of 20 patterns of 256 bytes, escaped) stays well below it.
const maxFormBytes = 256 << 10

// formBody lets a form's body through capped at maxFormBytes, and refuses a
// multipart one: no form of the page sends a file, and net/http would write
// a large one to temporary files that the handler's copy of the request
// (made by guard) keeps from ever being removed.
func (s *Server) formBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
			s.problem(w, r, http.StatusUnsupportedMediaType, "this form takes application/x-www-form-urlencoded; no form of this page sends a file")
			return
		}
		// Read here, whole, so a body over the cap is refused, not read as
		// an empty form (which would pause a page whose "enabled" is lost).
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				s.problem(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("the form is larger than %d bytes", maxFormBytes))
				return
			}
			s.problem(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// exactMethods returns the methods of the routes whose pattern is r's path
// itself, without a wildcard ("/api/v1/pages/import").
func (s *Server) exactMethods(r *http.Request) []string {
	var allow []string
	for _, rt := range s.routes() {
		if rt.pattern == r.URL.Path && rt.method != r.Method {
			allow = append(allow, rt.method)
		}
	}
	return allow
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
// Content-Security-Policy (scripts and styles from this server's own files
// only, never inline), and no framing or sniffing.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		// frame-ancestors says the same to browsers that read CSP; this
		// says it to those that do not.
		h.Set("X-Frame-Options", "DENY")
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
		secret, session := s.credential(r, rt)
		if secret == malformedCredential {
			s.denied(w, r, rt, http.StatusUnauthorized, `send the token as "Authorization: Bearer <token>"`)
			return
		}
		var tok watch.Token
		if secret != "" {
			var err error
			if session {
				tok, err = s.deps.Sessions.VerifySession(r.Context(), secret)
			} else {
				tok, err = s.deps.Tokens.VerifyToken(r.Context(), secret)
			}
			switch {
			case errors.Is(err, watch.ErrTokenNotFound) && session:
				// Signed out elsewhere, expired, its token revoked, or a
				// cookie of before sessions: a visitor again.
				clearSession(w, s.secureCookies(r))
				secret = ""
			case errors.Is(err, watch.ErrTokenNotFound):
				if rt.access == open {
					break
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
		case rt.access == token && secret == "":
			s.denied(w, r, rt, http.StatusUnauthorized, "the pages as fetched need a token even when reads are public: send \"Authorization: Bearer <token>\" (or sign in)")
			return
		case rt.access == private && secret == "":
			s.denied(w, r, rt, http.StatusUnauthorized, "subscriptions name their receivers: reading them needs a write token even when reads are public; send \"Authorization: Bearer <token>\"")
			return
		case rt.access == private && !tok.Write:
			s.denied(w, r, rt, http.StatusForbidden, fmt.Sprintf("token %q may only read pages and updates; subscriptions name their receivers and need a token made with --write", tok.Name))
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

// malformedCredential is what credential returns for an Authorization
// header that is not "Bearer <token>" (a bare token, another scheme).
const malformedCredential = "\x00malformed"

// credential finds the request's token secret: the Authorization header
// always, ?token= on feeds; or, on the web page and feeds, the session id
// of the cookie (session true).
func (s *Server) credential(r *http.Request, rt route) (secret string, session bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		// RFC 9110: the scheme is case-insensitive.
		if scheme, t, ok := strings.Cut(strings.TrimSpace(h), " "); ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(t), false
		}
		return malformedCredential, false
	}
	isFeed := strings.HasPrefix(rt.pattern, "/feeds/")
	if isFeed {
		if t := r.URL.Query().Get("token"); t != "" {
			return t, false
		}
	}
	if !rt.api || isFeed {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			return c.Value, true
		}
	}
	return "", false
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
	s.render(w, r, status, "signin", signinView{view: s.viewOf(r, "Sign in", ""), Error: detail})
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
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "max-age=86400")
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

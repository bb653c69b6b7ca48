package fetch

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// seen records the headers each path of a test server was asked with.
type seen struct {
	mu  sync.Mutex
	got map[string]http.Header
}

func (s *seen) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = map[string]http.Header{}
	}
	s.got[r.URL.Path] = r.Header.Clone()
}

func (s *seen) of(path string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[path]
}

var pageHeaders = []watch.Header{
	{Name: "User-Agent", Value: "Mozilla/5.0 (reader)"},
	{Name: "Accept-Language", Value: "de"},
	{Name: "Cookie", Value: "session=s3cr3t"},
	{Name: "Authorization", Value: "Bearer t0ken"},
}

// The headers of a page reach its homepage, its User-Agent over that of the
// client; robots.txt, which belongs to the origin, gets none of them.
func TestFetchSendsThePagesHeaders(t *testing.T) {
	var site seen
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.record(r)
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Cookie") != "session=s3cr3t" {
			http.Error(w, "sign in", http.StatusForbidden)
			return
		}
		htmlHandler(testPage)(w, r)
	}))
	c, _ := newRobotsClient(t, Config{})
	if _, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/", Header: pageHeaders}); err != nil {
		t.Fatal(err)
	}
	home := site.of("/")
	for _, h := range pageHeaders {
		if got := home.Get(h.Name); got != h.Value {
			t.Errorf("homepage got %s %q, want %q", h.Name, got, h.Value)
		}
	}
	if got := home.Get("Accept-Encoding"); got != acceptEncoding {
		t.Errorf("Accept-Encoding %q: the client owns it", got)
	}
	robots := site.of("/robots.txt")
	if robots == nil {
		t.Fatal("robots.txt was not asked for")
	}
	for _, name := range []string{"Cookie", "Authorization", "Accept-Language"} {
		if v := robots.Get(name); v != "" {
			t.Errorf("robots.txt got %s %q: a page's headers are for its homepage", name, v)
		}
	}
	if ua := robots.Get("User-Agent"); ua != DefaultUserAgent {
		t.Errorf("robots.txt User-Agent %q, want the client's own", ua)
	}
}

// A redirect to another origin (here another port of the same address,
// which http.Client counts as the same host and would send them to) drops
// Cookie and Authorization; one back to the page's origin keeps them.
func TestRedirectToAnotherOriginDropsSecrets(t *testing.T) {
	var other seen
	away, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		htmlHandler(testPage)(w, r)
	}))
	var site seen
	srv, _ := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.record(r)
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, away.URL+"/landing", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "/home", http.StatusMovedPermanently)
		default:
			htmlHandler(testPage)(w, r)
		}
	}))
	c := newClient(t, Config{AllowPrivate: true, IgnoreRobots: true, MaxRedirects: DefaultMaxRedirects})
	if _, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/away", Header: pageHeaders}); err != nil {
		t.Fatal(err)
	}
	landing := other.of("/landing")
	if landing == nil {
		t.Fatal("the redirect was not followed")
	}
	for _, name := range []string{"Cookie", "Authorization"} {
		if v := landing.Get(name); v != "" {
			t.Errorf("another origin got %s %q", name, v)
		}
	}
	if got := landing.Get("Accept-Language"); got != "de" {
		t.Errorf("another origin got Accept-Language %q; headers in clear follow the page", got)
	}

	if _, err := c.Fetch(context.Background(), Request{URL: srv.URL + "/moved", Header: pageHeaders}); err != nil {
		t.Fatal(err)
	}
	if got := site.of("/home").Get("Cookie"); got != "session=s3cr3t" {
		t.Errorf("a redirect within the origin lost the cookie: %q", got)
	}
}

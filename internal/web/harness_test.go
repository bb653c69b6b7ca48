package web

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/archive"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// env is a server under test on a migrated database of its own.
type env struct {
	t       *testing.T
	dsn     string
	st      *store.Store
	pool    *pgxpool.Pool
	srv     *httptest.Server
	reads   *countingUpdates
	readTok string // a read-only token
	writeTk string // a write token
	// sessions are the sign-ins made by session, by token secret.
	sessions map[string]string
	// archive is the archive the server reads snapshots from.
	archive *archive.FS
}

// countingUpdates counts the reads of updates rows, so a test can prove a
// 304 was answered without one.
type countingUpdates struct {
	UpdateReader
	queries atomic.Int64
}

func (c *countingUpdates) QueryUpdates(ctx context.Context, f watch.UpdateFilter) ([]watch.Update, error) {
	c.queries.Add(1)
	return c.UpdateReader.QueryUpdates(ctx, f)
}

// fakeDead is the dead-letter counter: the broker's side is tested in the
// queue package.
type fakeDead struct{}

func (fakeDead) DeadLetters(context.Context) ([]DeadQueue, error) {
	return []DeadQueue{
		{Queue: "job_queue.dlq", Count: 2, Reasons: []ReasonCount{{Reason: "job is not JSON", Count: 2}}},
		{Queue: "task_queue.dlq", Reasons: []ReasonCount{}},
	}, nil
}

type envOption func(*Config)

func publicRead(c *Config) { c.PublicRead = true }

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	ctx := context.Background()
	st, pool := systest.Store(t)
	dsn := pool.Config().ConnString()
	files, err := archive.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dsn: dsn, st: st, pool: pool, readTok: "pw_read_secret", writeTk: "pw_write_secret", archive: files}
	if _, err := st.CreateToken(ctx, "reader", e.readTok, false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateToken(ctx, "writer", e.writeTk, true); err != nil {
		t.Fatal(err)
	}
	e.srv = e.serve(st, opts...)
	return e
}

// serve starts a server over st (the env's store, or one with another role).
func (e *env) serve(st *store.Store, opts ...envOption) *httptest.Server {
	cfg := Config{Policy: registration.Policy{GuardURL: fetch.Guard(true, nil)}}
	for _, o := range opts {
		o(&cfg)
	}
	e.reads = &countingUpdates{UpdateReader: st}
	s, err := New(cfg, Deps{Pages: st, Writer: st, Importer: st, Updates: e.reads, Reading: st, Tokens: st, Sessions: st, Dead: fakeDead{}, Removals: st, Links: st, Revisions: st, Sources: st, SourceEditor: st,
		Subscriptions: st, Tester: webhookTester(), Discoverer: e.discoverer(),
		Snapshots: st, SnapshotBodies: archive.Bodies{Store: e.archive, Max: 1 << 20}}, testsvc.Logger(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	e.t.Cleanup(srv.Close)
	return srv
}

// do sends a request with token (none when ""), body as JSON when it is a
// string starting with { or [, and checks the answer against the OpenAPI
// document when the route is in it.
func (e *env) do(method, path, token string, body string, headers ...string) (*http.Response, []byte) {
	e.t.Helper()
	return e.doAt(e.srv, method, path, token, body, headers...)
}

func (e *env) doAt(srv *httptest.Server, method, path, token string, body string, headers ...string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[") {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1] // net/http sends req.Host, never a Host header
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	checkAgainstDocument(e.t, req, resp, b)
	return resp, b
}

var (
	docOnce   sync.Once
	docRouter routers.Router
	docErr    error
)

func openAPIRouter(t *testing.T) routers.Router {
	t.Helper()
	docOnce.Do(func() {
		raw, err := assets.ReadFile("openapi.json")
		if err != nil {
			docErr = err
			return
		}
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(raw)
		if err != nil {
			docErr = err
			return
		}
		if docErr = doc.Validate(loader.Context); docErr != nil {
			return
		}
		// The document's server is relative ("/"): any host matches.
		doc.Servers = nil
		for _, ct := range []string{"text/csv", "text/x-opml", "application/atom+xml", "application/rss+xml"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
		openapi3filter.RegisterBodyDecoder("application/feed+json", openapi3filter.JSONBodyDecoder)
		docRouter, docErr = gorillamux.NewRouter(doc)
	})
	if docErr != nil {
		t.Fatalf("openapi.json: %v", docErr)
	}
	return docRouter
}

// checkAgainstDocument validates a real response against openapi.json with
// kin-openapi when the request's route is described there.
func checkAgainstDocument(t *testing.T, req *http.Request, resp *http.Response, body []byte) {
	t.Helper()
	if !strings.HasPrefix(req.URL.Path, "/api/") && !strings.HasPrefix(req.URL.Path, "/feeds/") {
		return
	}
	router := openAPIRouter(t)
	route, params, err := router.FindRoute(req)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return // not a route; the mux said so
		}
		t.Errorf("%s %s answered %d but is not in openapi.json: %v", req.Method, req.URL.Path, resp.StatusCode, err)
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: resp.StatusCode,
		Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s -> %d does not match openapi.json: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, bytes.TrimSpace(body))
	}
}

// insertUpdates writes n updates of page, one second apart, the newest at
// last, with texts "<prefix> i".
func (e *env) insertUpdates(page int64, n int, last time.Time, prefix string) {
	e.t.Helper()
	_, err := e.pool.Exec(context.Background(), `
		INSERT INTO updates (page_id, url, text, code, link_key, discovered_at)
		SELECT $1::bigint, 'https://example.com/'||$1::bigint||'/'||i, $3::text||' '||i, 'c'||i, $1::bigint*1000000 + i + (SELECT coalesce(max(id), 0) FROM updates),
			$2::timestamptz - (($4::int - i) * interval '1 second')
		FROM generate_series(1, $4) i`, page, last, prefix, n)
	if err != nil {
		e.t.Fatal(err)
	}
}

func timeNow() time.Time { return time.Now().UTC().Truncate(time.Second) }

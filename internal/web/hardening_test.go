package web

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/ops"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Each test here is a finding of the review of the web program as an
// attacker and a careless user would use it (issue 26), held so that it
// stays fixed.

// TestFlashIsNeverTextFromTheURL: a link must not make the page say what
// its sender likes.
func TestFlashIsNeverTextFromTheURL(t *testing.T) {
	e := newEnv(t)
	for _, path := range []string{
		"/signin?done=Session+expired:+sign+in+at+https://evil.example",
		"/?done=Session+expired:+sign+in+at+https://evil.example",
		"/?done=watching&n=7%3Cscript%3E",
	} {
		if _, body := e.get(path, e.readTok); strings.Contains(body, "evil.example") || strings.Contains(body, `class="flash"`) {
			t.Errorf("GET %s shows a flash from its URL", path)
		}
	}
	if _, body := e.get("/?done=page-trashed&n=7", e.readTok); !strings.Contains(body, "Moved page 7 to the trash") {
		t.Error("a flash code the server writes is not shown")
	}
}

// TestAuthorizationSchemeIsCaseInsensitiveAndRequired: RFC 9110 makes
// "bearer" as good as "Bearer"; a bare token is not a credential.
func TestAuthorizationSchemeIsCaseInsensitiveAndRequired(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		header string
		want   int
	}{
		{"Bearer " + e.readTok, 200},
		{"bearer " + e.readTok, 200},
		{"BEARER  " + e.readTok, 200},
		{e.readTok, 401},
		{"Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+e.readTok)), 401},
	} {
		resp, body := e.do("GET", "/api/v1/pages", "", "", "Authorization", tt.header)
		if resp.StatusCode != tt.want {
			t.Errorf("Authorization %.12q… = %d %s, want %d", tt.header, resp.StatusCode, body, tt.want)
		}
	}
}

// TestCursorOutOfRangeIsRefused: a cursor holding -2^63 µs wrapped on its
// way to PostgreSQL instead of being refused.
func TestCursorOutOfRangeIsRefused(t *testing.T) {
	e := newEnv(t)
	for _, raw := range []string{"-9223372036854775808.1", "9223372036854775807.1", "-62135596800000001.1"} {
		cursor := base64.RawURLEncoding.EncodeToString([]byte(raw))
		if resp, body := e.do("GET", "/api/v1/updates?cursor="+cursor, e.readTok, ""); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("cursor %s = %d %s, want 400", raw, resp.StatusCode, body)
		}
	}
}

// TestShortSearchesAreRefused: a search the trigram index cannot serve
// walks every update and holds a connection for seconds; a CJK word counts
// its characters, not its bytes.
func TestShortSearchesAreRefused(t *testing.T) {
	e := newEnv(t)
	for q, want := range map[string]int{"zq": 400, "ab": 400, "abc": 200, "北京市": 200, "北京": 400} {
		resp, body := e.do("GET", "/api/v1/updates?q="+q, e.readTok, "")
		if resp.StatusCode != want {
			t.Errorf("q=%s: %d %s, want %d", q, resp.StatusCode, body, want)
		}
		if want == 400 && !strings.Contains(string(body), "at least 3 characters") {
			t.Errorf("q=%s: %s does not name the minimum", q, body)
		}
	}
}

func TestFramingIsRefusedTwice(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.get("/signin", "")
	if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("headers %v", resp.Header)
	}
}

// TestHealthSaysWhatItWaitsForNotWhere: the database's error names its
// user, host and port; anyone may ask /healthz.
func TestHealthSaysWhatItWaitsForNotWhere(t *testing.T) {
	e := newEnv(t)
	health := ops.NewHealth()
	health.Set("postgres", func() error {
		return errors.New("failed to connect to `user=portal database=portalwatch`: 10.1.2.3:5432 (db.internal): dial error")
	})
	srv := e.serve(e.st, func(c *Config) { c.Health = health.Summary() })
	resp, body := e.doAt(srv, "GET", "/healthz", "", "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "postgres") {
		t.Fatalf("healthz = %d %s, want 503 naming postgres", resp.StatusCode, body)
	}
	for _, secret := range []string{"portal", "10.1.2.3", "db.internal", "5432"} {
		if strings.Contains(strings.ReplaceAll(string(body), "portalwatch", ""), secret) {
			t.Errorf("healthz shows %q: %s", secret, body)
		}
	}
}

// TestFormsRefuseMultipartAndLargeBodies: a 40 MB multipart body to a
// form's route left its multipart-* temporary files behind; none of the
// page's forms sends a file.
func TestFormsRefuseMultipartAndLargeBodies(t *testing.T) {
	e := newEnv(t)
	page := e.addPage("http://127.0.0.1:9/news")
	before := tempFiles(t)
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("enabled", "big.bin")
	fw.Write(bytes.Repeat([]byte("x"), 12<<20)) // past ParseMultipartForm's 10 MB in memory
	mw.WriteField("enabled", "false")
	mw.Close()
	path := fmt.Sprintf("/pages/%d/enabled", page)
	resp, _ := e.do("POST", path, e.writeTk, mp.String(), "Content-Type", mw.FormDataContentType())
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("multipart form = %d, want 415", resp.StatusCode)
	}
	if after := tempFiles(t); after > before {
		t.Errorf("%d multipart temporary files left behind", after-before)
	}
	big := "enabled=false&pad=" + strings.Repeat("x", maxFormBytes)
	resp, _ = e.do("POST", path, e.writeTk, big, "Content-Type", "application/x-www-form-urlencoded")
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized form = %d, want 413", resp.StatusCode)
	}
	if p, err := e.st.Page(context.Background(), page); err != nil || !p.Enabled {
		t.Errorf("a refused form changed the page: %+v, %v", p, err)
	}
}

// tempFiles counts net/http's multipart temporary files.
func tempFiles(t *testing.T) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "multipart-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// TestHostIsChecked: with reads public, a page on another site whose name
// resolves to this machine (DNS rebinding) could read a loopback instance;
// its requests name that site's host.
func TestHostIsChecked(t *testing.T) {
	e := newEnv(t, publicRead)
	for host, want := range map[string]int{
		"evil.example":      http.StatusMisdirectedRequest,
		"evil.example:8080": http.StatusMisdirectedRequest,
		"localhost:8080":    http.StatusOK,
		"127.0.0.1":         http.StatusOK,
		"[::1]:9":           http.StatusOK,
	} {
		resp, body := e.do("GET", "/api/v1/pages", "", "", "Host", host)
		if resp.StatusCode != want {
			t.Errorf("Host %s = %d %s, want %d", host, resp.StatusCode, body, want)
		}
		if want != 200 && !strings.Contains(string(body), "PORTALWATCH_WEB_BASE_URL") {
			t.Errorf("Host %s: the refusal does not say what to set: %s", host, body)
		}
	}

	// Behind a TLS proxy, the base URL names the host, every absolute URL
	// and the cookie's Secure flag.
	srv := e.serve(e.st, publicRead, func(c *Config) { c.BaseURL = "https://watch.example.org" })
	resp, body := e.doAt(srv, "GET", "/feeds/all.atom", "", "", "Host", "watch.example.org")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "https://watch.example.org/feeds/all.atom") || strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("feed behind the base URL = %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.doAt(srv, "GET", "/feeds/all.atom", "", "", "Host", "watch.example.org:8443"); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("the base URL's host on another port = %d, want 421", resp.StatusCode)
	}
	srv.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = e.doAt(srv, "POST", "/signin", "", "token="+e.readTok, "Content-Type", "application/x-www-form-urlencoded", "Host", "watch.example.org")
	if c := resp.Header.Get("Set-Cookie"); !strings.Contains(c, "Secure") {
		t.Errorf("sign-in behind an https base URL = %d, sets %q, want a Secure cookie", resp.StatusCode, c)
	}
	if _, err := New(Config{BaseURL: "https://watch.example.org/portal"}, Deps{}, nil); err == nil {
		t.Error("a base URL with a path was accepted")
	}
}

// stuckUpdates answers every read of updates only when the request's
// context ends, as a search walking a large table would.
type stuckUpdates struct{ UpdateReader }

func (stuckUpdates) QueryUpdates(ctx context.Context, _ watch.UpdateFilter) ([]watch.Update, error) {
	<-ctx.Done()
	return nil, fmt.Errorf("query updates: %w", ctx.Err())
}

// TestRequestsHaveATimeBudget: a search that runs long is cut at its
// budget and answered 503, freeing what it held, instead of running for as
// long as the table is large.
func TestRequestsHaveATimeBudget(t *testing.T) {
	e := newEnv(t)
	s, err := New(Config{Policy: registration.Policy{GuardURL: fetch.Guard(true, nil)}, QueryBudget: 300 * time.Millisecond},
		Deps{Pages: e.st, Writer: e.st, Updates: stuckUpdates{e.st}, Tokens: e.st, Sessions: e.st, Dead: fakeDead{},
			Removals: e.st, Subscriptions: e.st}, testsvc.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	start := time.Now()
	resp, body := e.doAt(srv, "GET", "/api/v1/updates?q=abc", e.readTok, "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "narrow it") {
		t.Errorf("a stuck search = %d %s, want 503", resp.StatusCode, body)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a stuck search held its request for %s, past its 300ms budget", took)
	}
}

// TestAPathOfItsOwnAnswers405: GET /api/v1/pages/import once fell on the
// page route ({id} = "import") and answered 404.
func TestAPathOfItsOwnAnswers405(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do("GET", "/api/v1/pages/import", e.readTok, "")
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /api/v1/pages/import = %d, Allow %q: %s; want 405 with Allow: POST", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	if resp, _ := e.do("GET", "/api/v1/pages/news", e.readTok, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /api/v1/pages/news = %d, want 404", resp.StatusCode)
	}
}

func TestCheckNow(t *testing.T) {
	e := newEnv(t)
	page := e.addPage("http://127.0.0.1:9/news")
	path := fmt.Sprintf("/api/v1/pages/%d/check", page)
	if resp, _ := e.do("POST", path, e.readTok, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("check now with a read token = %d, want 403", resp.StatusCode)
	}
	resp, body := e.do("POST", path, e.writeTk, "")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("check now = %d %s, want 202", resp.StatusCode, body)
	}
	e.do("PATCH", fmt.Sprintf("/api/v1/pages/%d", page), e.writeTk, `{"enabled":false}`)
	if resp, body := e.do("POST", path, e.writeTk, ""); resp.StatusCode != http.StatusConflict {
		t.Errorf("check now of a paused page = %d %s, want 409", resp.StatusCode, body)
	}
	if resp, _ := e.do("POST", "/api/v1/pages/999999/check", e.writeTk, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("check now of no page = %d, want 404", resp.StatusCode)
	}
}

// TestDurationsAsPeopleWriteThem: "1d" was refused where "2d" worked one
// command further, and the API took since only as a timestamp.
func TestDurationsAsPeopleWriteThem(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do("POST", "/api/v1/pages", e.writeTk, `{"url":"http://127.0.0.1:9/daily","interval":"1d"}`)
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(body), `"interval_seconds":86400`) {
		t.Errorf("a page every 1d = %d %s", resp.StatusCode, body)
	}
	if resp, body := e.do("GET", "/api/v1/updates?since=1h", e.readTok, ""); resp.StatusCode != 200 {
		t.Errorf("since=1h = %d %s", resp.StatusCode, body)
	}
	if resp, _ := e.do("GET", "/api/v1/updates?since=soon", e.readTok, ""); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("since=soon = %d, want 400", resp.StatusCode)
	}
}

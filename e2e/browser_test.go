package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// chromiumPath finds Debian's headless-capable Chromium. Under CI=true its
// absence fails the test (`make test` installs it); elsewhere the test
// skips with a message.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: `scripts/services.sh ensure chromium` installs it")
	}
	t.Skip("chromium is not installed (`scripts/services.sh ensure chromium`); skipping the browser test")
	return ""
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBrowserRegistersAPortalAndSeesItsUpdates drives the real web page in
// headless Chromium: sign in with a token, register a local portal through
// the form, let the real pipeline check it twice, and wait until the new
// links show on the page. It saves a screenshot and logs its path.
func TestBrowserRegistersAPortalAndSeesItsUpdates(t *testing.T) {
	chromium := chromiumPath(t)
	s := newSystem(t)
	token, err := s.watchctl("token", "create", "browser", "--write")
	if err != nil {
		t.Fatalf("token create: %v\n%s", err, token)
	}
	token = strings.TrimSpace(token)
	addr := freeAddr(t)
	web := s.Start("web", "PORTALWATCH_WEB_ADDR="+addr)
	base := "http://" + addr
	testsvc.Eventually(t, 30*time.Second, "the web program's /healthz", func() (bool, error) {
		select {
		case <-web.Done():
			return false, fmt.Errorf("web exited:\n%s", web.Output())
		default:
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == 200, nil
	})

	portal := newPortal(t)
	portal.set("/news", portalPage{links: []link{{"/a", "Old story A"}, {"/b", "Old story B"}}})
	s.start("scheduler")
	s.start("crawler")
	s.start("processor")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // root in CI and containers
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#signin`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.Submit(chromedp.CSS(`#signin`)),
		chromedp.WaitVisible(chromedp.CSS(`#add-page`)),
		// A bad URL first: refused beside the field, nothing written.
		chromedp.SendKeys(chromedp.CSS(`#add-page #url`), "ftp://example.com/"),
		chromedp.Submit(chromedp.CSS(`#add-page`)),
		chromedp.WaitVisible(chromedp.CSS(`#url-error`)),
		chromedp.SetValue(chromedp.CSS(`#add-page #url`), portal.url("/news")),
		chromedp.SetValue(chromedp.CSS(`#add-page #name`), "Local portal"),
		chromedp.SetValue(chromedp.CSS(`#add-page #interval`), "10s"),
		chromedp.Submit(chromedp.CSS(`#add-page`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	)
	if err != nil {
		t.Fatalf("sign in and register through the form: %v", err)
	}
	afterAdd, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#pages`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(afterAdd, "Local portal") {
		t.Fatalf("the page list after adding shows:\n%s", afterAdd)
	}
	var pageID int64
	if err := s.db.QueryRow(ctx, `SELECT id FROM pages WHERE name = 'Local portal'`).Scan(&pageID); err != nil {
		t.Fatalf("the form's page is not in the database: %v", err)
	}
	if n := s.count(`SELECT count(*) FROM pages`); n != 1 {
		t.Fatalf("%d pages, want 1: the refused URL was written", n)
	}

	// The first check is the baseline; then two new stories appear.
	testsvc.Eventually(t, 60*time.Second, "the baseline check", func() (bool, error) {
		return s.count(fmt.Sprintf(`SELECT count(*) FROM pages WHERE id = %d AND baseline_at IS NOT NULL`, pageID)) == 1, nil
	})
	portal.set("/news", portalPage{links: []link{{"/a", "Old story A"}, {"/b", "Old story B"}, {"/c", "Budget passes in night vote"}, {"/d", "Harbour bridge reopens"}}})
	s.checkNow(pageID)

	pagePath := fmt.Sprintf("%s/pages/%d", base, pageID)
	var updates string
	testsvc.Eventually(t, 90*time.Second, "the new links on "+pagePath, func() (bool, error) {
		if err := chromedp.Do(ctx, chromedp.Navigate(pagePath)); err != nil {
			return false, err
		}
		var err error
		if updates, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#updates`))); err != nil {
			return false, err
		}
		return strings.Contains(updates, "Budget passes in night vote") && strings.Contains(updates, "Harbour bridge reopens"), nil
	})
	if strings.Contains(updates, "Old story") {
		t.Errorf("the baseline's links show as updates:\n%s", updates)
	}

	dir := filepath.Join(os.TempDir(), "portalwatch-browser-"+testsvc.ID(t))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, shot := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1200, 900}, {"phone", 390, 844}} {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(shot.width, shot.height),
			chromedp.Navigate(pagePath),
			chromedp.WaitVisible(chromedp.CSS(`#updates`)),
		); err != nil {
			t.Fatalf("open %s at %dx%d: %v", pagePath, shot.width, shot.height, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		path := filepath.Join(dir, shot.name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot (%s) of the page with its updates: %s", shot.name, path)
	}

	// Notifications, on a phone's screen: a bad webhook URL refused beside
	// the field, a loopback receiver added, its secret shown once, and the
	// Test button's message reaching it.
	hooks := make(chan http.Header, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hooks <- r.Header.Clone():
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/notifications"),
		chromedp.WaitVisible(chromedp.CSS(`#add-webhook`)),
		chromedp.SendKeys(chromedp.CSS(`#wh-url`), "ftp://example.com/"),
		chromedp.Submit(chromedp.CSS(`#add-webhook`)),
		chromedp.WaitVisible(chromedp.CSS(`#wh-url-error`)),
		chromedp.SetValue(chromedp.CSS(`#wh-url`), receiver.URL+"/hook"),
		chromedp.Submit(chromedp.CSS(`#add-webhook`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)),
	)
	if err != nil {
		t.Fatalf("add a webhook through the Notifications page: %v", err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#secret`)))
	if err != nil {
		t.Fatal(err)
	}
	var stored string
	if err := s.db.QueryRow(ctx, `SELECT secret FROM subscriptions`).Scan(&stored); err != nil || shown != stored {
		t.Fatalf("secret shown %q, stored %q (%v); want one subscription with the secret shown", shown, stored, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#subscriptions form[action$="/test"] button`))); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-hooks:
		if !strings.HasPrefix(h.Get("webhook-signature"), "v1,") {
			t.Errorf("the test message's webhook-signature is %q", h.Get("webhook-signature"))
		}
	case <-ctx.Done():
		t.Fatal("the Test button's message never reached the receiver")
	}
	testsvc.Eventually(t, 30*time.Second, "the test's outcome on the page", func() (bool, error) {
		flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
		return strings.Contains(flash, "Test message delivered"), err
	})
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, "notifications-phone.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot (phone) of the Notifications page: %s", path)
}

// count runs a count query on the system's database.
func (s *system) count(query string) int {
	s.t.Helper()
	var n int
	if err := s.db.QueryRow(context.Background(), query).Scan(&n); err != nil {
		s.t.Fatal(err)
	}
	return n
}

package renderer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/portalwatch/portalwatch/internal/urlnorm"
	"github.com/portalwatch/portalwatch/internal/watch"
)

type targetParams = target.CreateBrowserContextParams

// errDOMTooLarge is the error of a DOM over MaxDOMBytes.
var errDOMTooLarge = errors.New("the rendered DOM is larger than the renderer's cap")

// hardening runs before any script of the page: what the flags cannot
// turn off, the page cannot find. Service workers would outlive the page;
// WebRTC reaches the network around the proxy; window.open is refused by
// --block-new-web-contents too.
const hardening = `(() => {
  const gone = (o, k) => { try { Object.defineProperty(o, k, {value: undefined, configurable: false}); } catch (e) {} };
  gone(Navigator.prototype, 'serviceWorker');
  for (const k of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel', 'WebTransport']) gone(window, k);
  window.open = () => null;
})();`

// blockedTypes are the resources no link list needs.
var blockedTypes = map[network.ResourceType]bool{
	network.ResourceTypeImage: true, network.ResourceTypeMedia: true, network.ResourceTypeFont: true,
	network.ResourceTypeTextTrack: true, network.ResourceTypePing: true, network.ResourceTypeManifest: true,
	network.ResourceTypePrefetch: true, network.ResourceTypeCSPViolationReport: true, network.ResourceTypeSignedExchange: true,
}

// tab is the state of one page in the browser, fed by its events.
type tab struct {
	r      *Renderer
	sess   *session
	ctx    context.Context // the tab's, for the answers to paused requests
	navURL string
	doc    watch.FetchResult
	// headers are the page's request headers in clear, which the page's
	// own site gets on every request of the page (site is its host).
	headers  []watch.Header
	site     string
	served   atomic.Bool
	requests atomic.Int32

	mu       sync.Mutex
	frame    string // the main frame's id, once the tab is open
	inflight map[network.RequestID]bool
	last     time.Time // last network activity
	loaded   bool
}

// page renders doc in a new tab of b whose browser context sends its
// traffic to sess, and returns the DOM. The requests of the page to its
// own site carry headers. ctx bounds it all.
func (r *Renderer) page(ctx context.Context, b *browser, sess *session, pageURL *url.URL, doc watch.FetchResult, waitFor string,
	headers []watch.Header) (string, error) {
	began := time.Now()
	tabCtx, cancelTab := chromedp.NewContext(b.ctx, contextThrough(sess))
	defer func() {
		closing := time.Now()
		cancelTab()
		r.log.Debug("tab closed", "url", pageURL.String(), "close_ms", time.Since(closing).Milliseconds(), "total_ms", time.Since(began).Milliseconds())
	}()
	nav := *pageURL
	nav.Fragment = ""
	runCtx, cancel := context.WithCancel(tabCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	t := &tab{r: r, sess: sess, ctx: runCtx, navURL: nav.String(), doc: doc, headers: headers, site: pageURL.Host,
		inflight: map[network.RequestID]bool{}, last: time.Now()}
	// The target is made on the first call, with the tab's own context,
	// so that the deadline does not close it under chromedp.
	created := make(chan error, 1)
	go func() { created <- chromedp.Listen(tabCtx, t.event) }()
	select {
	case err := <-created:
		if err != nil {
			return "", fmt.Errorf("open a tab: %w", err)
		}
	case <-ctx.Done():
		return "", fmt.Errorf("open a tab: %w", ctx.Err())
	}
	c := chromedp.FromContext(tabCtx)
	t.mu.Lock()
	t.frame = string(c.Target.TargetID)
	t.mu.Unlock()
	r.log.Debug("tab opened", "url", pageURL.String(), "open_ms", time.Since(began).Milliseconds())
	if _, err := chromedp.CallBrowser(runCtx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
		Behavior: cdpbrowser.SetDownloadBehaviorBehaviorDeny, BrowserContextID: c.BrowserContextID}); err != nil {
		return "", fmt.Errorf("turn downloads off: %w", deadline(ctx, err))
	}
	steps := []func() error{
		func() error { _, err := chromedp.Call(runCtx, network.Enable, network.EnableParams{}); return err },
		func() error {
			_, err := chromedp.Call(runCtx, network.SetBypassServiceWorker, network.SetBypassServiceWorkerParams{Bypass: true})
			return err
		},
		func() error {
			_, err := chromedp.Call(runCtx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: hardening})
			return err
		},
		func() error {
			_, err := chromedp.Call(runCtx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
			return err
		},
		func() error { _, err := chromedp.Call(runCtx, page.Enable, page.EnableParams{}); return err },
		func() error {
			_, err := chromedp.Call(runCtx, page.Navigate, page.NavigateParams{URL: t.navURL})
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return "", fmt.Errorf("load the page: %w", deadline(ctx, err))
		}
	}
	how := t.settle(runCtx, ctx, waitFor)
	t.mu.Lock()
	inflight, loaded := len(t.inflight), t.loaded
	t.mu.Unlock()
	r.log.Debug("page settled", "url", t.navURL, "elapsed_ms", time.Since(began).Milliseconds(), "how", how, "loaded", loaded, "in_flight", inflight, "requests", t.requests.Load())
	return t.dom(runCtx, ctx)
}

// deadline names the page's deadline when it is what stopped err.
func deadline(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the page did not finish within the renderer's deadline: %w", ctx.Err())
	}
	return err
}

// settle waits for waitFor to match, or for the page to be loaded and its
// network idle for Idle, until a reserve before the deadline of ctx; past
// it the DOM is read as it is.
func (t *tab) settle(runCtx, ctx context.Context, waitFor string) string {
	reserve := min(t.r.cfg.PageTimeout/4, 5*time.Second)
	end := time.Now().Add(t.r.cfg.PageTimeout - reserve)
	if d, ok := ctx.Deadline(); ok && d.Add(-reserve).Before(end) {
		end = d.Add(-reserve)
	}
	sel, _ := json.Marshal(waitFor)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(end) {
		select {
		case <-runCtx.Done():
			return "stopped"
		case <-tick.C:
		}
		if waitFor != "" {
			found, err := chromedp.Run(runCtx, chromedp.Evaluate[bool](fmt.Sprintf("document.querySelector(%s) !== null", sel)))
			if err == nil && found {
				return "selector"
			}
			continue
		}
		t.mu.Lock()
		idle := t.loaded && len(t.inflight) == 0 && time.Since(t.last) >= t.r.cfg.Idle
		t.mu.Unlock()
		if idle {
			return "idle"
		}
	}
	return "deadline"
}

// domResult is what the page's DOM read returns: the HTML, or only its
// length when it is over the cap.
type domResult struct {
	Length int    `json:"length"`
	HTML   string `json:"html"`
}

// dom reads the document as HTML, refusing one over MaxDOMBytes without
// sending it.
func (t *tab) dom(runCtx, ctx context.Context) (string, error) {
	expr := fmt.Sprintf(`(() => {
  const d = document.documentElement;
  const h = d ? '<!DOCTYPE html>' + d.outerHTML : '';
  return h.length > %d ? {length: h.length, html: ''} : {length: h.length, html: h};
})()`, t.r.cfg.MaxDOMBytes)
	res, err := chromedp.Run(runCtx, chromedp.Evaluate[domResult](expr))
	if err != nil {
		return "", fmt.Errorf("read the DOM: %w", deadline(ctx, err))
	}
	if res.Length > t.r.cfg.MaxDOMBytes || len(res.HTML) > t.r.cfg.MaxDOMBytes {
		return "", fmt.Errorf("%w (%d bytes): %d characters", errDOMTooLarge, t.r.cfg.MaxDOMBytes, res.Length)
	}
	return res.HTML, nil
}

// event is the tab's listener: it must return at once, so each paused
// request is answered from a goroutine.
func (t *tab) event(ev any) {
	switch ev := ev.(type) {
	case *fetch.EventRequestPaused:
		go t.decide(ev)
	case *network.EventRequestWillBeSent:
		t.activity(ev.RequestID, true)
	case *network.EventLoadingFinished:
		t.activity(ev.RequestID, false)
	case *network.EventLoadingFailed:
		t.activity(ev.RequestID, false)
	case *page.EventLoadEventFired:
		t.mu.Lock()
		t.loaded = true
		t.mu.Unlock()
	}
}

func (t *tab) activity(id network.RequestID, started bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = time.Now()
	if started {
		if len(t.inflight) < 10_000 {
			t.inflight[id] = true
		}
		return
	}
	delete(t.inflight, id)
}

// decide answers one paused request: the page's document is the one the
// crawler's fetcher fetched; every other request passes the policy or is
// failed.
func (t *tab) decide(ev *fetch.EventRequestPaused) {
	ctx := t.ctx
	t.mu.Lock()
	main := string(ev.FrameID) == t.frame
	t.mu.Unlock()
	if ev.ResourceType == network.ResourceTypeDocument && main && !t.served.Load() &&
		strings.TrimSuffix(ev.Request.URL, "#"+ev.Request.URLFragment) == t.navURL {
		t.served.Store(true)
		status := int64(t.doc.Status)
		if status < 200 || status > 299 {
			status = 200
		}
		chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{ //nolint:errcheck // a closed tab ends the page anyway
			RequestID: ev.RequestID, ResponseCode: status,
			ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}},
			Body:            t.doc.HTML,
		})
		return
	}
	if why := t.refusal(ev, main); why != "" {
		t.sess.refused.Add(1)
		t.r.log.Debug("browser request refused", "url", ev.Request.URL, "type", ev.ResourceType, "reason", why)
		chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient}) //nolint:errcheck // as above
		return
	}
	chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID, Headers: t.withHeaders(ev)}) //nolint:errcheck // as above
}

// withHeaders returns the headers of a request of the page to its own
// site with the page's request headers over them (a members' site answers
// its scripts' requests only with the page's cookie), nil for a request
// elsewhere, which goes as the browser made it. Set here, below the page,
// a cookie never reaches the page's scripts (document.cookie) nor another
// site.
func (t *tab) withHeaders(ev *fetch.EventRequestPaused) []*fetch.HeaderEntry {
	if len(t.headers) == 0 || !urlnorm.SameSite(t.site, ev.Request.URL) {
		return nil
	}
	out := make([]*fetch.HeaderEntry, 0, len(ev.Request.Headers)+len(t.headers))
	for name, v := range ev.Request.Headers {
		if slices.ContainsFunc(t.headers, func(h watch.Header) bool { return strings.EqualFold(h.Name, name) }) {
			continue
		}
		if s, ok := v.(string); ok {
			out = append(out, &fetch.HeaderEntry{Name: name, Value: s})
		}
	}
	for _, h := range t.headers {
		out = append(out, &fetch.HeaderEntry{Name: h.Name, Value: h.Value})
	}
	return out
}

// refusal says why a request is refused, "" when it may go to the proxy.
func (t *tab) refusal(ev *fetch.EventRequestPaused, main bool) string {
	u, err := url.Parse(ev.Request.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss"):
		return "not an http(s) URL"
	case ev.ResourceType == network.ResourceTypeDocument && main:
		return "a navigation away from the page"
	case blockedTypes[ev.ResourceType]:
		return "a resource type no link needs"
	case !t.sess.admits(u.Hostname(), portOf(u)):
		return "outside the page's site"
	case int(t.requests.Add(1)) > t.r.cfg.MaxRequests:
		return "over the page's request cap"
	}
	return ""
}

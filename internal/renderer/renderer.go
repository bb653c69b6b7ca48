// Package renderer checks pages that need JavaScript: it loads each in
// headless Chromium, in a fresh browser context of its own, waits for the
// network to go idle (or for the page's wait-for selector), and returns the
// DOM the page's scripts built as the page's HTML. It is a crawler.Fetcher:
// the crawler's code turns that HTML into a task exactly as it does a
// fetched body, so regions, rules, headlines and removals work unchanged.
//
// The document itself is fetched by the crawler's own fetcher (robots.txt,
// the origin's politeness budget, the page's headers, caps, SSRF guard) and
// handed to the browser; every other request of the browser goes through
// the renderer's proxy, which dials with the same guard. Images, media and
// fonts are refused, subresources capped in count and bytes, hosts outside
// the page's site refused unless allowed, navigations away, popups,
// downloads, service workers and WebRTC off.
package renderer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// Documents fetches a page's document (fetch.Client).
type Documents interface {
	Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error)
}

// Renderer renders pages; it is safe for concurrent use by up to
// Config.Tabs callers at once (more wait for a tab). Start its watchdog
// with Run; Close kills its browser.
type Renderer struct {
	cfg     Config
	docs    Documents
	log     *slog.Logger
	proxy   *proxy
	deny    *session // the browser-wide proxy: admits nothing
	tabs    chan struct{}
	metrics metrics

	mu     sync.Mutex
	cur    *browser
	closed bool
}

type metrics struct {
	renders   *prometheus.CounterVec
	seconds   prometheus.Histogram
	restarts  *prometheus.CounterVec
	rss       prometheus.Gauge
	refused   prometheus.Counter
	domBytes  prometheus.Histogram
	tabsInUse prometheus.Gauge
}

// New returns a Renderer for cfg with its defaults applied; it starts no
// browser until the first page. Its metrics are registered with reg.
func New(cfg Config, docs Documents, log *slog.Logger, reg prometheus.Registerer) (*Renderer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("renderer: %w", err)
	}
	if cfg.DialGuard == nil {
		return nil, errors.New("renderer: no DialGuard: its proxy would dial any address")
	}
	addrs, _ := cfg.allowedAddrs()
	r := &Renderer{cfg: cfg, docs: docs, log: log, tabs: make(chan struct{}, cfg.Tabs)}
	r.proxy = newProxy(cfg.DialGuard(cfg.AllowPrivate, addrs), cfg.allowedHosts(), log)
	deny, err := r.proxy.open(proxyPolicy{})
	if err != nil {
		return nil, err
	}
	r.deny = deny
	if n := sweepProfiles(); n > 0 {
		log.Info("removed the browser profiles of renderers that are gone", "count", n)
	}
	r.metrics = metrics{
		renders: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_renderer_renders_total", Help: "Pages rendered, by outcome.",
		}, []string{"outcome"}),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "portalwatch_renderer_render_seconds", Help: "Time from navigation to DOM in hand.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "portalwatch_renderer_browser_restarts_total", Help: "Browsers replaced, by reason.",
		}, []string{"reason"}),
		rss: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "portalwatch_renderer_browser_rss_bytes", Help: "Resident memory of the browser's process tree.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "portalwatch_renderer_requests_refused_total",
			Help: "Browser requests refused: blocked types, outside the site, over a cap, or by the address guard.",
		}),
		domBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "portalwatch_renderer_dom_bytes", Help: "Size of the DOMs read.",
			Buckets: prometheus.ExponentialBuckets(1024, 4, 9),
		}),
		tabsInUse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "portalwatch_renderer_tabs_in_use", Help: "Pages in the browser now.",
		}),
	}
	reg.MustRegister(r.metrics.renders, r.metrics.seconds, r.metrics.restarts, r.metrics.rss, r.metrics.refused,
		r.metrics.domBytes, r.metrics.tabsInUse)
	return r, nil
}

// Run watches the browser's memory until ctx ends, then kills the browser.
func (r *Renderer) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Watch)
	defer t.Stop()
	defer r.Close()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.watch()
		}
	}
}

// watch replaces the browser when its process tree holds more than
// MaxRSS, or its process is gone.
func (r *Renderer) watch() {
	r.mu.Lock()
	b := r.cur
	r.mu.Unlock()
	if b == nil {
		r.metrics.rss.Set(0)
		return
	}
	rss := treeRSS(b.pid)
	r.metrics.rss.Set(float64(rss))
	switch {
	case rss > r.cfg.MaxRSS:
		r.log.Warn("browser over its memory limit: killed and replaced", "rss_bytes", rss, "limit_bytes", r.cfg.MaxRSS, "pid", b.pid)
		r.replace(b, "memory", fmt.Sprintf("the browser passed its memory limit (%d MiB)", r.cfg.MaxRSS>>20))
	case !b.alive():
		r.log.Warn("browser died: replaced", "pid", b.pid)
		r.replace(b, "died", "the browser died")
	}
}

// replace kills b, which the next page will not use.
func (r *Renderer) replace(b *browser, reason, why string) {
	r.mu.Lock()
	if r.cur == b {
		r.cur = nil
	}
	r.mu.Unlock()
	r.metrics.restarts.WithLabelValues(reason).Inc()
	b.kill(why)
}

// Close kills the browser and stops the proxy; pages in flight fail.
func (r *Renderer) Close() {
	r.mu.Lock()
	b := r.cur
	r.cur, r.closed = nil, true
	r.mu.Unlock()
	if b != nil {
		b.kill("")
	}
	r.deny.close()
}

// BrowserMemory returns the proportional set size, in bytes, of the
// current browser's process tree (what the watchdog compares with
// MaxRSS), 0 while no browser runs.
func (r *Renderer) BrowserMemory() int64 {
	r.mu.Lock()
	b := r.cur
	r.mu.Unlock()
	if b == nil {
		return 0
	}
	return treeRSS(b.pid)
}

// Health reports an error while the renderer cannot start a browser.
func (r *Renderer) Health() error {
	_, err := r.cfg.chromium()
	return err
}

// acquire returns the browser the next page runs in, starting one when
// there is none.
func (r *Renderer) acquire() (*browser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the renderer is stopping")
	}
	if r.cur == nil {
		b, err := startBrowser(r.cfg, r.deny.addr())
		if err != nil {
			return nil, err
		}
		r.log.Info("browser started", "pid", b.pid)
		r.cur = b
	}
	b := r.cur
	b.started++
	b.active++
	if b.started >= r.cfg.PagesPerBrowser {
		// Its last page: the next one starts a fresh browser.
		b.retired, r.cur = true, nil
		r.metrics.restarts.WithLabelValues("pages").Inc()
	}
	return b, nil
}

// release ends a page on b, killing a retired b after its last page.
func (r *Renderer) release(b *browser) {
	r.mu.Lock()
	b.active--
	done := b.retired && b.active == 0
	r.mu.Unlock()
	if done {
		b.kill("")
	}
}

type deliveriesKey struct{}

// WithDeliveries returns ctx carrying how many times the job being handled
// was delivered before (watch.Delivery.DeliveryCount): Fetch fails a page
// delivered MaxDeliveries times without rendering it, so that a page which
// kills the renderer ends as a failed check, not a loop.
func WithDeliveries(ctx context.Context, n int64) context.Context {
	return context.WithValue(ctx, deliveriesKey{}, n)
}

// Fetch fetches the page's document with Documents, renders it, and
// returns the result with the DOM as its HTML (Rendered set). The
// request's validators are not sent: a document unchanged may still build
// another DOM. A browser lost under the page (killed for memory, dead,
// hung) is replaced and the page rendered once more.
func (r *Renderer) Fetch(ctx context.Context, req watch.FetchRequest) (watch.FetchResult, error) {
	if n, _ := ctx.Value(deliveriesKey{}).(int64); n >= int64(r.cfg.MaxDeliveries) {
		r.metrics.renders.WithLabelValues("given_up").Inc()
		return watch.FetchResult{FetchedAt: time.Now().UTC()}, fmt.Errorf("%s: the renderer stopped %d times while it rendered this page "+
			"(killed, crashed or out of memory); the page is not rendered again before its next check", req.URL, n)
	}
	up, err := r.upstream(req)
	if err == nil {
		// The page's list was checked at registration; a job from
		// elsewhere is checked again rather than trusted.
		req.RenderAllow, err = watch.NormalizeRenderAllow(req.RenderAllow)
		if err != nil {
			err = fmt.Errorf("%s: the page's hosts allowed beyond its site: %w", req.URL, err)
		}
	}
	if err != nil {
		r.metrics.renders.WithLabelValues("failed").Inc()
		return watch.FetchResult{FetchedAt: time.Now().UTC()}, err
	}
	req.ETag, req.LastModified, req.BodyDigest = "", "", ""
	doc, err := r.docs.Fetch(ctx, req)
	if err != nil || doc.NotModified || doc.SameBody {
		return doc, err
	}
	select {
	case r.tabs <- struct{}{}:
	case <-ctx.Done():
		return doc, fmt.Errorf("%s: no tab free before the check's deadline: %w", req.URL, ctx.Err())
	}
	r.metrics.tabsInUse.Inc()
	defer func() { <-r.tabs; r.metrics.tabsInUse.Dec() }()
	var dom string
	for attempt := 0; ; attempt++ {
		dom, err = r.renderOnce(ctx, req, doc, up)
		if !errors.Is(err, errBrowserLost) || attempt > 0 || ctx.Err() != nil {
			break
		}
		r.log.Info("browser lost under a page: rendering it again in a new one", "url", req.URL, "err", err)
	}
	if err != nil {
		r.metrics.renders.WithLabelValues(outcome(err)).Inc()
		return doc, fmt.Errorf("%s: render: %w", req.URL, err)
	}
	r.metrics.renders.WithLabelValues("ok").Inc()
	r.metrics.domBytes.Observe(float64(len(dom)))
	doc.HTML, doc.Rendered, doc.BodyDigest, doc.Charset = []byte(dom), true, "", "utf-8"
	if doc.Capture != nil {
		doc.Capture.Rendered = doc.HTML
	}
	return doc, nil
}

// upstream returns the proxy the page's subresources go through, nil for
// a page without one; a proxy this renderer cannot send through fails the
// check (watch.FetchProxy) before anything is sent.
func (r *Renderer) upstream(req watch.FetchRequest) (Upstream, error) {
	if req.Proxy == "" {
		return nil, nil
	}
	if r.cfg.Proxies == nil {
		return nil, &watch.FetchError{Kind: watch.FetchProxy, URL: req.URL,
			Err: fmt.Errorf("the page names proxy %s, and this renderer was given no proxies to send its browser's requests through", req.Proxy)}
	}
	up, err := r.cfg.Proxies(req.Proxy)
	if err != nil {
		var fe *watch.FetchError
		if errors.As(err, &fe) && fe.URL == "" {
			named := *fe
			named.URL = req.URL
			return nil, &named
		}
		return nil, fmt.Errorf("%s: %w", req.URL, err)
	}
	return up, nil
}

func outcome(err error) string {
	switch {
	case errors.Is(err, errBrowserLost):
		return "browser_lost"
	case errors.Is(err, errDOMTooLarge):
		return "too_large"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "failed"
}

// renderOnce renders doc in a tab of the current browser. A hung browser
// (the page's goroutine still busy a grace period past the deadline) is
// killed, which ends the goroutine.
func (r *Renderer) renderOnce(ctx context.Context, req watch.FetchRequest, doc watch.FetchResult, up Upstream) (string, error) {
	b, err := r.acquire()
	if err != nil {
		return "", fmt.Errorf("%w: %v", errBrowserLost, err)
	}
	defer r.release(b)
	pageURL := doc.FinalURL
	if pageURL == nil {
		if pageURL, err = url.Parse(req.URL); err != nil {
			return "", err
		}
	}
	sess, err := r.proxy.open(proxyPolicy{site: pageURL.Host, maxBytes: r.cfg.MaxBytes, upstream: up, allow: req.RenderAllow})
	if err != nil {
		return "", err
	}
	defer func() {
		sess.close()
		r.metrics.refused.Add(float64(sess.refused.Load()))
	}()
	type outcome struct {
		dom string
		err error
	}
	done := make(chan outcome, 1)
	pageCtx, cancel := context.WithTimeout(ctx, r.cfg.PageTimeout)
	defer cancel()
	start := time.Now()
	go func() {
		dom, err := r.page(pageCtx, b, sess, pageURL, doc, req.WaitFor, req.Header)
		done <- outcome{dom, err}
	}()
	grace := time.NewTimer(r.cfg.PageTimeout + 5*time.Second)
	defer grace.Stop()
	select {
	case o := <-done:
		r.metrics.seconds.Observe(time.Since(start).Seconds())
		if o.err != nil && (b.lostReason() != "" || !b.alive()) {
			why := b.lostReason()
			if why == "" {
				why = "the browser died"
				r.replace(b, "died", why)
			}
			return "", fmt.Errorf("%w: %s", errBrowserLost, why)
		}
		return o.dom, o.err
	case <-grace.C:
		r.log.Warn("browser hung on a page: killed and replaced", "url", req.URL, "pid", b.pid)
		r.replace(b, "hung", "the browser hung")
		<-done
		return "", fmt.Errorf("%w: the browser hung", errBrowserLost)
	}
}

// The chromedp context option of a page's own browser context, whose
// traffic goes to sess.
func contextThrough(sess *session) chromedp.ContextOption {
	return chromedp.WithNewBrowserContext(func(p *targetParams) {
		p.ProxyServer = sess.addr()
		p.ProxyBypassList = "<-loopback>"
	})
}

package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Discoverer finds the feeds and sitemaps a page offers, fetching through
// the crawler's client and its guard (package discover with package fetch).
type Discoverer interface {
	Discover(ctx context.Context, pageURL string) (discover.Result, error)
}

// Discovery's bounds: each makes up to a dozen fetches of other people's
// servers on a token's behalf, so a token gets a few a minute, and the
// program runs a few at once.
const (
	discoveriesPerMinute = 6
	discoveriesAtOnce    = 4
	// DiscoverBudget is a discovery's time: the page, its feeds and the
	// sitemaps robots.txt names, one fetch a second per origin.
	DiscoverBudget = 30 * time.Second
)

// discoveryLimiter counts each token's discoveries in the current minute
// and the discoveries running. It is the web program's own: with several
// web programs a token gets the rate of each.
type discoveryLimiter struct {
	mu      sync.Mutex
	minute  time.Time
	counts  map[string]int
	running int
}

// errDiscoveryRate and errDiscoveryBusy say why a discovery is refused.
var (
	errDiscoveryRate = fmt.Errorf("this token ran %d discoveries in the last minute, the most allowed; try again in a minute", discoveriesPerMinute)
	errDiscoveryBusy = fmt.Errorf("%d discoveries are running, the most at once; try again in a few seconds", discoveriesAtOnce)
)

// take admits one discovery of token at now, or says why not; done ends
// it.
func (l *discoveryLimiter) take(token string, now time.Time) (done func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := now.Truncate(time.Minute); !m.Equal(l.minute) {
		l.minute, l.counts = m, map[string]int{}
	}
	switch {
	case l.counts[token] >= discoveriesPerMinute:
		return nil, errDiscoveryRate
	case l.running >= discoveriesAtOnce:
		return nil, errDiscoveryBusy
	}
	l.counts[token]++
	l.running++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		l.running--
		l.mu.Unlock()
	}), nil
}

// discover runs one discovery of raw for the request's token, after the
// registration guard (the crawler refuses what it refuses). status is the
// HTTP status a failure earns.
func (s *Server) discover(r *http.Request, raw string) (res discover.Result, status int, err error) {
	raw = strings.TrimSpace(raw)
	if s.deps.Discoverer == nil {
		return res, http.StatusServiceUnavailable, errors.New("discovery is not configured on this web program")
	}
	if raw == "" {
		return res, http.StatusBadRequest, errors.New("give the address of the page to look at, such as https://www.example-news.com/")
	}
	if err := s.cfg.Policy.GuardURL(r.Context(), raw); err != nil {
		return res, http.StatusBadRequest, err
	}
	tok, _ := tokenOf(r)
	done, err := s.discoveries.take(tok.Name, time.Now())
	if err != nil {
		return res, http.StatusTooManyRequests, err
	}
	defer done()
	res, err = s.deps.Discoverer.Discover(r.Context(), raw)
	if err != nil {
		return res, http.StatusBadGateway, fmt.Errorf("%s could not be read: %w", raw, err)
	}
	return res, http.StatusOK, nil
}

type discoverJSON struct {
	URL string `json:"url"`
}

func (s *Server) apiDiscover(w http.ResponseWriter, r *http.Request) {
	var in discoverJSON
	if !s.decodeJSON(w, r, &in) {
		return
	}
	res, status, err := s.discover(r, in.URL)
	if err != nil {
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "60")
		}
		s.problem(w, r, status, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// discoverView is the page that lists what a discovery found, with the
// form to watch the page.
type discoverView struct {
	view
	Form   pageForm
	Result discover.Result
	Error  string
}

func (s *Server) uiDiscover(w http.ResponseWriter, r *http.Request) {
	raw := r.PostFormValue("url")
	v := discoverView{view: s.viewOf(r, "Feeds and sitemaps", "pages"), Form: s.withProxies(pageForm{URL: strings.TrimSpace(raw),
		Interval: watch.FormatDuration(watch.DefaultInterval), Enabled: true, BurstDetection: true, Articles: true})}
	res, status, err := s.discover(r, raw)
	if err != nil {
		v.Error = err.Error()
		s.render(w, r, status, "discover", v)
		return
	}
	v.Result = res
	s.render(w, r, http.StatusOK, "discover", v)
}

package crawler

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// HostGate caps the checks of one origin in flight across all crawlers.
type HostGate interface {
	// Enter admits a check of origin, or says the origin is full; leave
	// ends the admission, and lease bounds it if leave is never called.
	Enter(ctx context.Context, origin string, lease time.Duration) (leave func(), ok bool)
}

// DefaultBusyDelay is Config.BusyDelay's default.
const DefaultBusyDelay = 5 * time.Second

// enter admits the check of pageURL through the configured gate. When the
// origin is full it returns the time the check is deferred to: BusyDelay
// plus up to as much again at random, so that the checks turned away
// together do not all come back together.
func (s *Service) enter(ctx context.Context, pageURL string) (leave func(), deferTo time.Time) {
	origin, ok := originOf(pageURL)
	if s.cfg.Gate == nil || !ok {
		return func() {}, time.Time{}
	}
	// The check deadline ends the check's talk with the origin; the margin
	// covers a leave that is late because the crawler is busy.
	leave, admitted := s.cfg.Gate.Enter(ctx, origin, s.cfg.CheckTimeout+5*time.Second)
	if !admitted {
		delay := s.cfg.BusyDelay + rand.N(s.cfg.BusyDelay)
		return func() {}, time.Now().Add(delay)
	}
	return leave, time.Time{}
}

// originOf returns the scheme and host of raw, the unit that robots.txt and
// the host gate are kept by, and whether raw has one.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), true
}

// deferredUntil reports whether the fetcher put the check off rather than
// let a politeness wait hold a worker, and until when.
func deferredUntil(err error) (time.Time, bool) {
	var fe *watch.FetchError
	if errors.As(err, &fe) && fe.Kind == watch.FetchDeferred {
		return fe.RetryAt, true
	}
	return time.Time{}, false
}

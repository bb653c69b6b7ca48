package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/temoto/robotstxt"
)

// Robots.txt policy (RFC 9309, with the choices below):
//
//   - 2xx: the file is parsed and the group for our product token (or "*")
//     applies, with its Crawl-delay capped at Config.MaxCrawlDelay.
//   - 4xx (401 and 403 included): no robots.txt, everything is allowed
//     (RFC 9309 §2.3.1.3, and what Google does).
//   - 5xx, a network error, a timeout or too many redirects: everything is
//     allowed, and the answer is kept for only RobotsTTL/12 so that the
//     file is asked for again soon. RFC 9309 §2.3.1.4 says to assume a
//     complete disallow instead, so that a crawler backs off an
//     overloaded server. portalwatch sends one request per page per check
//     interval, the load that rule protects against does not arise, and a
//     disallow would record "disallowed by robots.txt" against pages whose
//     real problem (the server is down) the page fetch itself reports
//     better. Some servers also answer 5xx for /robots.txt forever, and a
//     disallow would silence their pages for good. When a robots.txt was
//     fetched before, its rules stay in force through such failures.
//   - A file that does not parse even after dropping the lines that break
//     the parser allows everything.

// robotsRules is the part of a robots.txt that applies to us. The zero
// value allows everything, the policy when there is no usable robots.txt.
type robotsRules struct {
	group *robotstxt.Group // nil allows everything
	delay time.Duration    // capped Crawl-delay, 0 for none
	// sitemaps are the Sitemap lines, at most MaxRobotsSitemaps.
	sitemaps []string
}

// MaxRobotsSitemaps is how many Sitemap lines of a robots.txt are kept.
const MaxRobotsSitemaps = 50

func (r *robotsRules) allows(path string) bool {
	return r.group == nil || r.group.Test(path)
}

// robotsEntry is one origin's cached robots.txt. done is closed once rules,
// good and expires are set; until then the entry marks a fetch in flight,
// which other callers wait for rather than fetching too.
type robotsEntry struct {
	done    chan struct{}
	rules   *robotsRules // nil when the fetch was abandoned
	good    bool         // rules came from an answer (2xx or 4xx), not a failure
	expires time.Time
}

// robotsCache holds robots.txt rules per origin. It
// is bounded (Config.RobotsCacheSize origins; when full, expired entries go
// first, then arbitrary ones) and safe for concurrent use.
type robotsCache struct {
	client *Client
	ttl    time.Duration
	errTTL time.Duration
	size   int

	mu      sync.Mutex
	entries map[string]*robotsEntry
}

func newRobotsCache(c *Client, cfg Config) *robotsCache {
	return &robotsCache{
		client:  c,
		ttl:     cfg.RobotsTTL,
		errTTL:  cfg.RobotsTTL / 12,
		size:    cfg.RobotsCacheSize,
		entries: make(map[string]*robotsEntry),
	}
}

// originOf returns u's scheme and host, the key of robots.txt and pacing.
func originOf(u *url.URL) string { return u.Scheme + "://" + strings.ToLower(u.Host) }

// obeyRobots returns a KindDisallowed *Error when robots.txt forbids u, and
// otherwise the origin's Crawl-delay (0 for none). The wait for robots.txt
// ends with ctx.
func (c *Client) obeyRobots(ctx context.Context, rt *route, raw string, u *url.URL) (time.Duration, error) {
	origin := originOf(u)
	rules, err := c.robots.rules(ctx, rt, origin)
	if err != nil {
		return 0, c.waitError(ctx, raw, fmt.Errorf("waiting for %s/robots.txt: %w", origin, err))
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if !rules.allows(path) {
		return 0, &Error{Kind: KindDisallowed, URL: raw,
			Err: fmt.Errorf("disallowed by %s/robots.txt for %q", origin, c.agent)}
	}
	return rules.delay, nil
}

// waitError reports a wait that ctx ended.
func (c *Client) waitError(ctx context.Context, raw string, err error) *Error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return &Error{Kind: KindCanceled, URL: raw, Err: err}
	}
	return &Error{Kind: KindTimeout, URL: raw, Err: err}
}

// rules returns origin's robots.txt rules as read along rt, fetching them
// when they are not cached or have expired. Only one fetch per origin and
// route runs at a time; other callers wait for it. It fails only when ctx
// ends.
func (rc *robotsCache) rules(ctx context.Context, rt *route, origin string) (*robotsRules, error) {
	key := rt.robotsKey(origin)
	for {
		rc.mu.Lock()
		e := rc.entries[key]
		var prev *robotsEntry
		if e != nil {
			select {
			case <-e.done:
				if e.rules != nil && rc.client.now().Before(e.expires) {
					rc.mu.Unlock()
					return e.rules, nil
				}
				prev = e
			default:
				rc.mu.Unlock()
				select {
				case <-e.done:
					continue // fetched, or abandoned by its caller: look again
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		if prev == nil {
			rc.makeRoomLocked()
		}
		ne := &robotsEntry{done: make(chan struct{})}
		rc.entries[key] = ne
		rc.mu.Unlock()

		rules, good, err := rc.client.fetchRobots(ctx, rt, origin)

		rc.mu.Lock()
		switch {
		case err != nil:
			// Our caller gave up; let the next one fetch.
			if rc.entries[key] == ne {
				if prev != nil {
					rc.entries[key] = prev
				} else {
					delete(rc.entries, origin)
				}
			}
		case good:
			ne.rules, ne.good, ne.expires = rules, true, rc.client.now().Add(rc.ttl)
		case prev != nil && prev.good:
			// Keep the last rules we had through a failure.
			ne.rules, ne.good, ne.expires = prev.rules, true, rc.client.now().Add(rc.errTTL)
		default:
			ne.rules, ne.expires = rules, rc.client.now().Add(rc.errTTL)
		}
		rc.mu.Unlock()
		close(ne.done)
		if err != nil {
			return nil, err
		}
		return ne.rules, nil
	}
}

// makeRoomLocked evicts entries while the cache is full: expired ones
// first, then arbitrary finished ones (map order is random enough).
func (rc *robotsCache) makeRoomLocked() {
	if len(rc.entries) < rc.size {
		return
	}
	now := rc.client.now()
	for k, e := range rc.entries {
		select {
		case <-e.done:
			if !now.Before(e.expires) {
				delete(rc.entries, k)
			}
		default:
		}
	}
	for k, e := range rc.entries {
		if len(rc.entries) < rc.size {
			break
		}
		select {
		case <-e.done:
			delete(rc.entries, k)
		default:
		}
	}
}

// fetchRobots fetches and parses origin's robots.txt through the guarded
// client. good reports whether the server answered (2xx or 4xx); failures
// are logged and allow everything (see the policy above). err is set only
// when ctx ended.
func (c *Client) fetchRobots(ctx context.Context, rt *route, origin string) (rules *robotsRules, good bool, err error) {
	robotsURL := origin + "/robots.txt"
	log := c.cfg.Logger.With(slog.String("url", robotsURL))
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		log.Warn("robots.txt request", slog.Any("error", err))
		return &robotsRules{}, false, nil
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "text/plain, */*;q=0.1")
	req.Header.Set("Accept-Encoding", acceptEncoding)
	resp, err := rt.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		log.Info("robots.txt unreachable; allowing all", slog.Any("error", err))
		return &robotsRules{}, false, nil
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		body, err := readBody(resp.Body, resp.Header.Get("Content-Encoding"), c.cfg.RobotsMaxBytes, true, 0)
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			log.Info("robots.txt unreadable; allowing all", slog.Any("error", err))
			return &robotsRules{}, false, nil
		}
		clean, cut := sanitizeRobots(body)
		if cut.rules > 0 || cut.wildcards > 0 {
			log.Info("robots.txt rules over the caps ignored",
				slog.Int("over_rule_cap", cut.rules), slog.Int("over_wildcard_cap", cut.wildcards),
				slog.Int("max_rules_per_group", MaxRobotsRules), slog.Int("max_wildcards_per_rule", MaxRobotsWildcards))
		}
		data, err := robotstxt.FromBytes(clean)
		if err != nil {
			log.Info("robots.txt does not parse; allowing all", slog.Any("error", err))
			return &robotsRules{}, true, nil
		}
		g := data.FindGroup(c.agent)
		delay := g.CrawlDelay
		if delay < 0 || delay > c.cfg.MaxCrawlDelay {
			// Negative only when a huge value overflowed the parser's
			// conversion to a Duration.
			delay = c.cfg.MaxCrawlDelay
		}
		sitemaps := data.Sitemaps
		if len(sitemaps) > MaxRobotsSitemaps {
			sitemaps = sitemaps[:MaxRobotsSitemaps]
		}
		return &robotsRules{group: g, delay: delay, sitemaps: sitemaps}, true, nil
	case resp.StatusCode >= 400 && resp.StatusCode <= 499:
		return &robotsRules{}, true, nil
	default:
		log.Info("robots.txt failed; allowing all", slog.Int("status", resp.StatusCode))
		return &robotsRules{}, false, nil
	}
}

// Caps on the robots.txt rules kept, so that the cost of testing a URL is
// bounded whatever the file: every Allow and Disallow rule of the group is
// tried against every URL, and a rule with wildcards is a regular
// expression costing about 10 µs per "*" on a long path. A 494 KiB file of
// wildcard rules cost 1 s per fetch before; with these caps the worst file
// costs about 0.3 ms (BenchmarkRobotsTest). Rules past a cap are ignored,
// which allows what they would have disallowed; the drop is logged.
const (
	// MaxRobotsRules is how many Allow and Disallow rules of one group are
	// kept, in file order. Real sites stay far below it.
	MaxRobotsRules = 500
	// MaxRobotsWildcards is how many "*" the rules of one group may hold
	// together; a rule that would go past it is ignored.
	MaxRobotsWildcards = 100
)

// robotsCut counts the rules sanitizeRobots dropped for the caps.
type robotsCut struct {
	rules     int // past MaxRobotsRules in their group
	wildcards int // past MaxRobotsWildcards in their group
}

// sanitizeRobots drops the lines of a robots.txt that would make
// robotstxt.FromBytes reject the whole file: rules before the first
// User-agent line and Crawl-delay values that are not non-negative
// numbers. It also drops, and counts, the rules of a group past
// MaxRobotsRules or MaxRobotsWildcards. It makes the text valid
// UTF-8, since rule patterns are compiled as regular expressions.
// Everything else is kept as it is.
func sanitizeRobots(body []byte) ([]byte, robotsCut) {
	body = bytes.ToValidUTF8(body, []byte("\uFFFD"))
	var (
		out       bytes.Buffer
		cut       robotsCut
		seenAgent bool
		inRules   bool // a rule followed the group's User-agent lines
		rules     int  // rules kept in the current group
		stars     int  // wildcards in them
	)
	out.Grow(len(body))
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i+1], body[i+1:]
		} else {
			body = nil
		}
		text := line
		if i := bytes.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		key, value, ok := strings.Cut(string(text), ":")
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		if ok {
			switch key {
			case "user-agent":
				seenAgent = true
				if inRules {
					// A User-agent line after rules starts a new group.
					inRules, rules, stars = false, 0, 0
				}
			case "allow", "disallow", "crawl-delay", "crawldelay":
				if !seenAgent {
					continue
				}
				inRules = true
				if key == "crawl-delay" || key == "crawldelay" {
					f, err := strconv.ParseFloat(value, 64)
					if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
						continue
					}
					break
				}
				n := strings.Count(value, "*")
				switch {
				case rules >= MaxRobotsRules:
					cut.rules++
					continue
				case stars+n > MaxRobotsWildcards:
					cut.wildcards++
					continue
				}
				rules, stars = rules+1, stars+n
			}
		}
		out.Write(line)
	}
	return out.Bytes(), cut
}

// Sitemaps returns the sitemaps the robots.txt of pageURL's origin names
// (its Sitemap lines, at most MaxRobotsSitemaps), read through the same
// cache and guard as every fetch; none when it has no robots.txt.
func (c *Client) Sitemaps(ctx context.Context, pageURL, proxy string) ([]string, error) {
	u, err := parseURL(pageURL)
	if err != nil {
		return nil, err
	}
	rt, err := c.routeOf(pageURL, proxy)
	if err != nil {
		return nil, err
	}
	if err := c.checkTarget(ctx, rt, pageURL, u); err != nil {
		return nil, err
	}
	rules, err := c.robots.rules(ctx, rt, originOf(u))
	if err != nil {
		return nil, c.waitError(ctx, pageURL, fmt.Errorf("reading robots.txt: %w", err))
	}
	return rules.sitemaps, nil
}

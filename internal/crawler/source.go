package crawler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/portalwatch/portalwatch/internal/discover"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/sourceparse"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Discoverer lists the feeds and sitemaps of a page (discover.Discoverer,
// with the crawler's fetch client).
type Discoverer interface {
	// DiscoverThrough discovers through proxy, a name of the operator's
	// list ("" is direct).
	DiscoverThrough(ctx context.Context, pageURL, proxy string) (discover.Result, error)
}

// DefaultDiscoveryTimeout bounds one discovery: about twenty fetches of
// one origin, a spacing apart.
const DefaultDiscoveryTimeout = 2 * time.Minute

// discoverSources runs the job's discovery and returns its task: the
// feeds and news sitemaps found, of the kinds the page chose, at most
// watch.MaxDiscovered of them.
func (s *Service) discoverSources(ctx context.Context, job watch.Job) watch.Task {
	task := watch.Task{BaseURL: job.BaseURL, ID: job.ID, Context: []watch.Link{}, Discover: true}
	log := s.log.With("page_id", job.ID, "url", job.BaseURL)
	if s.cfg.Discoverer == nil {
		task.FetchedAt, task.Error = time.Now().UTC(), "this crawler cannot discover sources (no discoverer wired)"
		return task
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DiscoveryTimeout)
	defer cancel()
	res, err := s.cfg.Discoverer.DiscoverThrough(ctx, job.BaseURL, job.Proxy)
	task.FetchedAt = time.Now().UTC()
	if err != nil {
		task.Error = watch.CleanText(err.Error())
		s.metrics.checks.WithLabelValues("discovery_failed").Inc()
		log.Info("discovery failed", "err", task.Error)
		return task
	}
	feeds, sitemaps := false, false
	for _, c := range job.Sources {
		feeds = feeds || c == watch.SourcesFeeds
		sitemaps = sitemaps || c == watch.SourcesSitemaps
	}
	for _, f := range res.Sources {
		if len(task.Discovered) >= watch.MaxDiscovered {
			break
		}
		var kind string
		switch {
		case f.Kind == discover.KindFeed && feeds:
			kind = watch.SourceFeed
		case f.Kind == discover.KindNewsSitemap && sitemaps:
			kind = watch.SourceSitemap
		default:
			continue
		}
		task.Discovered = append(task.Discovered, watch.DiscoveredSource{Kind: kind, URL: f.URL, Title: watch.CleanText(f.Title)})
	}
	s.metrics.checks.WithLabelValues("discovered").Inc()
	log.Info("sources discovered", "found", len(res.Sources), "kept", len(task.Discovered))
	return task
}

// sourceHeaders are the page's headers a check of its source sends: all
// of them to the page's own origin, and to another (a feed hosted
// elsewhere) only those that are no secret, so that the page's cookie
// never reaches a host the page does not name.
func sourceHeaders(job watch.Job) []watch.Header {
	pageOrigin, ok := watch.Origin(job.PageURL)
	if sourceOrigin, _ := watch.Origin(job.BaseURL); ok && sourceOrigin == pageOrigin {
		return job.Headers
	}
	var out []watch.Header
	for _, h := range job.Headers {
		if !h.Secret() {
			out = append(out, h)
		}
	}
	return out
}

// checkSource fetches the job's feed or news sitemap and returns its task:
// its items as links (after the page's URL and keyword rules, within the
// caps of package sourceparse), unchanged when their digest is the job's,
// or the failure. leave ends the gate's admission.
func (s *Service) checkSource(ctx context.Context, job watch.Job, leave func()) watch.Task {
	start := time.Now()
	src := *job.Source
	log := s.log.With("page_id", job.ID, "source_id", src.ID, "url", src.URL)
	task := watch.Task{BaseURL: job.BaseURL, ID: job.ID, Context: []watch.Link{}, Source: &src}
	job.Headers = sourceHeaders(job)
	headers, err := s.openHeaders(job)
	if err != nil {
		leave()
		task.FetchedAt, task.Error = time.Now().UTC(), err.Error()
		return task
	}
	req := watch.FetchRequest{URL: src.URL, ETag: job.ETag, LastModified: job.LastModified,
		Want: watch.ContentFeed, Slot: job.Slot, Header: headers, Proxy: job.Proxy}
	lim := sourceparse.Limits{MaxTextRunes: s.cfg.Limits.MaxTextRunes}
	// A sitemap is read as it arrives, within the protocol's cap rather
	// than the body cap, holding what sourceparse.SitemapCost says: the
	// parse is done when the fetch is.
	var (
		streamed  *sourceparse.Result
		streamErr error
	)
	if src.Kind == watch.SourceSitemap {
		req.Want, req.MaxBytes = watch.ContentSitemap, s.cfg.SitemapMaxBytes
		req.Read = func(body io.Reader, final *url.URL) error {
			held, err := s.parsing.hold(ctx, sourceparse.SitemapCost(lim))
			if err != nil {
				return err
			}
			defer held()
			res, err := sourceparse.Sitemap(body, final, time.Now().UTC(), lim)
			streamed, streamErr = &res, err
			return nil
		}
	}
	fetchCtx, cancel := context.WithTimeout(ctx, s.cfg.CheckTimeout)
	res, err := s.fetcher.Fetch(fetchCtx, req)
	cancel()
	leave()
	defer func() { s.metrics.duration.Observe(time.Since(start).Seconds()) }()
	task.Status, task.FetchedAt = res.Status, res.FetchedAt
	if task.FetchedAt.IsZero() {
		task.FetchedAt = time.Now().UTC()
	}
	task.ETag, task.LastModified = watch.CleanText(res.ETag), watch.CleanText(res.LastModified)
	if until, ok := deferredUntil(err); ok {
		task.DeferredUntil = until
		s.metrics.checks.WithLabelValues("deferred").Inc()
		return task
	}
	if err != nil {
		task.Error = watch.CleanText(err.Error())
		s.metrics.checks.WithLabelValues("source_failed").Inc()
		log.Info("source fetch failed", "status", res.Status, "err", task.Error)
		return task
	}
	if res.NotModified {
		s.metrics.checks.WithLabelValues("source_not_modified").Inc()
		return task
	}
	base := res.FinalURL
	if base == nil {
		base, _ = url.Parse(src.URL)
	}
	var items sourceparse.Result
	if streamed != nil {
		items, err = *streamed, streamErr
	} else {
		// A parse holds the body and what is read of it: it takes its
		// place in the crawler's parse budget like a homepage's.
		parsed, gateErr := s.parsing.enterCost(ctx, sourceparse.Cost(src.Kind, len(res.Body)))
		if gateErr != nil {
			task.Error = fmt.Sprintf("stopped before parsing %s: %v", src.URL, gateErr)
			return task
		}
		items, err = sourceparse.Parse(src.Kind, res.Body, base, task.FetchedAt, lim)
		parsed()
	}
	if err != nil {
		task.Error = fmt.Sprintf("read %s: %v", src.URL, watch.CleanText(err.Error()))
		if errors.Is(err, sourceparse.ErrSitemapIndex) {
			task.Error = fmt.Sprintf("read %s: %v", src.URL, err)
		}
		s.metrics.checks.WithLabelValues("source_unreadable").Inc()
		log.Info("source unreadable", "err", task.Error)
		return task
	}
	links := filter(items.Links, job, s.patterns.compile(log, job).patternsOf())
	links, cut := fitTask(task, links, s.cfg.MaxTaskBytes)
	task.Truncated = items.Truncated + cut
	if task.Truncated > 0 {
		log.Info("source cut by a limit", "truncated", task.Truncated, "kept", len(links))
	}
	urls, texts := make([]string, len(links)), make([]string, len(links))
	for i, l := range links {
		urls[i], texts[i] = l.URL, l.Text
	}
	task.ItemsDigest = shortlink.SetDigest(urls, texts)
	if job.ItemsDigest != "" && task.ItemsDigest == job.ItemsDigest {
		task.Unchanged = true
		s.metrics.checks.WithLabelValues("source_unchanged").Inc()
		return task
	}
	task.Context = links
	s.metrics.checks.WithLabelValues("source_ok").Inc()
	log.Debug("source checked", "items", len(links), "skipped", items.Skipped, "elapsed_ms", time.Since(start).Milliseconds())
	return task
}

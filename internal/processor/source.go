package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// SourceRecorder records the checks of pages' feeds and news sitemaps and
// the discoveries of them (store.Store). A Recorder that is one too
// records source tasks; otherwise they are dead-lettered with the reason.
type SourceRecorder interface {
	RecordSourceCheck(ctx context.Context, c watch.SourceCheck, links []watch.NewLink) (watch.SourceRecorded, error)
	RecordDiscovery(ctx context.Context, pageID int64, found []watch.DiscoveredSource, failure string) error
	DeferSource(ctx context.Context, pageID, sourceID int64, until time.Time) error
}

// processSource records a task of a page's feed or sitemap, or of its
// discovery. PostgreSQL decides what is new, as for a homepage; the
// seen-set, which holds the homepage's texts, is neither asked nor filled,
// and the items digest spares the work of a feed whose items are the
// same.
func (s *Service) processSource(ctx context.Context, task watch.Task) (string, error) {
	sr, ok := s.store.(SourceRecorder)
	if !ok {
		return "rejected", watch.Permanent(errors.New("this processor's store records no sources"))
	}
	log := s.log.With("page_id", task.ID, "url", task.BaseURL)
	if task.Discover {
		found := make([]watch.DiscoveredSource, 0, min(len(task.Discovered), watch.MaxDiscovered))
		for _, f := range task.Discovered {
			if len(found) == watch.MaxDiscovered {
				break
			}
			if u := watch.CleanText(f.URL); u != "" && len(u) <= 2048 {
				found = append(found, watch.DiscoveredSource{Kind: f.Kind, URL: u, Title: watch.CleanText(f.Title)})
			}
		}
		err := s.retrySource(ctx, log, func() error { return sr.RecordDiscovery(ctx, task.ID, found, task.Error) })
		if outcome, err, done := sourceOutcome(log, err); done {
			return outcome, err
		}
		log.Info("discovery recorded", "sources", len(found), "err", task.Error)
		return "discovery", nil
	}
	src := *task.Source
	src.URL = watch.CleanText(src.URL)
	log = log.With("source_id", src.ID)
	if src.Kind != watch.SourceFeed && src.Kind != watch.SourceSitemap || src.ID <= 0 {
		return "rejected", watch.Permanent(fmt.Errorf("task of page %d names a source of kind %q, id %d: want feed or sitemap",
			task.ID, src.Kind, src.ID))
	}
	if !task.DeferredUntil.IsZero() {
		err := s.retrySource(ctx, log, func() error { return sr.DeferSource(ctx, task.ID, src.ID, task.DeferredUntil) })
		if outcome, err, done := sourceOutcome(log, err); done {
			return outcome, err
		}
		return "deferred", nil
	}
	c := watch.SourceCheck{
		PageID: task.ID, Source: src, FetchedAt: task.FetchedAt, Status: task.Status, Error: task.Error,
		ETag: watch.CleanText(task.ETag), LastModified: watch.CleanText(task.LastModified), Truncated: task.Truncated,
		NotModified: task.NotModified(), Caps: s.cfg.Caps, Articles: s.cfg.Articles,
	}
	if c.FetchedAt.IsZero() {
		c.FetchedAt = time.Now()
	}
	var links []watch.NewLink
	if !task.Failed() && !task.NotModified() {
		c.ItemsDigest = watch.CleanText(task.ItemsDigest)
		links = s.sourceLinks(task, c.FetchedAt)
	}
	var rec watch.SourceRecorded
	err := s.retrySource(ctx, log, func() error {
		var err error
		rec, err = sr.RecordSourceCheck(ctx, c, links)
		return err
	})
	if outcome, err, done := sourceOutcome(log, err); done {
		return outcome, err
	}
	switch {
	case task.Failed():
		log.Info("source check failed", "status", task.Status, "err", task.Error)
		return "source_failed", nil
	case task.NotModified():
		return "source_unchanged", nil
	case rec.Baseline:
		log.Info("source baseline recorded", "links", rec.Inserted)
		return "source_baseline", nil
	}
	if rec.Cut > 0 {
		s.metrics.cut.Add(float64(rec.Cut))
		log.Info("new links of a source cut by the page's caps; a later check records them if they stay", "cut", rec.Cut)
	}
	s.metrics.updates.Add(float64(len(rec.Updates)))
	if len(rec.Updates) > 0 {
		log.Info("new links", "count", len(rec.Updates), "source", src.Kind)
	}
	return "source_ok", nil
}

// sourceLinks returns the task's items to record, one per key, their
// texts cleaned, and a publication time no later than a day after the
// check (a source that dates its items ahead lies: the date is dropped).
func (s *Service) sourceLinks(task watch.Task, fetched time.Time) []watch.NewLink {
	links := make([]watch.NewLink, 0, len(task.Context))
	keys := make(map[uint64]struct{}, len(task.Context))
	for _, l := range task.Context {
		url := watch.CleanText(l.URL)
		if url == "" {
			continue
		}
		key := shortlink.Key(url)
		if _, dup := keys[key]; dup {
			continue
		}
		keys[key] = struct{}{}
		n := watch.NewLink{Key: key, URL: url, Text: watch.CleanText(l.Text), Code: shortlink.Code(key, s.cfg.CodeLength)}
		if p := l.PublishedAt; p != nil && !p.After(fetched.Add(watch.MaxFutureSkew)) && p.Year() > 1970 {
			at := p.UTC()
			n.PublishedAt = &at
		}
		links = append(links, n)
	}
	return links
}

// retrySource runs fn again while its failure is transient.
func (s *Service) retrySource(ctx context.Context, log *slog.Logger, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || errors.Is(err, watch.ErrPageNotFound) || watch.IsPermanent(err) {
			return err
		}
		log.Warn("recording a source task failed; retrying", "attempt", attempt+1, "err", err)
		if sleepErr := s.cfg.Backoff.Sleep(ctx, attempt); sleepErr != nil {
			return fmt.Errorf("%w (gave up: %v)", err, sleepErr)
		}
	}
}

// sourceOutcome classifies the error of recording a source task: done
// says the task is settled by it, and the error to return: none when the
// page or source is gone (acked), the error itself when the data was
// refused (dead-lettered) or the database stayed away (returned).
func sourceOutcome(log *slog.Logger, err error) (string, error, bool) { //nolint:revive // the outcome reads first
	switch {
	case err == nil:
		return "", nil, false
	case errors.Is(err, watch.ErrPageNotFound):
		log.Info("task for a removed page or source dropped")
		return "page_removed", nil, true
	case watch.IsPermanent(err):
		return "rejected", err, true
	}
	return "interrupted", err, true
}

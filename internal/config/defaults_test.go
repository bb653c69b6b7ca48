package config

import (
	"testing"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/shortlink"
)

// TestDefaultsAreTheComponents: an unset variable gives the component's own
// default, so that a default is written once and the settings table and the
// doc comments cannot drift apart (the parse concurrency was "CPUs" in one
// place and 2 in another).
func TestDefaultsAreTheComponents(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	cr := crawler.Config{}.WithDefaults()
	sc := scheduler.Config{}.WithDefaults()
	pr := processor.Config{}.WithDefaults()
	rt := processor.RetentionConfig{}.WithDefaults()
	fe := fetch.Config{}.WithDefaults()
	for _, tt := range []struct {
		name      string
		got, want any
	}{
		{"PORTALWATCH_DELIVERY_LIMIT", c.DeliveryLimit, queue.Config{}.WithDefaults().DeliveryLimit},
		{"PORTALWATCH_CODE_LENGTH", c.CodeLength, pr.CodeLength},
		{"PORTALWATCH_CODE_LENGTH is shortlink's", c.CodeLength, shortlink.DefaultLength},
		{"PORTALWATCH_SCHEDULER_POLL", c.Scheduler.PollInterval, sc.PollInterval},
		{"PORTALWATCH_SCHEDULER_BATCH", c.Scheduler.BatchSize, sc.BatchSize},
		{"PORTALWATCH_LEASE", c.Scheduler.Lease, sc.Lease},
		{"PORTALWATCH_JITTER", c.Scheduler.Jitter, scheduler.DefaultJitter},
		{"PORTALWATCH_SCHEDULER_WORKERS", c.Scheduler.Workers, sc.Workers},
		{"PORTALWATCH_PARSE_CONCURRENCY", c.Crawler.ParseConcurrency, cr.ParseConcurrency},
		{"PORTALWATCH_FETCH_TIMEOUT", c.Crawler.FetchTimeout, fe.Timeout},
		{"PORTALWATCH_MAX_BODY_BYTES", c.Crawler.MaxBodyBytes, fe.MaxBodyBytes},
		{"PORTALWATCH_MAX_REDIRECTS", c.Crawler.MaxRedirects, fetch.DefaultMaxRedirects},
		{"PORTALWATCH_MAX_LINKS", c.Crawler.MaxLinks, domwalk.Limits{}.WithDefaults().MaxLinks},
		{"PORTALWATCH_PARSE_MEMORY", c.Crawler.ParseMemory, cr.ParseMemory},
		{"PORTALWATCH_MAX_TREE_BYTES", c.Crawler.MaxTreeBytes, cr.Limits.MaxTreeBytes},
		{"PORTALWATCH_MAX_TASK_BYTES", c.Crawler.MaxTaskBytes, cr.MaxTaskBytes},
		{"PORTALWATCH_CHECK_TIMEOUT", c.Crawler.CheckTimeout, cr.CheckTimeout},
		{"PORTALWATCH_MAX_POLITE_WAIT", c.Crawler.MaxPoliteWait, fe.MaxPoliteWait},
		{"PORTALWATCH_HOST_SPACING", c.Crawler.HostSpacing, fetch.DefaultMinHostSpacing},
		{"PORTALWATCH_HOST_MAX_INFLIGHT", c.Crawler.HostMaxInFlight, hostgate.DefaultMaxInFlight},
		{"PORTALWATCH_SEEN_TTL", c.Processor.SeenTTL, seen.DefaultTTL},
		{"PORTALWATCH_MAX_NEW_LINKS_PER_CHECK", c.Processor.MaxNewLinksPerCheck, processor.DefaultCaps.PerCheck},
		{"PORTALWATCH_MAX_NEW_LINKS_PER_DAY", c.Processor.MaxNewLinksPerDay, processor.DefaultCaps.PerDay},
		{"PORTALWATCH_PRUNE_INTERVAL", c.Processor.PruneInterval, rt.Interval},
		{"PORTALWATCH_PRUNE_BATCH", c.Processor.PruneBatch, rt.Batch},
	} {
		if tt.got != tt.want {
			t.Errorf("%s defaults to %v, the component's default is %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestZeroMeansNone: where 0 is allowed it is kept, never replaced by a
// default (PORTALWATCH_MAX_REDIRECTS=0 once became 5).
func TestZeroMeansNone(t *testing.T) {
	c, err := Load(envOf(map[string]string{
		"PORTALWATCH_MAX_REDIRECTS":           "0",
		"PORTALWATCH_HOST_SPACING":            "0s",
		"PORTALWATCH_HOST_MAX_INFLIGHT":       "0",
		"PORTALWATCH_JITTER":                  "0",
		"PORTALWATCH_MAX_NEW_LINKS_PER_CHECK": "0",
		"PORTALWATCH_MAX_NEW_LINKS_PER_DAY":   "0",
		"PORTALWATCH_LINKS_RETENTION":         "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Crawler.MaxRedirects != 0 || c.Crawler.HostSpacing != 0 || c.Crawler.HostMaxInFlight != 0 || c.Scheduler.Jitter != 0 ||
		c.Processor.MaxNewLinksPerCheck != 0 || c.Processor.MaxNewLinksPerDay != 0 || c.Processor.LinksRetention != 0 {
		t.Fatalf("zero settings were replaced: %+v %+v %+v", c.Crawler, c.Scheduler, c.Processor)
	}
	// And the components keep them: zero is none there too.
	if got := (fetch.Config{MaxRedirects: 0}).WithDefaults().MaxRedirects; got != 0 {
		t.Errorf("fetch.Config{MaxRedirects: 0}.WithDefaults().MaxRedirects = %d, want 0 (follow none)", got)
	}
	if got := (fetch.Config{}).WithDefaults().MinHostSpacing; got != 0 {
		t.Errorf("fetch.Config{}.WithDefaults().MinHostSpacing = %s, want 0 (none)", got)
	}
	if got := (processor.Config{}).WithDefaults().Caps; got.PerCheck != 0 || got.PerDay != 0 {
		t.Errorf("processor.Config{}.WithDefaults().Caps = %+v, want no cap", got)
	}
	if got := (scheduler.Config{}).WithDefaults().Jitter; got != 0 {
		t.Errorf("scheduler.Config{}.WithDefaults().Jitter = %v, want 0", got)
	}
}

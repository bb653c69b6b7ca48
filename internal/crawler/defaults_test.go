package crawler_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/domwalk"
)

// TestNewRefusesInvalidConfig: a value no default can mend is an error from
// New, naming the field, instead of a silent default.
func TestNewRefusesInvalidConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg   crawler.Config
		field string
	}{
		{crawler.Config{PublishTimeout: -time.Second}, "PublishTimeout"},
		{crawler.Config{CheckTimeout: -time.Second}, "CheckTimeout"},
		{crawler.Config{ParseConcurrency: -1}, "ParseConcurrency"},
		{crawler.Config{ParseMemory: -1}, "ParseMemory"},
		{crawler.Config{MaxTaskBytes: -1}, "MaxTaskBytes"},
		// Bounded here, where a program and a test alike set it (it once
		// was bounded only where the environment was read).
		{crawler.Config{MaxTaskBytes: 1000}, "MaxTaskBytes"},
		{crawler.Config{ParseConcurrency: 5000}, "ParseConcurrency"},
		{crawler.Config{Limits: domwalk.Limits{MaxLinks: 1_000_000}}, "MaxLinks"},
	} {
		_, err := crawler.New(tt.cfg, nil, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	if _, err := crawler.New(crawler.Config{}, nil, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry()); err != nil {
		t.Errorf("New(zero Config) = %v, want the defaults to make it valid", err)
	}
}

func TestWithDefaults(t *testing.T) {
	c := crawler.Config{}.WithDefaults()
	if c.ParseConcurrency != crawler.DefaultParseConcurrency() || c.PublishTimeout != crawler.DefaultPublishTimeout ||
		c.CheckTimeout != crawler.DefaultCheckTimeout || c.BusyDelay != crawler.DefaultBusyDelay ||
		c.ParseMemory != crawler.DefaultParseMemory || c.MaxTaskBytes != crawler.DefaultMaxTaskBytes || c.Gate != nil {
		t.Errorf("defaults = %+v", c)
	}
	if c := (crawler.Config{ParseConcurrency: 3}).WithDefaults(); c.ParseConcurrency != 3 {
		t.Errorf("WithDefaults replaced a set ParseConcurrency: %d", c.ParseConcurrency)
	}
}

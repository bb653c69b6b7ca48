package processor_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/shortlink"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// TestNewRefusesInvalidConfig: a value no default can mend is an error from
// the constructor, naming the field, instead of a silent default.
func TestNewRefusesInvalidConfig(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tt := range []struct {
		cfg   processor.Config
		field string
	}{
		{processor.Config{CodeLength: 5}, "CodeLength"},
		{processor.Config{CodeLength: shortlink.MaxLength + 1}, "CodeLength"},
		{processor.Config{Caps: watch.Caps{PerDay: -1}}, "Caps"},
		{processor.Config{LinkRefresh: -time.Hour}, "LinkRefresh"},
	} {
		_, err := processor.New(tt.cfg, nil, nil, log, prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	if c := (processor.Config{}).WithDefaults(); c.CodeLength != shortlink.DefaultLength || c.Caps != (watch.Caps{}) || c.LinkRefresh != 0 {
		t.Errorf("defaults = %+v; zero caps and refresh mean none and stay", c)
	}

	for _, tt := range []struct {
		cfg   processor.RetentionConfig
		field string
	}{
		{processor.RetentionConfig{Batch: -1}, "Batch"},
		{processor.RetentionConfig{Links: -time.Hour}, "Links"},
		{processor.RetentionConfig{Interval: -time.Second}, "Interval"},
	} {
		_, err := processor.NewPruner(tt.cfg, nil, log)
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("NewPruner(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	if c := (processor.RetentionConfig{}).WithDefaults(); c.Interval != processor.DefaultPruneInterval ||
		c.Batch != processor.DefaultPruneBatch || c.MaxBatches != processor.DefaultPruneMaxBatches || c.Updates != 0 || c.Links != 0 {
		t.Errorf("retention defaults = %+v; zero retention keeps forever and stays", c)
	}
}

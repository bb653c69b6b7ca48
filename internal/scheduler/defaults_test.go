package scheduler_test

import (
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/portalwatch/portalwatch/internal/scheduler"
)

// TestNewRefusesInvalidConfig: a value no default can mend is an error from
// New, naming the field, instead of a silent default.
func TestNewRefusesInvalidConfig(t *testing.T) {
	for _, tt := range []struct {
		cfg   scheduler.Config
		field string
	}{
		{scheduler.Config{Jitter: 1.5}, "Jitter"},
		{scheduler.Config{Jitter: -0.1}, "Jitter"},
		{scheduler.Config{Jitter: math.NaN()}, "Jitter"},
		{scheduler.Config{BatchSize: -1}, "BatchSize"},
		{scheduler.Config{Lease: -time.Second}, "Lease"},
		{scheduler.Config{HostSpacing: -time.Second}, "HostSpacing"},
		{scheduler.Config{Horizon: 2 * time.Minute}, "Horizon"},
	} {
		_, err := scheduler.New(tt.cfg, nil, nil, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tt.cfg, err, tt.field)
		}
	}
	c := scheduler.Config{}.WithDefaults()
	if c.PollInterval != scheduler.DefaultPollInterval || c.BatchSize != scheduler.DefaultBatchSize || c.Lease != scheduler.DefaultLease ||
		c.PublishTimeout != scheduler.DefaultPublishTimeout || c.Workers != scheduler.DefaultWorkers || c.Jitter != 0 ||
		c.Horizon != scheduler.DefaultHorizon || c.HostSpacing != 0 {
		t.Errorf("defaults = %+v; the zeros of Jitter and HostSpacing mean none and stay", c)
	}
}

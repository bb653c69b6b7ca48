package main

import (
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/scheduler"
)

func load(env map[string]string) (settings, error) {
	cfg := defaults()
	err := config.Load(func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

func TestSchedulerSettings(t *testing.T) {
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Scheduler; s.Jitter != scheduler.DefaultJitter || s.BatchSize != 500 || s.Lease != 10*time.Minute ||
		s.Workers != 2 || s.PollInterval != time.Second || s.HostSpacing != time.Second || s.Horizon != 2*time.Second ||
		cfg.Listen.Addr != "127.0.0.1:9101" || cfg.RedisPrefix != "portalwatch" {
		t.Fatalf("defaults = %+v", cfg)
	}
	// 0 is no jitter, kept by the scheduler too.
	if cfg, err = load(map[string]string{"PORTALWATCH_JITTER": "0"}); err != nil || cfg.Scheduler.WithDefaults().Jitter != 0 {
		t.Fatalf("PORTALWATCH_JITTER=0: %v, %v", err, cfg.Scheduler.Jitter)
	}
	_, err = load(map[string]string{
		"PORTALWATCH_JITTER": "2", "PORTALWATCH_SCHEDULER_BATCH": "10001", "PORTALWATCH_LEASE": "500ms",
		"PORTALWATCH_SCHEDULER_WORKERS": "0", "PORTALWATCH_SCHEDULER_POLL": "1ms",
		"DATABASE_URL": "mysql://u:s3cr3t@db/portalwatch", "PORTALWATCH_HOST_SPACING": "-1s",
		"PORTALWATCH_SCHEDULER_HORIZON": "2m", "PORTALWATCH_PARSE_MEMORY": "not read by the scheduler",
		"PORTALWATCH_SCHEDULER_DISCOVERY_POLL": "2h",
	})
	for _, name := range []string{"PORTALWATCH_JITTER", "PORTALWATCH_SCHEDULER_BATCH", "PORTALWATCH_LEASE",
		"PORTALWATCH_SCHEDULER_WORKERS", "PORTALWATCH_SCHEDULER_POLL", "DATABASE_URL", "PORTALWATCH_HOST_SPACING",
		"PORTALWATCH_SCHEDULER_HORIZON", "PORTALWATCH_SCHEDULER_DISCOVERY_POLL"} {
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("a bad %s was not named: %v", name, err)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "PORTALWATCH_PARSE_MEMORY")) {
		t.Errorf("error shows a password or a variable the scheduler does not read: %v", err)
	}
}

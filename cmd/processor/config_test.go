package main

import (
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func load(env map[string]string) (settings, error) {
	cfg := defaults()
	err := config.Load(func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

func TestProcessorSettings(t *testing.T) {
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, r := cfg.Processor, cfg.Retention
	if p.CodeLength != 8 || p.Caps != processor.DefaultCaps || p.Burst.Share != 0.5 || p.Burst.Min != 20 || p.RemovalChecks != 2 ||
		p.Revisions != watch.DefaultRevisionCaps || r.Links != 90*24*time.Hour || r.Updates != 0 || r.Interval != 10*time.Minute || r.Batch != 1000 ||
		cfg.Seen.TTL != 720*time.Hour || cfg.Concurrency != 8 || cfg.Prefetch != 0 {
		t.Fatalf("defaults = %+v", cfg)
	}
	// Zero is none where it is allowed, and stays so in the components.
	cfg, err = load(map[string]string{
		"PORTALWATCH_MAX_NEW_LINKS_PER_CHECK": "0", "PORTALWATCH_MAX_NEW_LINKS_PER_DAY": "0", "PORTALWATCH_LINKS_RETENTION": "0",
		"PORTALWATCH_REMOVAL_CHECKS": "0", "PORTALWATCH_BURST_SHARE": "0", "PORTALWATCH_UPDATES_RETENTION": "720h",
		"PORTALWATCH_CODE_LENGTH": "6", "PORTALWATCH_REVISIONS_PER_CHECK": "0", "PORTALWATCH_REVISIONS_PER_LINK": "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	p, r = cfg.Processor.WithDefaults(), cfg.Retention.WithDefaults()
	if p.Caps.PerCheck != 0 || p.Caps.PerDay != 0 || r.Links != 0 || p.RemovalChecks != 0 || p.Burst.Share != 0 ||
		r.Updates != 720*time.Hour || p.CodeLength != 6 || p.Revisions != (watch.RevisionCaps{PerCheck: 0, PerLink: 5}) {
		t.Fatalf("read as %+v %+v", p, r)
	}
	_, err = load(map[string]string{
		"PORTALWATCH_UPDATES_RETENTION": "90s", "PORTALWATCH_LINKS_RETENTION": "forever", "PORTALWATCH_MAX_NEW_LINKS_PER_DAY": "-1",
		"PORTALWATCH_REMOVAL_CHECKS": "-1", "PORTALWATCH_BURST_SHARE": "1.5", "PORTALWATCH_BURST_MIN": "0",
		"PORTALWATCH_CODE_LENGTH": "4", "PORTALWATCH_PROCESSOR_PREFETCH": "2001", "PORTALWATCH_SEEN_TTL": "30s",
		"PORTALWATCH_PRUNE_BATCH": "0",
	})
	for _, name := range []string{"PORTALWATCH_UPDATES_RETENTION", "PORTALWATCH_LINKS_RETENTION", "PORTALWATCH_MAX_NEW_LINKS_PER_DAY",
		"PORTALWATCH_REMOVAL_CHECKS", "PORTALWATCH_BURST_SHARE", "PORTALWATCH_CODE_LENGTH",
		"PORTALWATCH_PROCESSOR_PREFETCH", "PORTALWATCH_SEEN_TTL", "PORTALWATCH_PRUNE_BATCH"} {
		if err == nil || !strings.Contains(err.Error(), name+"=") {
			t.Errorf("a bad %s was not named: %v", name, err)
		}
	}
	// With the share out of range, Min is not checked against it.
	if cfg, err := load(map[string]string{"PORTALWATCH_BURST_MIN": "0"}); err == nil {
		t.Errorf("a burst rule of 0 links was accepted: %+v", cfg.Processor.Burst)
	}
}

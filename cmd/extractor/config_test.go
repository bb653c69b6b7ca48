package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/article"
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/extractor"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/ops"
)

func load(env map[string]string) (settings, error) {
	cfg := defaults()
	err := config.Load(func(k string) string { return env[k] }, &cfg)
	return cfg, err
}

func TestDefaultsNeedNoEnvironment(t *testing.T) {
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Extractor
	if e.Concurrency != extractor.DefaultConcurrency || e.Lease != 2*time.Minute || e.Poll != time.Second ||
		e.Attempts != 4 || e.PerOriginDay != 2000 || e.MaxBytes != article.DefaultMaxBytes ||
		e.MaxNodes != article.DefaultMaxNodes || cfg.Fetch.AllowPrivate ||
		cfg.Fetch.MaxRedirects != fetch.DefaultMaxRedirects || cfg.Fetch.MinHostSpacing != time.Second ||
		cfg.Gate.MaxInFlight != hostgate.DefaultMaxInFlight || cfg.Gate.Prefix != "portalwatch" ||
		cfg.Ops.ShutdownTimeout != ops.DefaultShutdownTimeout || cfg.Listen.Addr != "127.0.0.1:9105" {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestSettingsAreRead(t *testing.T) {
	cfg, err := load(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":           "true",
		"PORTALWATCH_REDIS_PREFIX":            "t1",
		"PORTALWATCH_FETCH_TIMEOUT":           "5s",
		"PORTALWATCH_EXTRACTOR_CONCURRENCY":   "3",
		"PORTALWATCH_ARTICLE_LEASE":           "30s",
		"PORTALWATCH_ARTICLE_POLL":            "250ms",
		"PORTALWATCH_ARTICLE_ATTEMPTS":        "2",
		"PORTALWATCH_ARTICLES_PER_ORIGIN_DAY": "0",
		"PORTALWATCH_ARTICLE_MAX_BYTES":       "1048576",
		"PORTALWATCH_ARTICLE_MAX_NODES":       "5000",
		"PORTALWATCH_HTTP_ADDR":               "127.0.0.1:9301",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Extractor
	if !cfg.Fetch.AllowPrivate || cfg.Gate.Prefix != "t1" || cfg.Fetch.Timeout != 5*time.Second ||
		e.Concurrency != 3 || e.Lease != 30*time.Second || e.Poll != 250*time.Millisecond || e.Attempts != 2 ||
		e.PerOriginDay != 0 || e.MaxBytes != 1<<20 || e.MaxNodes != 5000 || cfg.Listen.Addr != "127.0.0.1:9301" {
		t.Fatalf("settings = %+v", cfg)
	}
	// 0 is no daily cap, and stays 0 through the component's defaults.
	if e.WithDefaults().PerOriginDay != 0 {
		t.Fatal("PORTALWATCH_ARTICLES_PER_ORIGIN_DAY=0 was replaced by a default")
	}
}

// TestEveryBadVariableIsNamed: the bounds live in the components, and the
// error names each variable once, never a password.
func TestEveryBadVariableIsNamed(t *testing.T) {
	_, err := load(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":           "yes please",
		"PORTALWATCH_FETCH_TIMEOUT":           "fast",
		"DATABASE_URL":                        "mysql://root:secret@db/portalwatch",
		"REDIS_URL":                           "redis://:secret@n1:7000,n2:7001/0",
		"PORTALWATCH_REDIS_PREFIX":            "has space",
		"PORTALWATCH_LOG_LEVEL":               "loud",
		"PORTALWATCH_EXTRACTOR_CONCURRENCY":   "0",
		"PORTALWATCH_ARTICLE_LEASE":           "1s",
		"PORTALWATCH_ARTICLE_POLL":            "often",
		"PORTALWATCH_ARTICLE_ATTEMPTS":        "21",
		"PORTALWATCH_ARTICLES_PER_ORIGIN_DAY": "-1",
		"PORTALWATCH_ARTICLE_MAX_BYTES":       "1000",
		"PORTALWATCH_ARTICLE_MAX_NODES":       "10",
		"PORTALWATCH_MAX_REDIRECTS":           "21",
		"PORTALWATCH_HOST_SPACING":            "-1s",
		"PORTALWATCH_HOST_MAX_INFLIGHT":       "-1",
		"PORTALWATCH_HTTP_ADDR":               "9105",
	})
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want a *config.Error", err)
	}
	msg := err.Error()
	for _, name := range []string{"PORTALWATCH_ALLOW_PRIVATE", "PORTALWATCH_FETCH_TIMEOUT", "DATABASE_URL", "REDIS_URL",
		"PORTALWATCH_REDIS_PREFIX", "PORTALWATCH_LOG_LEVEL", "PORTALWATCH_EXTRACTOR_CONCURRENCY",
		"PORTALWATCH_ARTICLE_LEASE", "PORTALWATCH_ARTICLE_POLL", "PORTALWATCH_ARTICLE_ATTEMPTS",
		"PORTALWATCH_ARTICLES_PER_ORIGIN_DAY", "PORTALWATCH_ARTICLE_MAX_BYTES", "PORTALWATCH_ARTICLE_MAX_NODES",
		"PORTALWATCH_MAX_REDIRECTS", "PORTALWATCH_HOST_SPACING", "PORTALWATCH_HOST_MAX_INFLIGHT", "PORTALWATCH_HTTP_ADDR"} {
		if n := strings.Count(msg, name+"="); n != 1 {
			t.Errorf("error names %s %d times, want once:\n%s", name, n, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error leaks a password:\n%s", msg)
	}
}

// TestRunAnswersHelpAndRefusesBadSettings starts the program in-process:
// --help lists its variables (and no broker: the extractor needs none),
// and a bad setting stops it before it dials anything, with exit status 2.
func TestRunAnswersHelpAndRefusesBadSettings(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out); err != nil ||
		!strings.Contains(out.String(), "PORTALWATCH_ARTICLES_PER_ORIGIN_DAY") || !strings.Contains(out.String(), "DATABASE_URL") ||
		strings.Contains(out.String(), "AMQP_URL") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"PORTALWATCH_ARTICLE_ATTEMPTS": "0x"}[k]
	}, &out)
	var stderr bytes.Buffer
	if code := ops.ExitStatus(&stderr, "extractor", err); code != 2 ||
		!strings.Contains(stderr.String(), "extractor: configuration: PORTALWATCH_ARTICLE_ATTEMPTS") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

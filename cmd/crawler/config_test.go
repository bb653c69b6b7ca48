package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/crawler"
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
	if cfg.Concurrency != 16 || cfg.Queues.Jobs != "job_queue" || cfg.Queues.Tasks != "task_queue" || cfg.Fetch.AllowPrivate ||
		cfg.Fetch.MaxRedirects != fetch.DefaultMaxRedirects || cfg.Fetch.MinHostSpacing != time.Second ||
		cfg.Gate.MaxInFlight != hostgate.DefaultMaxInFlight || cfg.Gate.Prefix != "portalwatch" ||
		cfg.Crawler.MaxTaskBytes != crawler.DefaultMaxTaskBytes || cfg.Crawler.CheckTimeout != 45*time.Second ||
		cfg.Ops.ShutdownTimeout != ops.DefaultShutdownTimeout || cfg.Listen.Addr != "127.0.0.1:9102" {
		t.Fatalf("defaults = %+v", cfg)
	}
}

func TestSettingsAreRead(t *testing.T) {
	cfg, err := load(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":  "true",
		"PORTALWATCH_JOB_QUEUE":      "t1_jobs",
		"PORTALWATCH_REDIS_PREFIX":   "t1",
		"PORTALWATCH_FETCH_TIMEOUT":  "5s",
		"PORTALWATCH_PARSE_MEMORY":   "2097152",
		"PORTALWATCH_MAX_TREE_BYTES": "1048576",
		"PORTALWATCH_MAX_TASK_BYTES": "65536",
		"PORTALWATCH_MAX_LINKS":      "100",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Fetch.AllowPrivate || cfg.Queues.Jobs != "t1_jobs" || cfg.Gate.Prefix != "t1" || cfg.Fetch.Timeout != 5*time.Second ||
		cfg.Crawler.ParseMemory != 2<<20 || cfg.Crawler.Limits.MaxTreeBytes != 1<<20 || cfg.Crawler.MaxTaskBytes != 64<<10 ||
		cfg.Crawler.Limits.MaxLinks != 100 {
		t.Fatalf("settings = %+v", cfg)
	}
}

// TestZeroMeansNone: where 0 is allowed it is kept, by the settings and by
// the components they configure (PORTALWATCH_MAX_REDIRECTS=0 once became 5).
func TestZeroMeansNone(t *testing.T) {
	cfg, err := load(map[string]string{
		"PORTALWATCH_MAX_REDIRECTS":     "0",
		"PORTALWATCH_HOST_SPACING":      "0s",
		"PORTALWATCH_HOST_MAX_INFLIGHT": "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	f, g := cfg.Fetch.WithDefaults(), cfg.Gate.WithDefaults()
	if f.MaxRedirects != 0 || f.MinHostSpacing != 0 || g.MaxInFlight != 0 {
		t.Fatalf("zero settings were replaced: %+v %+v", f, g)
	}
}

// TestEveryBadVariableIsNamed: the bounds live in the components, and the
// error names each variable once, never a password.
func TestEveryBadVariableIsNamed(t *testing.T) {
	_, err := load(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":       "yes please",
		"PORTALWATCH_FETCH_TIMEOUT":       "fast",
		"AMQP_URL":                        "http://guest:secret@localhost/",
		"REDIS_URL":                       "redis://:secret@n1:7000,n2:7001/0",
		"PORTALWATCH_JOB_QUEUE":           "same",
		"PORTALWATCH_TASK_QUEUE":          "same",
		"PORTALWATCH_REDIS_PREFIX":        "has space",
		"PORTALWATCH_LOG_LEVEL":           "loud",
		"PORTALWATCH_CRAWLER_CONCURRENCY": "0",
		"PORTALWATCH_PARSE_MEMORY":        "64M",
		"PORTALWATCH_MAX_TREE_BYTES":      "0",
		"PORTALWATCH_MAX_TASK_BYTES":      "1000",
		"PORTALWATCH_MAX_REDIRECTS":       "21",
		"PORTALWATCH_CHECK_TIMEOUT":       "1ms",
		"PORTALWATCH_MAX_POLITE_WAIT":     "soon",
		"PORTALWATCH_HOST_SPACING":        "-1s",
		"PORTALWATCH_HOST_MAX_INFLIGHT":   "-1",
		"PORTALWATCH_HTTP_ADDR":           "9102",
	})
	var cfgErr *config.Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want a *config.Error", err)
	}
	msg := err.Error()
	for _, name := range []string{"PORTALWATCH_ALLOW_PRIVATE", "PORTALWATCH_FETCH_TIMEOUT", "AMQP_URL", "REDIS_URL",
		"PORTALWATCH_TASK_QUEUE", "PORTALWATCH_REDIS_PREFIX", "PORTALWATCH_LOG_LEVEL", "PORTALWATCH_CRAWLER_CONCURRENCY",
		"PORTALWATCH_PARSE_MEMORY", "PORTALWATCH_MAX_TREE_BYTES", "PORTALWATCH_MAX_TASK_BYTES", "PORTALWATCH_MAX_REDIRECTS",
		"PORTALWATCH_CHECK_TIMEOUT", "PORTALWATCH_MAX_POLITE_WAIT", "PORTALWATCH_HOST_SPACING", "PORTALWATCH_HOST_MAX_INFLIGHT",
		"PORTALWATCH_HTTP_ADDR"} {
		if n := strings.Count(msg, name+"="); n != 1 {
			t.Errorf("error names %s %d times, want once:\n%s", name, n, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error leaks a password:\n%s", msg)
	}
}

func TestAMQPURLListIsValidatedNodeByNode(t *testing.T) {
	tests := []struct {
		list    string
		wantErr string // "" means valid
	}{
		{"amqp://guest:guest@127.0.0.1:5672/", ""},
		{"amqp://u:secret@mq1:5672/, amqp://u:secret@mq2:5672/,amqps://u:secret@mq3:5671/", ""},
		{"amqp://u:secret@mq1:5672/,,amqp://u:secret@mq2:5672/", "entry 2: empty"},
		{"amqp://u:secret@mq1:5672/,http://u:secret@mq2/", "entry 2: want a URL starting with amqp://"},
		{"amqp://u:secret@mq1:5672/,amqp://u:secret@mq2:port/", "entry 2: not a valid URL: invalid port"},
		{"amqp://u:secret@mq1:5672/,amqp:///vhost", "entry 2: want a host"},
		{"amqp://u:secret@mq1:5672/,", "entry 2: empty"},
	}
	for _, tt := range tests {
		cfg, err := load(map[string]string{"AMQP_URL": tt.list})
		if tt.wantErr == "" {
			if err != nil || cfg.Broker.URL != tt.list {
				t.Errorf("AMQP_URL=%q: %v, read as %q", tt.list, err, cfg.Broker.URL)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "AMQP_URL") {
			t.Errorf("AMQP_URL=%q: error %v, want one naming AMQP_URL and containing %q", tt.list, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("AMQP_URL=%q: error leaks a password: %v", tt.list, err)
		}
	}
}

func TestRedisURLForms(t *testing.T) {
	tests := []struct {
		url     string
		wantErr string // "" means valid
	}{
		{"redis://127.0.0.1:6379/0", ""},
		{"rediss://:pw@cache.internal:6380/2", ""},
		{"unix:///run/redis/redis.sock?db=1", ""},
		{"redis+sentinel://:pw@s1:26379,s2,[::1]:26380/mymaster/0", ""},
		{"redis+cluster://:pw@n1:7000,n2:7001,[::1]:7002", ""},
		{"redis://n1:7000,n2:7001/0", "lists several hosts: name one server, or use redis+sentinel:// or redis+cluster://"},
		{"redis+sentinel://s1:26379,s2:26379", "want the primary's name after the hosts"},
		{"redis+cluster://n1:7000/3", "database 0 only"},
		{"redis+cluster://n1:7000?pool_sise=3", "unexpected option: pool_sise"},
		{"http://cache:6379", `scheme "http"`},
		{"cache:6379", "want a URL starting with redis://"},
	}
	for _, tt := range tests {
		cfg, err := load(map[string]string{"REDIS_URL": tt.url})
		switch {
		case tt.wantErr == "" && (err != nil || cfg.Redis.URL != tt.url):
			t.Errorf("REDIS_URL=%s: %v, read as %q", tt.url, err, cfg.Redis.URL)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("REDIS_URL=%s: error %v, want one line containing %q", tt.url, err, tt.wantErr)
		}
	}
}

// TestRunAnswersHelpAndRefusesBadSettings starts the program in-process:
// --help lists its variables, and a bad setting stops it before it dials
// anything, with exit status 2.
func TestRunAnswersHelpAndRefusesBadSettings(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, &out); err != nil ||
		!strings.Contains(out.String(), "PORTALWATCH_MAX_TASK_BYTES") || strings.Contains(out.String(), "DATABASE_URL") {
		t.Errorf("--help: %v\n%s", err, out.String())
	}
	err := run(context.Background(), nil, func(k string) string {
		return map[string]string{"PORTALWATCH_MAX_TASK_BYTES": "1000"}[k]
	}, &out)
	var stderr bytes.Buffer
	if code := ops.ExitStatus(&stderr, "crawler", err); code != 2 || !strings.Contains(stderr.String(), "crawler: configuration: PORTALWATCH_MAX_TASK_BYTES") {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

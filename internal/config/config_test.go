package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) Getenv { return func(k string) string { return m[k] } }

func TestDefaultsNeedNoEnvironment(t *testing.T) {
	c, err := Load(envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.JobQueue != "job_queue" || c.TaskQueue != "task_queue" || c.AllowPrivate || c.CodeLength != 8 ||
		c.Crawler.Concurrency != 16 || c.Processor.Prefetch != 32 || c.ShutdownTimeout != 20*time.Second ||
		!strings.HasPrefix(c.DatabaseURL, "postgres://") || c.RedisPrefix != "portalwatch" {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestSettingsAreRead(t *testing.T) {
	c, err := Load(envOf(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":         "true",
		"PORTALWATCH_JOB_QUEUE":             "t1_jobs",
		"PORTALWATCH_TASK_QUEUE":            "t1_tasks",
		"PORTALWATCH_REDIS_PREFIX":          "t1",
		"PORTALWATCH_CODE_LENGTH":           "6",
		"PORTALWATCH_PROCESSOR_CONCURRENCY": "3",
		"PORTALWATCH_FETCH_TIMEOUT":         "5s",
		"PORTALWATCH_JITTER":                "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.AllowPrivate || c.JobQueue != "t1_jobs" || c.TaskQueue != "t1_tasks" || c.RedisPrefix != "t1" ||
		c.CodeLength != 6 || c.Processor.Prefetch != 12 || c.Crawler.FetchTimeout != 5*time.Second || c.Scheduler.Jitter != 0 {
		t.Fatalf("settings = %+v", c)
	}
}

func TestEveryBadVariableIsNamed(t *testing.T) {
	_, err := Load(envOf(map[string]string{
		"PORTALWATCH_ALLOW_PRIVATE":       "yes please",
		"PORTALWATCH_CODE_LENGTH":         "4",
		"PORTALWATCH_FETCH_TIMEOUT":       "fast",
		"PORTALWATCH_JITTER":              "2",
		"AMQP_URL":                        "http://guest:secret@localhost/",
		"PORTALWATCH_JOB_QUEUE":           "same",
		"PORTALWATCH_TASK_QUEUE":          "same",
		"PORTALWATCH_REDIS_PREFIX":        "has space",
		"PORTALWATCH_LOG_LEVEL":           "loud",
		"PORTALWATCH_CRAWLER_CONCURRENCY": "0",
	}))
	var cfgErr Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want a config.Error", err)
	}
	msg := err.Error()
	for _, name := range []string{"PORTALWATCH_ALLOW_PRIVATE", "PORTALWATCH_CODE_LENGTH", "PORTALWATCH_FETCH_TIMEOUT",
		"PORTALWATCH_JITTER", "AMQP_URL", "PORTALWATCH_TASK_QUEUE", "PORTALWATCH_REDIS_PREFIX", "PORTALWATCH_LOG_LEVEL",
		"PORTALWATCH_CRAWLER_CONCURRENCY"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error leaks a password:\n%s", msg)
	}
}

func TestGrowthSettings(t *testing.T) {
	c, err := Load(envOf(map[string]string{
		"PORTALWATCH_MAX_NEW_LINKS_PER_CHECK": "0",
		"PORTALWATCH_UPDATES_RETENTION":       "720h",
		"PORTALWATCH_LINKS_RETENTION":         "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Processor
	if p.MaxNewLinksPerCheck != 0 || p.MaxNewLinksPerDay != 20000 || p.UpdatesRetention != 720*time.Hour ||
		p.LinksRetention != 0 || p.PruneInterval != 10*time.Minute || p.PruneBatch != 1000 {
		t.Fatalf("growth settings = %+v", p)
	}
	_, err = Load(envOf(map[string]string{
		"PORTALWATCH_UPDATES_RETENTION":     "90s",
		"PORTALWATCH_LINKS_RETENTION":       "forever",
		"PORTALWATCH_MAX_NEW_LINKS_PER_DAY": "-1",
	}))
	if err == nil {
		t.Fatal("Load accepted a 90s retention, a non-duration and a negative cap")
	}
	for _, name := range []string{"PORTALWATCH_UPDATES_RETENTION", "PORTALWATCH_LINKS_RETENTION", "PORTALWATCH_MAX_NEW_LINKS_PER_DAY"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
}

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
		!strings.HasPrefix(c.DatabaseURL, "postgres://") || c.RedisPrefix != "portalwatch" ||
		c.Crawler.ParseMemory != 64<<20 || c.Crawler.MaxTreeBytes != 32<<20 || c.Crawler.MaxTaskBytes != 4<<20 {
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
		"PORTALWATCH_PARSE_MEMORY":          "2097152",
		"PORTALWATCH_MAX_TREE_BYTES":        "1048576",
		"PORTALWATCH_MAX_TASK_BYTES":        "65536",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !c.AllowPrivate || c.JobQueue != "t1_jobs" || c.TaskQueue != "t1_tasks" || c.RedisPrefix != "t1" ||
		c.CodeLength != 6 || c.Processor.Prefetch != 12 || c.Crawler.FetchTimeout != 5*time.Second || c.Scheduler.Jitter != 0 ||
		c.Crawler.ParseMemory != 2<<20 || c.Crawler.MaxTreeBytes != 1<<20 || c.Crawler.MaxTaskBytes != 64<<10 {
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
		"PORTALWATCH_PARSE_MEMORY":        "64M",
		"PORTALWATCH_MAX_TREE_BYTES":      "0",
		"PORTALWATCH_MAX_TASK_BYTES":      "1000",
	}))
	var cfgErr Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("Load = %v, want a config.Error", err)
	}
	msg := err.Error()
	for _, name := range []string{"PORTALWATCH_ALLOW_PRIVATE", "PORTALWATCH_CODE_LENGTH", "PORTALWATCH_FETCH_TIMEOUT",
		"PORTALWATCH_JITTER", "AMQP_URL", "PORTALWATCH_TASK_QUEUE", "PORTALWATCH_REDIS_PREFIX", "PORTALWATCH_LOG_LEVEL",
		"PORTALWATCH_CRAWLER_CONCURRENCY", "PORTALWATCH_PARSE_MEMORY", "PORTALWATCH_MAX_TREE_BYTES",
		"PORTALWATCH_MAX_TASK_BYTES"} {
		if !strings.Contains(msg, name) {
			t.Errorf("error does not name %s:\n%s", name, msg)
		}
	}
	if strings.Contains(msg, "secret") {
		t.Errorf("error leaks a password:\n%s", msg)
	}
}

func TestURLErrorsNeverShowAPassword(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"DATABASE_URL", "postgres://portal:s3cr3t@db.internal:54x2/portalwatch"},
		{"AMQP_URL", "amqp://guest:s3cr3t@rabbit:bad/"},
		{"REDIS_URL", "redis://:s3cr3t@cache:6379x/0"},
		{"REDIS_URL", "redis+sentinel://:s3cr3t@s1:26379,s2:26379"},
		{"REDIS_URL", "redis+cluster://:s3cr3t@n1:7000,,n2:7001"},
		{"REDIS_URL", "redis://:s3cr3t@n1:7000,n2:7001/0"},
		{"DATABASE_URL", "mysql://portal:s3cr3t@db.internal/portalwatch"},
		{"AMQP_URL", "amqp://guest:s3cr3t@rab bit/%zz"},
	} {
		_, err := Load(envOf(map[string]string{tc.name: tc.value}))
		if err == nil {
			t.Errorf("%s=%s accepted", tc.name, tc.value)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr3t") || !strings.Contains(msg, tc.name) {
			t.Errorf("%s=%s: error %q leaks the password or does not name the variable", tc.name, tc.value, msg)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"amqp://guest:pw@host:5672/":        "amqp://guest:xxxxx@host:5672/",
		"amqp://guest:pw@host:bad/":         "amqp://guest:xxxxx@host:bad/",
		"redis://:p@ss@host:x/0":            "redis://:xxxxx@host:x/0",
		"postgres://user@host/db":           "postgres://user@host/db",
		"postgres://host/db?sslmode=verify": "postgres://host/db?sslmode=verify",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
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
		{"rediss+sentinel://s1:26379/mymaster?sentinel_password=pw", ""},
		{"redis+cluster://:pw@n1:7000,n2:7001,[::1]:7002", ""},
		{"redis+cluster://n1", ""},
		{"redis://n1:7000,n2:7001/0", "lists several hosts: name one server, or use redis+sentinel:// or redis+cluster://"},
		{"redis+sentinel://s1:26379,s2:26379", "want the primary's name after the hosts"},
		{"redis+sentinel://s1:26379/mymaster/x", "invalid database number"},
		{"redis+cluster://n1:7000/3", "database 0 only"},
		{"redis+cluster://n1:7000,,n2:7001", "host 2 is empty"},
		{"redis+cluster://n1:7000?pool_sise=3", "unexpected option: pool_sise"},
		{"redis+shard://n1:7000", `scheme "redis+shard": want redis+sentinel or redis+cluster`},
		{"http://cache:6379", `scheme "http"`},
		{"cache:6379", "want a URL starting with redis://"},
	}
	for _, tt := range tests {
		c, err := Load(envOf(map[string]string{"REDIS_URL": tt.url}))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("REDIS_URL=%s: %v", tt.url, err)
		case tt.wantErr == "" && c.RedisURL != tt.url:
			t.Errorf("REDIS_URL=%s read as %q", tt.url, c.RedisURL)
		case tt.wantErr != "" && err == nil:
			t.Errorf("REDIS_URL=%s accepted, want an error containing %q", tt.url, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("REDIS_URL=%s: error %q does not contain %q", tt.url, err, tt.wantErr)
		case tt.wantErr != "" && strings.Count(err.Error(), "\n") > 0:
			t.Errorf("REDIS_URL=%s: error %q spans several lines", tt.url, err)
		}
	}
}

func TestAMQPURLListIsValidatedNodeByNode(t *testing.T) {
	tests := []struct {
		list    string
		wantErr string // "" means valid
	}{
		{"amqp://guest:guest@127.0.0.1:5672/", ""},
		{"amqp://u:secret@mq1:5672/, amqp://u:secret@mq2:5672/,amqps://u:secret@mq3:5671/", ""},
		{"amqp://u:secret@mq1:5672/,,amqp://u:secret@mq2:5672/", "AMQP_URL entry 2 is empty"},
		{"amqp://u:secret@mq1:5672/,http://u:secret@mq2/", "AMQP_URL entry 2="},
		{"amqp://u:secret@mq1:5672/,amqp://u:secret@mq2:port/", "not a valid URL: invalid port"},
		{"amqp://u:secret@mq1:5672/,amqp:///vhost", "AMQP_URL entry 2=\"amqp:///vhost\": want a host"},
		{"amqp://u:secret@mq1:5672/,", "AMQP_URL entry 2 is empty"},
	}
	for _, tt := range tests {
		c, err := Load(envOf(map[string]string{"AMQP_URL": tt.list}))
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("AMQP_URL=%q: %v", tt.list, err)
			} else if c.AMQPURL != tt.list {
				t.Errorf("AMQP_URL=%q read as %q", tt.list, c.AMQPURL)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("AMQP_URL=%q: error %v, want one containing %q", tt.list, err, tt.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("AMQP_URL=%q: error leaks a password: %v", tt.list, err)
		}
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

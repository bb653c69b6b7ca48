// Package config reads portalwatch's settings from the environment. It is the
// only package that knows the variable names; every component receives a typed
// struct, and tests pass their own getenv so they never touch a running
// instance's queues, database or keys.
package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/crawler"
	"github.com/portalwatch/portalwatch/internal/domwalk"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/hostgate"
	"github.com/portalwatch/portalwatch/internal/notify"
	"github.com/portalwatch/portalwatch/internal/processor"
	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/scheduler"
	"github.com/portalwatch/portalwatch/internal/seen"
)

// Config holds every setting of every process. Each process reads the parts it
// needs; unknown parts cost nothing.
type Config struct {
	// DatabaseURL is the PostgreSQL connection string (DATABASE_URL).
	// Default: postgres://postgres@127.0.0.1:5432/portalwatch?sslmode=disable.
	DatabaseURL string
	// DatabaseReadURL is a read replica of that database
	// (DATABASE_READ_URL). The web program reads updates, removals and
	// feeds there; empty reads from DatabaseURL. Pages, tokens and every
	// write stay on DatabaseURL, so a page added through a form shows at
	// once, and the notifier stays there too: its cursor follows the
	// primary's snapshot horizon.
	DatabaseReadURL string
	// AMQPURL is the RabbitMQ URL (AMQP_URL), or a comma-separated list of
	// the URLs of a cluster's nodes, each amqp:// or amqps:// with a host.
	// Default: amqp://guest:guest@127.0.0.1:5672/.
	AMQPURL string
	// RedisURL is the Redis URL (REDIS_URL): one server (redis://, rediss://,
	// unix://), a Sentinel-managed primary
	// (redis+sentinel://[user:password@]host1:26379,host2:26379/mymaster[/db])
	// or a Redis Cluster (redis+cluster://[user:password@]host1:7000,host2:7001);
	// package redisconn documents the forms. Default: redis://127.0.0.1:6379/0.
	RedisURL string

	// JobQueue and TaskQueue name the two work queues
	// (PORTALWATCH_JOB_QUEUE, PORTALWATCH_TASK_QUEUE; defaults job_queue and
	// task_queue). Their dead-letter queues are the same names plus ".dlq".
	JobQueue  string
	TaskQueue string
	// DeliveryLimit is how many times a message may be returned to its queue
	// before RabbitMQ dead-letters it (PORTALWATCH_DELIVERY_LIMIT, default 20).
	// It is fixed when a queue is first declared.
	DeliveryLimit int

	// RedisPrefix starts every Redis key portalwatch writes
	// (PORTALWATCH_REDIS_PREFIX, default "portalwatch").
	RedisPrefix string
	// CodeLength is the length in base62 characters of the short codes kept in
	// the Redis seen-set (PORTALWATCH_CODE_LENGTH, default 8, range 6..11).
	CodeLength int

	// AllowPrivate lets the crawler fetch loopback, private and other
	// non-public addresses (PORTALWATCH_ALLOW_PRIVATE=true). Off by default:
	// users register URLs, and the crawler must not become a door into the
	// operator's own network.
	AllowPrivate bool

	// HTTPAddr is where the process serves /healthz and /metrics
	// (PORTALWATCH_HTTP_ADDR). Empty disables the server. Each program has its
	// own default (see the programs' docs); "off" disables it too.
	HTTPAddr string
	// ShutdownTimeout bounds the graceful stop after SIGTERM
	// (PORTALWATCH_SHUTDOWN_TIMEOUT, default 20s). Keep it below supervisord's
	// stopwaitsecs.
	ShutdownTimeout time.Duration
	// LogLevel is debug, info, warn or error (PORTALWATCH_LOG_LEVEL, default info).
	LogLevel string

	Scheduler Scheduler
	Crawler   Crawler
	Processor Processor
	Web       Web
	Notifier  Notifier
}

// Web holds the web program's settings.
type Web struct {
	// Addr is where the API, the feeds, the web page, /healthz and /metrics
	// are served (PORTALWATCH_WEB_ADDR, default 127.0.0.1:8080): host:port.
	Addr string
	// PublicRead lets anyone read pages, updates and feeds without a token
	// (PORTALWATCH_WEB_PUBLIC_READ=true). Off by default; writes always need
	// a write token.
	PublicRead bool
}

// Scheduler holds the scheduler's settings.
type Scheduler struct {
	// PollInterval is how often due pages are looked for when the last round
	// found fewer than BatchSize (PORTALWATCH_SCHEDULER_POLL, default 1s).
	PollInterval time.Duration
	// BatchSize is how many due pages one transaction claims
	// (PORTALWATCH_SCHEDULER_BATCH, default 500).
	BatchSize int
	// Lease is how long a page whose job is in flight is not scheduled again
	// unless its task comes back first (PORTALWATCH_LEASE, default 10m).
	Lease time.Duration
	// Jitter is the largest share of a page's interval added at random when
	// its schedule starts or restarts after falling behind, so pages
	// registered together drift apart (PORTALWATCH_JITTER, default 0.1,
	// range 0..1).
	Jitter float64
	// Workers is how many scheduling rounds run at once
	// (PORTALWATCH_SCHEDULER_WORKERS, default 2).
	Workers int
}

// Crawler holds the crawler's settings.
type Crawler struct {
	// Concurrency is how many pages one crawler fetches at once; it is also
	// the job queue prefetch (PORTALWATCH_CRAWLER_CONCURRENCY, default 16).
	Concurrency int
	// ParseConcurrency is how many fetched pages one crawler parses at once
	// (PORTALWATCH_PARSE_CONCURRENCY, default the number of CPUs,
	// crawler.DefaultParseConcurrency): a DOM takes ten times its page's
	// size, so parsing more pages than there are cores costs memory and
	// gains nothing.
	ParseConcurrency int
	// UserAgent is sent with every request (PORTALWATCH_USER_AGENT).
	UserAgent string
	// FetchTimeout bounds one fetch including redirects and the body
	// (PORTALWATCH_FETCH_TIMEOUT, default 30s).
	FetchTimeout time.Duration
	// MaxBodyBytes caps a page's body after decompression
	// (PORTALWATCH_MAX_BODY_BYTES, default 10 MiB).
	MaxBodyBytes int64
	// MaxRedirects caps redirects per fetch (PORTALWATCH_MAX_REDIRECTS,
	// default 5, range 0..20); 0 follows none, the first redirect failing
	// the check.
	MaxRedirects int
	// MaxLinks caps the links kept per page (PORTALWATCH_MAX_LINKS, default 5000).
	MaxLinks int
	// ParseMemory bounds, in bytes, the fetched pages one crawler holds
	// waiting for a parse slot or being parsed, each counted as its body
	// plus its tree's estimate (PORTALWATCH_PARSE_MEMORY, default 64 MiB,
	// range 1 MiB to 16 GiB).
	ParseMemory int64
	// MaxTreeBytes bounds the heap one page's parse may take: a page whose
	// tree is estimated above it is read from its tags instead
	// (PORTALWATCH_MAX_TREE_BYTES, default 32 MiB, range 1 MiB to 4 GiB).
	MaxTreeBytes int64
	// MaxTaskBytes bounds one task message; the links past it are left out
	// and counted as truncated (PORTALWATCH_MAX_TASK_BYTES, default 4 MiB,
	// range 64 KiB to 64 MiB, under RabbitMQ's 128 MiB message limit).
	MaxTaskBytes int
	// IgnoreRobots makes the crawler skip robots.txt
	// (PORTALWATCH_IGNORE_ROBOTS=true). Off by default.
	IgnoreRobots bool
	// CheckTimeout bounds robots.txt, any politeness wait and the fetch of
	// one check together (PORTALWATCH_CHECK_TIMEOUT, default 45s).
	CheckTimeout time.Duration
	// MaxPoliteWait is the longest a worker sleeps for a host's next slot;
	// a check whose slot is further away is deferred to it instead
	// (PORTALWATCH_MAX_POLITE_WAIT, default 5s).
	MaxPoliteWait time.Duration
	// HostSpacing is the least time between two fetches of one origin by
	// all crawlers together; a longer robots.txt Crawl-delay wins
	// (PORTALWATCH_HOST_SPACING, default 1s, 0 for none).
	HostSpacing time.Duration
	// HostMaxInFlight is how many checks of one origin may be in flight at
	// once across all crawlers; more are deferred by a few seconds
	// (PORTALWATCH_HOST_MAX_INFLIGHT, default 3, 0 for no cap).
	HostMaxInFlight int
}

// Processor holds the processor's settings.
type Processor struct {
	// Concurrency is how many tasks one processor handles at once
	// (PORTALWATCH_PROCESSOR_CONCURRENCY, default 8).
	Concurrency int
	// Prefetch is the task queue prefetch (PORTALWATCH_PROCESSOR_PREFETCH,
	// default 4 × Concurrency).
	Prefetch int
	// SeenTTL is the length of a page's Redis seen-set generation; its codes
	// expire at most two generations after they were written
	// (PORTALWATCH_SEEN_TTL, default 720h); PostgreSQL keeps the truth.
	SeenTTL time.Duration
	// MaxNewLinksPerCheck caps the new links one check of a page records
	// (PORTALWATCH_MAX_NEW_LINKS_PER_CHECK, default 1000, 0 = no cap). The
	// rest are counted on the page (last_cut) and recorded by a later check
	// if still there. A page's baseline is never capped.
	MaxNewLinksPerCheck int
	// MaxNewLinksPerDay caps the new links one page records per UTC day
	// (PORTALWATCH_MAX_NEW_LINKS_PER_DAY, default 20000, 0 = no cap).
	MaxNewLinksPerDay int
	// UpdatesRetention drops the weekly partitions of updates once wholly
	// older than this, so updates live up to a week longer
	// (PORTALWATCH_UPDATES_RETENTION, default 0 = keep forever, else at
	// least 1h). Their links stay known and are never reported again.
	// Removals older than this are deleted too.
	UpdatesRetention time.Duration
	// LinksRetention forgets links absent from their page for this long
	// (PORTALWATCH_LINKS_RETENTION, default 2160h = 90 days, 0 = keep
	// forever, else at least 1h); a forgotten link that comes back is
	// reported as new again.
	LinksRetention time.Duration
	// PruneInterval is the pause between retention rounds
	// (PORTALWATCH_PRUNE_INTERVAL, default 10m).
	PruneInterval time.Duration
	// PruneBatch is how many links one retention statement deletes
	// (PORTALWATCH_PRUNE_BATCH, default 1000, range 1..100000).
	PruneBatch int
	// RemovalChecks is how many successful checks in a row a link must be
	// absent from its page to be recorded as removed
	// (PORTALWATCH_REMOVAL_CHECKS, default 2, range 0..100, 0 = removals off).
	RemovalChecks int
	// BurstShare is the part of a page's links that one check's new links
	// must exceed to be recorded as a redesign flood
	// (PORTALWATCH_BURST_SHARE, default 0.5, from 0 to 1, 0 = off).
	BurstShare float64
	// BurstMin is the fewest new links a redesign flood has
	// (PORTALWATCH_BURST_MIN, default 20, range 1..1000000).
	BurstMin int
}

// The defaults of the settings that belong to the programs rather than to
// one component. A component's own defaults are its package's constants
// (fetch.DefaultTimeout, scheduler.DefaultLease, …), which Load uses, so a
// default is written once.
const (
	DefaultDatabaseURL          = "postgres://postgres@127.0.0.1:5432/portalwatch?sslmode=disable"
	DefaultAMQPURL              = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultRedisURL             = "redis://127.0.0.1:6379/0"
	DefaultJobQueue             = "job_queue"
	DefaultTaskQueue            = "task_queue"
	DefaultRedisPrefix          = "portalwatch"
	DefaultShutdownTimeout      = 20 * time.Second
	DefaultLogLevel             = "info"
	DefaultWebAddr              = "127.0.0.1:8080"
	DefaultCrawlerConcurrency   = 16
	DefaultProcessorConcurrency = 8
	// DefaultPrefetchPerWorker times PORTALWATCH_PROCESSOR_CONCURRENCY is
	// the task queue prefetch unless PORTALWATCH_PROCESSOR_PREFETCH is set.
	DefaultPrefetchPerWorker = 4
	// DefaultUpdatesRetention keeps updates forever.
	DefaultUpdatesRetention time.Duration = 0
	// DefaultLinksRetention is 90 days.
	DefaultLinksRetention = 90 * 24 * time.Hour
)

// Notifier holds the notifier's settings (webhooks and e-mail).
type Notifier struct {
	// Concurrency is how many deliveries one notifier runs at once
	// (PORTALWATCH_NOTIFIER_CONCURRENCY, default 8).
	Concurrency int
	// PollInterval is how often the notifier looks for updates to send
	// when it found none (PORTALWATCH_NOTIFIER_POLL, default 1s).
	PollInterval time.Duration
	// Lease is how long a notifier holds a subscription it works on; one
	// that dies holds it this long (PORTALWATCH_NOTIFIER_LEASE, default 2m,
	// at least twice the webhook and SMTP timeouts).
	Lease time.Duration
	// WebhookTimeout bounds one webhook request
	// (PORTALWATCH_WEBHOOK_TIMEOUT, default 10s).
	WebhookTimeout time.Duration
	// SMTPTimeout bounds one SMTP session (PORTALWATCH_SMTP_TIMEOUT,
	// default 30s).
	SMTPTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between attempts of a failing
	// delivery (PORTALWATCH_NOTIFY_RETRY_MIN, default 10s;
	// PORTALWATCH_NOTIFY_RETRY_MAX, default 24h, at most 24h).
	RetryMin, RetryMax time.Duration
	// PauseAfter is how long a subscription may keep failing before it is
	// paused with its last error (PORTALWATCH_NOTIFY_PAUSE_AFTER, default
	// 72h).
	PauseAfter time.Duration
	// SMTPURL is the mail server, smtp://user:password@host:port or
	// smtps://… (PORTALWATCH_SMTP_URL). Empty: e-mail subscriptions fail
	// (and are paused after PauseAfter) until it is set. Never printed
	// with its password.
	SMTPURL string
	// SMTPFrom is the sender of e-mail (PORTALWATCH_SMTP_FROM); required
	// with SMTPURL.
	SMTPFrom string
}

// Getenv looks up one environment variable; os.Getenv fits.
type Getenv func(string) string

// Load reads the configuration through getenv, fills in defaults and
// validates it. The error names every bad variable and what it expects.
func Load(getenv Getenv) (Config, error) {
	r := reader{getenv: getenv}
	procDefaults := processor.Config{Caps: processor.DefaultCaps}.WithDefaults()
	c := Config{
		DatabaseURL:     r.str("DATABASE_URL", DefaultDatabaseURL),
		DatabaseReadURL: r.str("DATABASE_READ_URL", ""),
		AMQPURL:         r.str("AMQP_URL", DefaultAMQPURL),
		RedisURL:        r.str("REDIS_URL", DefaultRedisURL),
		JobQueue:        r.str("PORTALWATCH_JOB_QUEUE", DefaultJobQueue),
		TaskQueue:       r.str("PORTALWATCH_TASK_QUEUE", DefaultTaskQueue),
		DeliveryLimit:   r.integer("PORTALWATCH_DELIVERY_LIMIT", queue.DefaultDeliveryLimit, 1, 1000),
		RedisPrefix:     r.str("PORTALWATCH_REDIS_PREFIX", DefaultRedisPrefix),
		CodeLength:      r.integer("PORTALWATCH_CODE_LENGTH", procDefaults.CodeLength, processor.MinCodeLength, processor.MaxCodeLength),
		AllowPrivate:    r.boolean("PORTALWATCH_ALLOW_PRIVATE", false),
		HTTPAddr:        r.str("PORTALWATCH_HTTP_ADDR", ""),
		ShutdownTimeout: r.duration("PORTALWATCH_SHUTDOWN_TIMEOUT", DefaultShutdownTimeout, time.Second),
		LogLevel:        r.str("PORTALWATCH_LOG_LEVEL", DefaultLogLevel),
		Scheduler: Scheduler{
			PollInterval: r.duration("PORTALWATCH_SCHEDULER_POLL", scheduler.DefaultPollInterval, 10*time.Millisecond),
			BatchSize:    r.integer("PORTALWATCH_SCHEDULER_BATCH", scheduler.DefaultBatchSize, 1, 10000),
			Lease:        r.duration("PORTALWATCH_LEASE", scheduler.DefaultLease, time.Second),
			Jitter:       r.fraction("PORTALWATCH_JITTER", scheduler.DefaultJitter),
			Workers:      r.integer("PORTALWATCH_SCHEDULER_WORKERS", scheduler.DefaultWorkers, 1, 64),
		},
		Crawler: Crawler{
			Concurrency:      r.integer("PORTALWATCH_CRAWLER_CONCURRENCY", DefaultCrawlerConcurrency, 1, 1000),
			ParseConcurrency: r.integer("PORTALWATCH_PARSE_CONCURRENCY", crawler.DefaultParseConcurrency(), 1, 1000),
			UserAgent:        r.str("PORTALWATCH_USER_AGENT", ""),
			FetchTimeout:     r.duration("PORTALWATCH_FETCH_TIMEOUT", fetch.DefaultTimeout, 100*time.Millisecond),
			MaxBodyBytes:     int64(r.integer("PORTALWATCH_MAX_BODY_BYTES", fetch.DefaultMaxBodyBytes, 1024, 1<<30)),
			MaxRedirects:     r.integer("PORTALWATCH_MAX_REDIRECTS", fetch.DefaultMaxRedirects, 0, fetch.MaxMaxRedirects),
			MaxLinks:         r.integer("PORTALWATCH_MAX_LINKS", domwalk.DefaultMaxLinks, 1, 100000),
			ParseMemory:      int64(r.integer("PORTALWATCH_PARSE_MEMORY", crawler.DefaultParseMemory, 1<<20, 16<<30)),
			MaxTreeBytes:     int64(r.integer("PORTALWATCH_MAX_TREE_BYTES", domwalk.DefaultMaxTreeBytes, 1<<20, 4<<30)),
			MaxTaskBytes:     r.integer("PORTALWATCH_MAX_TASK_BYTES", crawler.DefaultMaxTaskBytes, 64<<10, 64<<20),
			IgnoreRobots:     r.boolean("PORTALWATCH_IGNORE_ROBOTS", false),
			CheckTimeout:     r.duration("PORTALWATCH_CHECK_TIMEOUT", crawler.DefaultCheckTimeout, 100*time.Millisecond),
			MaxPoliteWait:    r.duration("PORTALWATCH_MAX_POLITE_WAIT", fetch.DefaultMaxPoliteWait, 10*time.Millisecond),
			HostSpacing:      r.duration("PORTALWATCH_HOST_SPACING", fetch.DefaultMinHostSpacing, 0),
			HostMaxInFlight:  r.integer("PORTALWATCH_HOST_MAX_INFLIGHT", hostgate.DefaultMaxInFlight, 0, 1000),
		},
		Processor: Processor{
			Concurrency: r.integer("PORTALWATCH_PROCESSOR_CONCURRENCY", DefaultProcessorConcurrency, 1, 1000),
			SeenTTL:     r.duration("PORTALWATCH_SEEN_TTL", seen.DefaultTTL, time.Minute),

			MaxNewLinksPerCheck: r.integer("PORTALWATCH_MAX_NEW_LINKS_PER_CHECK", procDefaults.Caps.PerCheck, 0, 1000000),
			MaxNewLinksPerDay:   r.integer("PORTALWATCH_MAX_NEW_LINKS_PER_DAY", procDefaults.Caps.PerDay, 0, 100000000),
			UpdatesRetention:    r.retention("PORTALWATCH_UPDATES_RETENTION", DefaultUpdatesRetention),
			LinksRetention:      r.retention("PORTALWATCH_LINKS_RETENTION", DefaultLinksRetention),
			PruneInterval:       r.duration("PORTALWATCH_PRUNE_INTERVAL", processor.DefaultPruneInterval, time.Second),
			PruneBatch:          r.integer("PORTALWATCH_PRUNE_BATCH", processor.DefaultPruneBatch, 1, 100000),
			RemovalChecks:       r.integer("PORTALWATCH_REMOVAL_CHECKS", processor.DefaultRemovalChecks, 0, 100),
			BurstShare:          r.fraction("PORTALWATCH_BURST_SHARE", processor.DefaultBurstShare),
			BurstMin:            r.integer("PORTALWATCH_BURST_MIN", processor.DefaultBurstMin, 1, 1000000),
		},
	}
	c.Web = Web{
		Addr:       r.str("PORTALWATCH_WEB_ADDR", DefaultWebAddr),
		PublicRead: r.boolean("PORTALWATCH_WEB_PUBLIC_READ", false),
	}
	r.check(validAddr("PORTALWATCH_WEB_ADDR", c.Web.Addr))
	c.Notifier = Notifier{
		Concurrency:    r.integer("PORTALWATCH_NOTIFIER_CONCURRENCY", notify.DefaultConcurrency, 1, 1000),
		PollInterval:   r.duration("PORTALWATCH_NOTIFIER_POLL", notify.DefaultPollInterval, 10*time.Millisecond),
		Lease:          r.duration("PORTALWATCH_NOTIFIER_LEASE", notify.DefaultLease, time.Second),
		WebhookTimeout: r.duration("PORTALWATCH_WEBHOOK_TIMEOUT", notify.DefaultWebhookTimeout, 100*time.Millisecond),
		SMTPTimeout:    r.duration("PORTALWATCH_SMTP_TIMEOUT", notify.DefaultSMTPTimeout, 100*time.Millisecond),
		RetryMin:       r.duration("PORTALWATCH_NOTIFY_RETRY_MIN", notify.DefaultRetryMin, 10*time.Millisecond),
		RetryMax:       r.duration("PORTALWATCH_NOTIFY_RETRY_MAX", notify.DefaultRetryMax, 10*time.Millisecond),
		PauseAfter:     r.duration("PORTALWATCH_NOTIFY_PAUSE_AFTER", notify.DefaultPauseAfter, time.Second),
		SMTPURL:        r.str("PORTALWATCH_SMTP_URL", ""),
		SMTPFrom:       r.str("PORTALWATCH_SMTP_FROM", ""),
	}
	r.check(c.Notifier.validate())
	c.Processor.Prefetch = r.integer("PORTALWATCH_PROCESSOR_PREFETCH", DefaultPrefetchPerWorker*c.Processor.Concurrency, 1, 2000)
	r.check(validURL("DATABASE_URL", c.DatabaseURL, "postgres", "postgresql"))
	if c.DatabaseReadURL != "" {
		r.check(validURL("DATABASE_READ_URL", c.DatabaseReadURL, "postgres", "postgresql"))
	}
	r.check(validURLList("AMQP_URL", c.AMQPURL, "amqp", "amqps"))
	r.check(validRedisURL("REDIS_URL", c.RedisURL))
	r.check(validName("PORTALWATCH_JOB_QUEUE", c.JobQueue))
	r.check(validName("PORTALWATCH_TASK_QUEUE", c.TaskQueue))
	r.check(validName("PORTALWATCH_REDIS_PREFIX", c.RedisPrefix))
	if c.JobQueue == c.TaskQueue {
		r.check(fmt.Errorf("PORTALWATCH_JOB_QUEUE and PORTALWATCH_TASK_QUEUE are both %q: they must differ", c.JobQueue))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		r.check(fmt.Errorf("PORTALWATCH_LOG_LEVEL=%q: want debug, info, warn or error", c.LogLevel))
	}
	if len(r.errs) > 0 {
		return c, Error{errors.Join(r.errs...)}
	}
	return c, nil
}

// Error is a configuration error: one line per bad variable, saying what it
// expects. Programs exit with status 2 on it.
type Error struct{ err error }

func (e Error) Error() string { return "configuration: " + e.err.Error() }
func (e Error) Unwrap() error { return e.err }

// HTTPAddrOr returns HTTPAddr, or def when it is unset. "off" disables the
// server.
func (c Config) HTTPAddrOr(def string) string {
	if c.HTTPAddr == "" {
		return def
	}
	return c.HTTPAddr
}

// reader collects every bad variable instead of stopping at the first, so a
// person fixes their environment in one go.
type reader struct {
	getenv Getenv
	errs   []error
}

func (r *reader) check(err error) {
	if err != nil {
		r.errs = append(r.errs, err)
	}
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) integer(name string, def, lo, hi int) int {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.check(fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi))
		return def
	}
	return n
}

func (r *reader) duration(name string, def, min time.Duration) time.Duration {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < min {
		r.check(fmt.Errorf("%s=%q: want a duration of at least %s, such as 30s or 5m", name, v, min))
		return def
	}
	return d
}

// retention reads a retention period: 0 keeps forever, anything else must be
// at least an hour, so that a typo such as 90s cannot empty a table.
func (r *reader) retention(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if v == "0" || (err == nil && d == 0) {
		return 0
	}
	if err != nil || d < time.Hour {
		r.check(fmt.Errorf("%s=%q: want 0 (keep forever) or a duration of at least 1h, such as 720h", name, v))
		return def
	}
	return d
}

func (r *reader) fraction(name string, def float64) float64 {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		r.check(fmt.Errorf("%s=%q: want a number from 0 to 1", name, v))
		return def
	}
	return f
}

func (r *reader) boolean(name string, def bool) bool {
	v := strings.TrimSpace(r.getenv(name))
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.check(fmt.Errorf("%s=%q: want true or false", name, v))
		return def
	}
	return b
}

func validURL(name, raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes the whole URL, password included, in its error:
		// keep only its reason, and show the URL with the password hidden.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s=%q: not a valid URL: %v", name, RedactURL(raw), err)
	}
	for _, s := range schemes {
		if u.Scheme == s {
			return nil
		}
	}
	return fmt.Errorf("%s=%q: want a URL starting with %s://", name, redact(u), strings.Join(schemes, ":// or "))
}

// validURLList checks a comma-separated list of URLs, naming each bad entry
// by its position so that a person finds it in a long list.
func validURLList(name, raw string, schemes ...string) error {
	parts := strings.Split(raw, ",")
	var errs []error
	for i, p := range parts {
		p = strings.TrimSpace(p)
		entry := name
		if len(parts) > 1 {
			entry = fmt.Sprintf("%s entry %d", name, i+1)
		}
		if p == "" {
			errs = append(errs, fmt.Errorf("%s is empty: separate node URLs with single commas", entry))
			continue
		}
		if err := validURL(entry, p, schemes...); err != nil {
			errs = append(errs, err)
			continue
		}
		if u, _ := url.Parse(p); u.Host == "" {
			errs = append(errs, fmt.Errorf("%s=%q: want a host, as in amqp://user:password@host:5672/", entry, redact(u)))
		}
	}
	return errors.Join(errs...)
}

// validRedisURL checks raw the way the programs will read it, so that a
// URL the Redis adapters would refuse stops the program at start.
func validRedisURL(name, raw string) error {
	if _, err := redisconn.Parse(raw); err != nil {
		return fmt.Errorf("%s=%q: %v", name, RedactURL(raw), err)
	}
	return nil
}

// redact hides a password so a config error never prints a credential.
func redact(u *url.URL) string {
	return u.Redacted()
}

// RedactURL returns raw with the password of its user information replaced
// by "xxxxx", whether or not raw parses as a URL, so that an error or log
// line about a connection URL never carries a credential. A URL without a
// password is returned as it is.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	// Unparsable (a bad port, say): the user information is what lies
	// between "://" and the last "@" before the path.
	start := strings.Index(raw, "://")
	if start < 0 {
		start = 0
	} else {
		start += len("://")
	}
	rest := raw[start:]
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPassword := strings.Cut(rest[:at], ":")
	if !hasPassword {
		return raw
	}
	return raw[:start] + user + ":xxxxx" + rest[at:]
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,200}$`)

func validName(name, v string) error {
	if !nameRE.MatchString(v) {
		return fmt.Errorf("%s=%q: use 1 to 200 letters, digits, '_', '.', ':' or '-'", name, v)
	}
	return nil
}

func validAddr(name, v string) error {
	_, port, err := net.SplitHostPort(v)
	if err == nil {
		var n int
		n, err = strconv.Atoi(port)
		if err == nil && (n < 0 || n > 65535) {
			err = errors.New("port out of range")
		}
	}
	if err != nil {
		return fmt.Errorf("%s=%q: want host:port, such as 127.0.0.1:8080 or :8080", name, v)
	}
	return nil
}

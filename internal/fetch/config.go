package fetch

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
)

// Defaults applied by Config.WithDefaults.
const (
	DefaultUserAgent       = "portalwatch/0.1 (+https://github.com/portalwatch/portalwatch)"
	DefaultTimeout         = 30 * time.Second
	DefaultHeaderTimeout   = 10 * time.Second
	DefaultDialTimeout     = 5 * time.Second
	DefaultMaxBodyBytes    = 10 << 20
	DefaultMaxRedirects    = 5
	MaxMaxRedirects        = 20
	DefaultRobotsTTL       = time.Hour
	DefaultRobotsMaxBytes  = 512 << 10
	DefaultRobotsCacheSize = 10000
	DefaultMaxCrawlDelay   = 30 * time.Second
	DefaultMaxPoliteWait   = 5 * time.Second
	// DefaultMinHostSpacing is the spacing the programs use
	// (PORTALWATCH_HOST_SPACING); Config's zero value means none.
	DefaultMinHostSpacing = time.Second
)

// allowPrivateHint ends every refusal of a non-public address, so that an
// operator running portalwatch against local test sites knows the switch.
const allowPrivateHint = "set PORTALWATCH_ALLOW_PRIVATE=true to allow private addresses"

// Config configures a Client. New applies WithDefaults, which gives every
// zero limit its default, and then refuses a negative one. MaxRedirects and
// MinHostSpacing are the exceptions: zero means none, so set MaxRedirects
// (to DefaultMaxRedirects, say) to follow redirects.
type Config struct {
	// UserAgent is sent with every request, robots.txt included. Its
	// product token (the text before the first "/" or space, lower-cased)
	// is the agent matched against robots.txt groups. Default
	// DefaultUserAgent.
	UserAgent string `env:"PORTALWATCH_USER_AGENT"`

	// Timeout bounds one fetch from the first dial to the last byte of the
	// body, redirects included; the caller's context can only shorten it.
	// Waiting for robots.txt and for the origin's next slot is not counted:
	// bound the whole with the caller's context (the crawler's check
	// deadline).
	// A server that trickles its body is cut here. At least 100ms; default
	// 30s.
	Timeout time.Duration `env:"PORTALWATCH_FETCH_TIMEOUT"`

	// HeaderTimeout bounds the wait for response headers after the request
	// is written (time to first byte). Default 10s.
	HeaderTimeout time.Duration

	// DialTimeout bounds DNS resolution plus TCP connect. Default 5s.
	DialTimeout time.Duration

	// MaxBodyBytes caps the body after decompression; a longer body fails
	// the fetch with KindTooLarge rather than being parsed truncated.
	// From 1 KiB to 1 GiB; default 10 MiB.
	MaxBodyBytes int64 `env:"PORTALWATCH_MAX_BODY_BYTES"`

	// MaxRedirects is how many redirects a fetch follows, at most
	// MaxMaxRedirects; one more fails it with KindTooManyRedirects. Zero
	// follows none: the first redirect fails the fetch. WithDefaults leaves
	// it alone; DefaultMaxRedirects (5) is what the programs use.
	MaxRedirects int `env:"PORTALWATCH_MAX_REDIRECTS"`

	// AllowPrivate, when true, lets the client connect to loopback,
	// private, link-local and other non-public addresses (see IsPublic).
	// Keep it false in production: it is what stops users from making the
	// crawler read internal services or cloud metadata. Default false.
	AllowPrivate bool `env:"PORTALWATCH_ALLOW_PRIVATE"`

	// IgnoreRobots, when true, skips robots.txt and its Crawl-delay
	// (MinHostSpacing still applies). Default false: robots.txt is obeyed.
	// The name is inverted so that the zero value is the polite one.
	IgnoreRobots bool `env:"PORTALWATCH_IGNORE_ROBOTS"`

	// MinHostSpacing is the least time between the starts of two fetches
	// of one origin (scheme, host and port), whatever its robots.txt says;
	// a longer Crawl-delay wins. Default 0: only Crawl-delay spaces fetches;
	// DefaultMinHostSpacing (1s) is what the programs use.
	MinHostSpacing time.Duration `env:"PORTALWATCH_HOST_SPACING"`

	// MaxPoliteWait is the longest Fetch sleeps for an origin's next slot
	// (Crawl-delay or MinHostSpacing); a slot further away fails the fetch
	// at once with KindDeferred, so a polite wait never holds a worker
	// long. At least 10ms; default 5s.
	MaxPoliteWait time.Duration `env:"PORTALWATCH_MAX_POLITE_WAIT"`

	// Pacer books the fetch slots of each origin. Default nil: slots are
	// kept in this Client only, so two processes fetching one origin each
	// keep its spacing on their own; share a Pacer across processes to
	// keep it together.
	Pacer Pacer

	// RobotsTTL is how long a host's robots.txt is cached. A robots.txt
	// that could not be fetched (5xx, network error) is retried after
	// RobotsTTL/12 instead (5 minutes with the default). Default 1h.
	RobotsTTL time.Duration

	// RobotsMaxBytes caps a robots.txt body; a longer one is cut there and
	// the prefix parsed, as RFC 9309 allows for files over 500 KiB.
	// Default 512 KiB.
	RobotsMaxBytes int64

	// RobotsCacheSize bounds the number of hosts whose robots.txt and
	// crawl-delay state is kept. Default 10000.
	RobotsCacheSize int

	// MaxCrawlDelay caps the Crawl-delay a robots.txt can impose between
	// two fetches from one host. Default 30s.
	MaxCrawlDelay time.Duration

	// Proxies is the operator's list of proxies (PORTALWATCH_PROXIES) that
	// a Request may name; empty: a Request naming one fails with
	// KindProxy.
	Proxies ProxyConfig

	// Resolver resolves the names of the pages fetched through a proxy,
	// which are checked before the request is sent (the dial guard sees
	// only the proxy's address). Nil is the system's resolver; tests pass
	// their own.
	Resolver Resolver

	// Logger receives robots.txt failures that the client works around
	// (they never fail a fetch). Default: a logger that discards.
	Logger *slog.Logger

	// dialAllowed, when set, lets tests reach one specific loopback
	// listener while AllowPrivate stays false, so they can prove that
	// everything else is still refused. It is unexported so production
	// code cannot set it.
	dialAllowed func(netip.AddrPort) bool

	// dialResolver, when set, resolves names for the dialer; tests point it
	// at a DNS server of their own on loopback. Nil means the system's.
	dialResolver *net.Resolver
}

// WithDefaults returns a copy of c with every unset (zero) field given its
// default. MaxRedirects and MinHostSpacing, where zero means none, are left
// as they are.
func (c Config) WithDefaults() Config {
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HeaderTimeout == 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.RobotsTTL == 0 {
		c.RobotsTTL = DefaultRobotsTTL
	}
	if c.RobotsMaxBytes == 0 {
		c.RobotsMaxBytes = DefaultRobotsMaxBytes
	}
	if c.RobotsCacheSize == 0 {
		c.RobotsCacheSize = DefaultRobotsCacheSize
	}
	if c.MaxCrawlDelay == 0 {
		c.MaxCrawlDelay = DefaultMaxCrawlDelay
	}
	if c.MaxPoliteWait == 0 {
		c.MaxPoliteWait = DefaultMaxPoliteWait
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate refuses what no default can mend: a limit out of its range, or
// more redirects than MaxMaxRedirects. It names every bad field at once.
func (c Config) Validate() error {
	return errors.Join(
		config.AtLeast("Timeout", c.Timeout, 100*time.Millisecond),
		config.AtLeast("HeaderTimeout", c.HeaderTimeout, time.Millisecond),
		config.AtLeast("DialTimeout", c.DialTimeout, time.Millisecond),
		config.Between("MaxBodyBytes", c.MaxBodyBytes, 1<<10, 1<<30),
		config.Between("MaxRedirects", c.MaxRedirects, 0, MaxMaxRedirects),
		config.AtLeast("MinHostSpacing", c.MinHostSpacing, 0),
		config.AtLeast("MaxPoliteWait", c.MaxPoliteWait, 10*time.Millisecond),
		config.AtLeast("RobotsTTL", c.RobotsTTL, 0),
		config.AtLeast("RobotsMaxBytes", c.RobotsMaxBytes, 0),
		config.AtLeast("RobotsCacheSize", c.RobotsCacheSize, 0),
		config.AtLeast("MaxCrawlDelay", c.MaxCrawlDelay, 0),
	)
}

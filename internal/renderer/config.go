package renderer

import (
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
)

// Config configures a Renderer. Every field has a default (WithDefaults);
// Validate names every field out of range.
type Config struct {
	// Chromium is the browser's executable; empty finds chromium, then
	// chromium-browser, on PATH.
	Chromium string `env:"PORTALWATCH_RENDER_CHROMIUM"`
	// Tabs is how many pages one renderer renders at once, each in a tab
	// of its own browser context. From 1 to 16; default DefaultTabs, 2.
	Tabs int `env:"PORTALWATCH_RENDER_TABS"`
	// PageTimeout is the hard deadline of one page in the browser, from
	// its navigation to its DOM in hand; the wait for the network to go
	// idle, or for WaitFor, ends PageTimeout/4 (at most 5s) before it.
	// From 2s to 5m; default DefaultPageTimeout, 30s.
	PageTimeout time.Duration `env:"PORTALWATCH_RENDER_PAGE_TIMEOUT"`
	// Idle is how long the page must make no request, after its load
	// event, to count as settled. From 100ms to 10s; default DefaultIdle,
	// 500ms.
	Idle time.Duration `env:"PORTALWATCH_RENDER_IDLE"`
	// MaxDOMBytes bounds the DOM read from the browser: a larger one fails
	// the check as too large. From 64 KiB to 64 MiB; default
	// DefaultMaxDOMBytes, 8 MiB.
	MaxDOMBytes int `env:"PORTALWATCH_RENDER_MAX_DOM_BYTES"`
	// MaxRequests bounds the subresource requests of one page (scripts,
	// styles, XHR, fetch, frames, sockets); the ones past it are refused.
	// From 1 to 10,000; default DefaultMaxRequests, 150.
	MaxRequests int `env:"PORTALWATCH_RENDER_MAX_REQUESTS"`
	// MaxBytes bounds the bytes the subresources of one page may move
	// through the renderer's proxy, both ways; past it the page's
	// connections are cut. From 64 KiB to 1 GiB; default DefaultMaxBytes,
	// 16 MiB.
	MaxBytes int64 `env:"PORTALWATCH_RENDER_MAX_BYTES"`
	// MaxRSS is the resident memory, in bytes, of the browser's process
	// tree past which the browser is killed and replaced; the pages it
	// held are rendered again once in the new one. From 64 MiB to 64 GiB;
	// default DefaultMaxRSS, 768 MiB.
	MaxRSS int64 `env:"PORTALWATCH_RENDER_MAX_RSS"`
	// PagesPerBrowser is how many pages one browser renders before it is
	// replaced, which bounds what leaks inside it. From 1 to 100,000;
	// default DefaultPagesPerBrowser, 200.
	PagesPerBrowser int `env:"PORTALWATCH_RENDER_PAGES_PER_BROWSER"`
	// MaxDeliveries is how many times a job may reach a renderer before
	// its page is failed without rendering: a page that kills the
	// renderer (or its host) every time ends as a failed check instead of
	// a loop. From 1 to 10; default DefaultMaxDeliveries, 3.
	MaxDeliveries int `env:"PORTALWATCH_RENDER_MAX_DELIVERIES"`
	// AllowHosts are hosts, comma-separated, a rendered page may load
	// subresources from besides its own site (a CDN, say): a host matches
	// itself and its subdomains. Empty: the page's site only.
	AllowHosts string `env:"PORTALWATCH_RENDER_ALLOW_HOSTS"`
	// AllowAddrs are addresses (IP:port, comma-separated) the browser may
	// reach even when they are not public: an intranet portal, or a test
	// farm on loopback, exactly, while every other private address stays
	// refused. PORTALWATCH_ALLOW_PRIVATE admits every address instead.
	AllowAddrs string `env:"PORTALWATCH_RENDER_ALLOW_ADDRS"`
	// User is the unprivileged user Chromium runs as when the renderer
	// runs as root, which Chromium refuses with its sandbox on. Default
	// "nobody"; "" runs it as root, which needs NoSandbox.
	User string `env:"PORTALWATCH_RENDER_USER"`
	// NoSandbox starts Chromium with --no-sandbox. Its sandbox needs user
	// namespaces, which most containers do not grant: there the renderer
	// runs with this set and relies on its proxy and its user. Default
	// false.
	NoSandbox bool `env:"PORTALWATCH_RENDER_NO_SANDBOX"`
	// AllowPrivate lets the browser reach every address; the program
	// wires PORTALWATCH_ALLOW_PRIVATE.
	AllowPrivate bool
	// DialGuard makes the net.Dialer Control function the proxy dials
	// with, from AllowPrivate and the parsed AllowAddrs: the program wires
	// the crawler's (fetch.DialGuardAllowing), so that this package needs
	// no other adapter. Required: New refuses a renderer without one.
	DialGuard func(allowPrivate bool, allowed []netip.AddrPort) func(network, address string, c syscall.RawConn) error
	// Proxies returns the operator's proxy of that name
	// (PORTALWATCH_PROXIES) that the subresources of a page naming it go
	// through, or an error saying the list lacks it: the program wires
	// the document fetcher's (fetch.Client.Upstream), so that a page's
	// document and its subresources leave by the same proxy. Nil: a page
	// that names a proxy fails its check, never goes direct.
	Proxies func(name string) (Upstream, error)
	// UserAgent is the browser's User-Agent; the program wires the
	// crawler's, so that a site sees who renders it.
	UserAgent string
	// Watch is how often the memory watchdog reads the browser's process
	// tree. Default 1s.
	Watch time.Duration
}

// Defaults of Config.
const (
	DefaultTabs            = 2
	DefaultPageTimeout     = 30 * time.Second
	DefaultIdle            = 500 * time.Millisecond
	DefaultMaxDOMBytes     = 8 << 20
	DefaultMaxRequests     = 150
	DefaultMaxBytes        = 16 << 20
	DefaultMaxRSS          = 768 << 20
	DefaultPagesPerBrowser = 200
	DefaultMaxDeliveries   = 3
	DefaultUser            = "nobody"
)

// WithDefaults returns c with its zero fields set to their defaults. User
// keeps "" only when NoSandbox is set: root without a sandbox is a choice,
// never a default.
func (c Config) WithDefaults() Config {
	if c.Tabs == 0 {
		c.Tabs = DefaultTabs
	}
	if c.PageTimeout == 0 {
		c.PageTimeout = DefaultPageTimeout
	}
	if c.Idle == 0 {
		c.Idle = DefaultIdle
	}
	if c.MaxDOMBytes == 0 {
		c.MaxDOMBytes = DefaultMaxDOMBytes
	}
	if c.MaxRequests == 0 {
		c.MaxRequests = DefaultMaxRequests
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxRSS == 0 {
		c.MaxRSS = DefaultMaxRSS
	}
	if c.PagesPerBrowser == 0 {
		c.PagesPerBrowser = DefaultPagesPerBrowser
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.User == "" && !c.NoSandbox {
		c.User = DefaultUser
	}
	if c.Watch == 0 {
		c.Watch = time.Second
	}
	return c
}

// Validate refuses what no default can mend, naming every bad field.
func (c Config) Validate() error {
	_, addrErr := c.allowedAddrs()
	return errors.Join(
		config.Between("Tabs", c.Tabs, 1, 16),
		config.Between("PageTimeout", c.PageTimeout, 2*time.Second, 5*time.Minute),
		config.Between("Idle", c.Idle, 100*time.Millisecond, 10*time.Second),
		config.Between("MaxDOMBytes", c.MaxDOMBytes, 64<<10, 64<<20),
		config.Between("MaxRequests", c.MaxRequests, 1, 10_000),
		config.Between("MaxBytes", c.MaxBytes, 64<<10, 1<<30),
		config.Between("MaxRSS", c.MaxRSS, 64<<20, 64<<30),
		config.Between("PagesPerBrowser", c.PagesPerBrowser, 1, 100_000),
		config.Between("MaxDeliveries", c.MaxDeliveries, 1, 10),
		addrErr,
		c.checkChromium(),
	)
}

// chromium returns the browser's path.
func (c Config) chromium() (string, error) {
	names := []string{"chromium", "chromium-browser"}
	if c.Chromium != "" {
		names = []string{c.Chromium}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no Chromium found (%s): install Debian's chromium package (`scripts/services.sh ensure chromium`) or set PORTALWATCH_RENDER_CHROMIUM",
		strings.Join(names, ", "))
}

func (c Config) checkChromium() error {
	if _, err := c.chromium(); err != nil {
		return config.Invalid("Chromium", c.Chromium, err.Error())
	}
	return nil
}

// allowedAddrs parses AllowAddrs.
func (c Config) allowedAddrs() ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	for _, raw := range strings.Split(c.AllowAddrs, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		ap, err := netip.ParseAddrPort(raw)
		if err != nil {
			return nil, config.Invalid("AllowAddrs", c.AllowAddrs, fmt.Sprintf("entry %q is not IP:port, as in 10.0.0.5:8080", raw))
		}
		out = append(out, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	return out, nil
}

// allowedHosts parses AllowHosts, lower-cased, without empty entries.
func (c Config) allowedHosts() []string {
	var out []string
	for _, h := range strings.Split(c.AllowHosts, ",") {
		if h = strings.Trim(strings.ToLower(strings.TrimSpace(h)), "."); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// Package hostgate coordinates the crawlers' visits to each origin through
// Redis, so that politeness holds for the whole fleet and not per process:
//
//   - Reserve books an origin's next fetch slot, a given spacing (the
//     larger of robots.txt's Crawl-delay and the default host spacing) after
//     the slot booked before it by any crawler. It implements fetch.Pacer.
//   - Enter admits a check of an origin only while fewer than
//     Config.MaxInFlight checks of it are in flight across all crawlers.
//
// Each operation is one Lua script on one key, timed by Redis's own clock,
// so it is atomic, immune to skew between crawler hosts, and keeps working
// on a Redis Cluster (the origin's keys share a hash tag). Every key lives
// under Config.Prefix and expires on its own: the slot key once its slot has
// passed, the in-flight key one lease after its last entry.
//
// Redis is a coordinator here, never a dependency: when a call fails the
// gate answers from a per-process copy of the same rules (spacing per
// origin, MaxInFlight checks per origin in this process) and stays with it
// for Config.Cooldown before trying Redis again, so a Redis outage never
// fails a check and costs at most one Config.Timeout per cooldown.
package hostgate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/pacing"
	"github.com/portalwatch/portalwatch/internal/redisconn"
)

// Defaults applied by Open.
const (
	DefaultTimeout   = 250 * time.Millisecond
	DefaultCooldown  = 5 * time.Second
	DefaultLocalSize = 10000
	// DefaultMaxInFlight is the cap the programs use
	// (PORTALWATCH_HOST_MAX_INFLIGHT); Config's zero value means no cap.
	DefaultMaxInFlight = 3
)

// Config configures a Gate.
type Config struct {
	// Prefix starts every key, so instances and tests never collide.
	// Required; the programs use redisconn.DefaultPrefix.
	Prefix string `env:"PORTALWATCH_REDIS_PREFIX"`
	// MaxInFlight is how many checks of one origin may be in flight at once
	// across every crawler sharing the Redis, at most 1000. 0 means no cap;
	// the programs use DefaultMaxInFlight.
	MaxInFlight int `env:"PORTALWATCH_HOST_MAX_INFLIGHT"`
	// Timeout bounds each Redis round trip. Default 250ms.
	Timeout time.Duration
	// Cooldown is how long the gate keeps to its per-process rules after a
	// Redis call failed. Default 5s.
	Cooldown time.Duration
	// LocalSize bounds the origins the per-process rules remember. Default
	// 10000.
	LocalSize int
}

// WithDefaults returns c with every zero field given its default.
// MaxInFlight keeps its zero: it means no cap.
func (c Config) WithDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Cooldown == 0 {
		c.Cooldown = DefaultCooldown
	}
	if c.LocalSize == 0 {
		c.LocalSize = DefaultLocalSize
	}
	return c
}

// Validate names every field that is out of range, in one error.
func (c Config) Validate() error {
	return errors.Join(
		config.Name("Prefix", c.Prefix),
		config.Between("MaxInFlight", c.MaxInFlight, 0, 1000),
		config.AtLeast("Timeout", c.Timeout, time.Nanosecond),
		config.AtLeast("Cooldown", c.Cooldown, time.Nanosecond),
		config.AtLeast("LocalSize", c.LocalSize, 1),
	)
}

// Gate is the fleet-wide gate of every origin. It is safe for concurrent
// use.
type Gate struct {
	rdb   redis.UniversalClient
	cfg   Config
	log   *slog.Logger
	local *local

	// degradedUntil is the Unix nanosecond time until which Redis is not
	// asked, after a failure; 0 while Redis answers.
	degradedUntil atomic.Int64
}

// Open returns a Gate on the Redis that url names: one server, a
// Sentinel-managed primary or a Redis Cluster (see package redisconn for the
// forms). It does not wait for the server: until Redis answers, the
// per-process rules apply. It fails only on a URL it cannot parse; the error
// does not quote the URL.
func Open(url string, cfg Config, log *slog.Logger) (*Gate, error) {
	target, err := redisconn.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Without retries (redisconn sets none): a retry would double the time a
	// check waits on a Redis that is away; the per-process rules answer
	// instead.
	return &Gate{
		rdb:   target.Open(cfg.Timeout),
		cfg:   cfg,
		log:   log,
		local: newLocal(cfg.LocalSize, cfg.MaxInFlight),
	}, nil
}

// Close closes the Redis connections. It is safe to call more than once.
func (g *Gate) Close() error {
	if err := g.rdb.Close(); err != nil && err != redis.ErrClosed {
		return fmt.Errorf("close Redis: %w", err)
	}
	return nil
}

// key returns one of origin's keys. The hash tag is a digest of the origin,
// so that any origin text makes a valid tag and all of its keys share a
// Cluster slot.
func (g *Gate) key(origin, kind string) string {
	sum := sha256.Sum256([]byte(origin))
	return g.cfg.Prefix + ":gate:{" + hex.EncodeToString(sum[:12]) + "}:" + kind
}

// reserveScript books the next slot of KEYS[1] (a time in Unix ms): ARGV[1]
// is the spacing in ms, ARGV[2] the longest wait that still books. It
// returns {booked (0 or 1), wait in ms}.
var reserveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local wait = slot - now
if wait > tonumber(ARGV[2]) then return {0, wait} end
local spacing = tonumber(ARGV[1])
redis.call('SET', KEYS[1], slot + spacing, 'PX', wait + spacing)
return {1, wait}
`)

// Reserve books origin's next fetch slot spacing after the slot booked
// before it by any crawler, and returns how long from now it is. A slot more
// than maxWait away is not booked (booked false, wait until it). It never
// fails: when Redis does not answer within Config.Timeout, the slot comes
// from this process's own bookings.
func (g *Gate) Reserve(ctx context.Context, origin string, spacing, maxWait time.Duration) (time.Duration, bool) {
	if spacing <= 0 {
		return 0, true
	}
	if g.redisUp() {
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		res, err := reserveScript.Run(rctx, g.rdb, []string{g.key(origin, "next")},
			max(spacing.Milliseconds(), 1), maxWait.Milliseconds()).Int64Slice()
		cancel()
		if err == nil && len(res) == 2 {
			return time.Duration(res[1]) * time.Millisecond, res[0] == 1
		}
		g.redisFailed(ctx, "reserve", origin, err)
	}
	return g.local.reserve(origin, spacing, maxWait)
}

// enterScript admits one more check into the sorted set KEYS[1] of
// in-flight checks (member a token, score its lease end in Unix ms) unless
// ARGV[1] unexpired ones are in it already: ARGV[2] is the lease in ms,
// ARGV[3] the token. It returns 1 when admitted.
var enterScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
local lease = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return 1
`)

// Enter admits a check of origin when fewer than Config.MaxInFlight are in
// flight across all crawlers; leave must be called when the check no longer
// talks to the origin. lease bounds how long the admission holds if leave
// is never called (a crawler that died). ok is false when the origin is
// full; then leave is a no-op. Like Reserve it never fails: without Redis
// the cap holds per process.
func (g *Gate) Enter(ctx context.Context, origin string, lease time.Duration) (leave func(), ok bool) {
	if g.cfg.MaxInFlight <= 0 {
		return func() {}, true
	}
	if g.redisUp() {
		key, token := g.key(origin, "busy"), strconv.FormatUint(rand.Uint64(), 36)
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		admitted, err := enterScript.Run(rctx, g.rdb, []string{key},
			g.cfg.MaxInFlight, max(lease.Milliseconds(), 1), token).Int()
		cancel()
		if err == nil {
			if admitted != 1 {
				return func() {}, false
			}
			return func() { g.leave(ctx, origin, key, token) }, true
		}
		g.redisFailed(ctx, "enter", origin, err)
	}
	return g.local.enter(origin)
}

// leave removes one admission. Its context outlives the caller's, which
// may have ended with the check; a failure only leaves the admission to
// expire with its lease.
func (g *Gate) leave(ctx context.Context, origin, key, token string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.Timeout)
	defer cancel()
	if err := g.rdb.ZRem(rctx, key, token).Err(); err != nil {
		g.log.Warn("host gate: leaving failed; the slot frees when its lease ends", "origin", origin, "err", err)
	}
}

// redisUp reports whether Redis should be asked, that is no call failed in
// the last Config.Cooldown.
func (g *Gate) redisUp() bool {
	until := g.degradedUntil.Load()
	if until == 0 {
		return true
	}
	if time.Now().UnixNano() < until {
		return false
	}
	if g.degradedUntil.CompareAndSwap(until, 0) {
		g.log.Info("host gate: asking Redis again")
	}
	return true
}

// redisFailed switches to the per-process rules for Config.Cooldown. A call
// that failed because the caller's own context ended says nothing about
// Redis and switches nothing.
func (g *Gate) redisFailed(ctx context.Context, op, origin string, err error) {
	if ctx.Err() != nil {
		return
	}
	if g.degradedUntil.Swap(time.Now().Add(g.cfg.Cooldown).UnixNano()) == 0 {
		g.log.Warn("host gate: Redis unavailable; spacing and in-flight caps hold per crawler until it answers",
			"op", op, "origin", origin, "retry_in", g.cfg.Cooldown.String(), "err", err)
	}
}

// local holds the per-process rules used while Redis is away: the same
// spacing per origin and the same in-flight cap, counted in this process.
type local struct {
	maxInFlight int

	slots *pacing.Slots // the next free slot per origin

	mu   sync.Mutex
	busy map[string]int // checks in flight per origin
}

func newLocal(size, maxInFlight int) *local {
	return &local{maxInFlight: maxInFlight, slots: pacing.New(size, nil), busy: make(map[string]int)}
}

func (l *local) reserve(origin string, spacing, maxWait time.Duration) (time.Duration, bool) {
	return l.slots.Reserve(origin, spacing, maxWait)
}

func (l *local) enter(origin string) (func(), bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[origin] >= l.maxInFlight {
		return func() {}, false
	}
	l.busy[origin]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.busy[origin]--; l.busy[origin] <= 0 {
				delete(l.busy, origin)
			}
		})
	}, true
}

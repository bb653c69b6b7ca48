// Package hostgate is the fleet's per-origin budget: one budget for each
// origin, kept in Redis, so that politeness holds for the whole fleet and
// not per process, and so that the scheduler can hand out fetch slots the
// way a crawl frontier does instead of letting crawlers find their origin
// busy:
//
//   - Book books slots for the checks the scheduler is about to dispatch,
//     many origins in one round trip, only as far ahead as a horizon; a
//     check whose slot lies further is not dispatched yet.
//   - Reserve books one origin's next slot for a fetch that has none (a
//     crawler's, when its job carried no slot or a stale one). It
//     implements fetch.Pacer, and remembers the Crawl-delay the crawler
//     read, so that the scheduler's bookings keep it too.
//   - Enter admits a check of an origin only while fewer than
//     Config.MaxInFlight fetches of it are in flight across all crawlers.
//
// Slots are spaced by the larger of the fleet's host spacing and the
// origin's Crawl-delay. Fetches have a Class: the pages' checks are the
// first, Homepage; the classes below it (added by later sources) book only
// slots free now and leave one in-flight place to the first.
//
// Each operation is one Lua script on one origin's keys, timed by Redis's
// own clock, so it is atomic, immune to skew between hosts, and keeps
// working on a Redis Cluster (the origin's keys share a hash tag). Every key
// lives under Config.Prefix and expires on its own: the slot key once its
// slot has passed, the in-flight key one lease after its last entry, the
// Crawl-delay after DelayTTL.
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
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/pacing"
	"github.com/portalwatch/portalwatch/internal/redisconn"
	"github.com/portalwatch/portalwatch/internal/watch"
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
		local: newLocal(cfg.LocalSize),
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

// Class ranks the fetches that share an origin's budget (watch.FetchClass).
type Class = watch.FetchClass

// Homepage is the first class: checks of watched pages.
const Homepage = watch.HomepageFetch

// DelayTTL is how long the gate remembers the Crawl-delay a crawler read
// for an origin, for the scheduler's bookings: as long as a crawler keeps
// a robots.txt (fetch.DefaultRobotsTTL), and refreshed by every fetch.
const DelayTTL = time.Hour

// reserveScript books up to ARGV[4] consecutive slots of the origin whose
// next free slot (a time in Unix ms) is KEYS[1]. ARGV[1] is the spacing in
// ms and ARGV[2] the longest wait that still books. ARGV[3] is the
// origin's Crawl-delay in ms as a crawler just read it, remembered in
// KEYS[2] for DelayTTL (ARGV[5] ms), or -1 when the caller did not read
// robots.txt: then the remembered one applies. The spacing kept is the
// larger of ARGV[1] and the Crawl-delay. It returns {booked, spacing, now,
// wait of each booked slot..., wait of the first slot not booked}, times
// in ms and now by Redis's clock.
var reserveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local delay = tonumber(ARGV[3])
if delay > 0 then
  redis.call('SET', KEYS[2], delay, 'PX', ARGV[5])
elseif delay == 0 then
  redis.call('DEL', KEYS[2])
else
  delay = tonumber(redis.call('GET', KEYS[2]) or '0')
end
local spacing = math.max(tonumber(ARGV[1]), delay)
local maxWait = tonumber(ARGV[2])
local slot = tonumber(redis.call('GET', KEYS[1]) or '0')
if slot < now then slot = now end
local out = {0, spacing, now}
for i = 1, tonumber(ARGV[4]) do
  if slot - now > maxWait then break end
  out[1] = i
  out[#out + 1] = slot - now
  slot = slot + spacing
end
if out[1] > 0 then redis.call('SET', KEYS[1], slot, 'PX', slot - now) end
out[#out + 1] = slot - now
return out
`)

// Reserve books origin's next fetch slot spacing after the slot booked
// before it by any crawler or scheduler, and returns how long from now it
// is. A slot more than maxWait away is not booked (booked false, wait until
// it). crawlDelay is the origin's robots.txt Crawl-delay as the caller just
// read it (0: none, negative: not read), which spacing must already
// include; the gate remembers it so that the scheduler's bookings keep it
// too. It never fails: when Redis does not answer within Config.Timeout,
// the slot comes from this process's own bookings. It implements
// fetch.Pacer for the Homepage class.
func (g *Gate) Reserve(ctx context.Context, origin string, spacing, crawlDelay, maxWait time.Duration) (time.Duration, bool) {
	if spacing <= 0 {
		return 0, true
	}
	if g.redisUp() {
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		res, err := reserveScript.Run(rctx, g.rdb, g.slotKeys(origin), g.reserveArgs(spacing, crawlDelay, maxWait, 1)...).Int64Slice()
		cancel()
		if err == nil && len(res) >= 4 {
			return time.Duration(res[3]) * time.Millisecond, res[0] == 1
		}
		g.redisFailed(ctx, "reserve", origin, err)
	}
	return g.local.reserve(origin, spacing, maxWait)
}

// takeScript marks a fetch of the origin as starting: not sooner than
// ARGV[1] ms after the last one that started (KEYS[1], a time in Unix ms).
// It returns how long from now the fetch may start.
var takeScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local spacing = tonumber(ARGV[1])
local start = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0') + spacing)
redis.call('SET', KEYS[1], start, 'PX', start - now + spacing)
return start - now
`)

// Take marks a fetch of origin as starting, at its slot, and returns how
// long it must still wait so that it starts at least spacing after the
// fetch of origin that started last. A booked slot is a plan: a fetch
// that started late by some milliseconds (its crawler was busy) would
// otherwise leave the next one, on time, closer to it than the spacing.
// Like Reserve it never fails.
func (g *Gate) Take(ctx context.Context, origin string, spacing time.Duration) time.Duration {
	if spacing <= 0 {
		return 0
	}
	if g.redisUp() {
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		wait, err := takeScript.Run(rctx, g.rdb, []string{g.key(origin, "last")}, max(spacing.Milliseconds(), 1)).Int64()
		cancel()
		if err == nil {
			return time.Duration(wait) * time.Millisecond
		}
		g.redisFailed(ctx, "take", origin, err)
	}
	wait, _ := g.local.last.Reserve(origin, spacing, time.Duration(math.MaxInt64))
	return wait
}

func (g *Gate) slotKeys(origin string) []string {
	return []string{g.key(origin, "next"), g.key(origin, "delay")}
}

func (g *Gate) reserveArgs(spacing, crawlDelay, maxWait time.Duration, n int) []any {
	delay := int64(-1)
	if crawlDelay >= 0 {
		delay = crawlDelay.Milliseconds()
	}
	return []any{max(spacing.Milliseconds(), 1), max(maxWait.Milliseconds(), 0), delay, n, DelayTTL.Milliseconds()}
}

// Request asks Book for N slots of one origin (watch.SlotRequest).
type Request = watch.SlotRequest

// Booking is what Book booked for one Request (watch.Booking).
type Booking = watch.Booking

// book books reqs in Redis, in one pipeline of the loaded script (a second
// one with its text when Redis has not loaded it yet), filling out and done
// for each request Redis answered.
func (g *Gate) book(ctx context.Context, spacing, horizon time.Duration, reqs []Request, out []Booking, done []bool) error {
	run := func(todo []int, sha bool) (noScript []int, err error) {
		pipe := g.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(todo))
		for k, i := range todo {
			keys, args := g.slotKeys(reqs[i].Origin), g.reserveArgs(spacing, -1, horizon, reqs[i].N)
			if sha {
				cmds[k] = reserveScript.EvalSha(ctx, pipe, keys, args...)
			} else {
				cmds[k] = reserveScript.Eval(ctx, pipe, keys, args...)
			}
		}
		_, _ = pipe.Exec(ctx) // each command's own error is looked at below
		for k, cmd := range cmds {
			res, cerr := cmd.Int64Slice()
			switch {
			case cerr != nil && sha && redis.HasErrorPrefix(cerr, "NOSCRIPT"):
				noScript = append(noScript, todo[k])
			case cerr != nil:
				err = cerr
			case len(res) < 4 || int(res[0]) > len(res)-4:
				err = fmt.Errorf("book: unexpected reply %v", res)
			default:
				i, now := todo[k], time.UnixMilli(res[2])
				out[i] = Booking{Spacing: time.Duration(res[1]) * time.Millisecond, Next: now.Add(time.Duration(res[len(res)-1]) * time.Millisecond)}
				for _, w := range res[3 : 3+res[0]] {
					out[i].Slots = append(out[i].Slots, now.Add(time.Duration(w)*time.Millisecond))
				}
				done[i] = true
			}
		}
		return noScript, err
	}
	all := make([]int, len(reqs))
	for i := range all {
		all[i] = i
	}
	noScript, err := run(all, true)
	if len(noScript) > 0 {
		_, err2 := run(noScript, false)
		err = errors.Join(err, err2)
	}
	return err
}

// Book books, for each request, up to N consecutive slots of its origin
// that lie within horizon, spacing apart or more where the origin's
// remembered Crawl-delay asks for more, in one round trip for all of
// them. A class below Homepage books only slots free now. It never fails:
// an origin that Redis does not answer for is booked from this process's
// own rules.
func (g *Gate) Book(ctx context.Context, class Class, spacing, horizon time.Duration, reqs []Request) []Booking {
	out := make([]Booking, len(reqs))
	if class > Homepage {
		horizon = 0
	}
	if spacing <= 0 {
		now := time.Now()
		for i, r := range reqs {
			out[i] = Booking{Slots: slices.Repeat([]time.Time{now}, r.N), Next: now}
		}
		return out
	}
	done := make([]bool, len(reqs))
	if g.redisUp() && len(reqs) > 0 {
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		err := g.book(rctx, spacing, horizon, reqs, out, done)
		cancel()
		if err != nil {
			g.redisFailed(ctx, "book", reqs[0].Origin, err)
		}
	}
	for i, r := range reqs {
		if done[i] {
			continue
		}
		now := time.Now()
		b := Booking{Spacing: spacing}
		for range r.N {
			wait, booked := g.local.reserve(r.Origin, spacing, horizon)
			b.Next = now.Add(wait)
			if !booked {
				break
			}
			b.Slots = append(b.Slots, b.Next)
			b.Next = b.Next.Add(spacing)
		}
		out[i] = b
	}
	return out
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

// Enter admits a Homepage check of origin (see EnterAs).
func (g *Gate) Enter(ctx context.Context, origin string, lease time.Duration) (leave func(), ok bool) {
	return g.EnterAs(ctx, Homepage, origin, lease)
}

// EnterAs admits a fetch of class into origin when fewer than
// Config.MaxInFlight are in flight across all processes, or, for a class
// below Homepage, fewer than MaxInFlight-1 (so one place stays for the
// pages' checks); leave must be called when the fetch no longer talks to
// the origin. lease bounds how long the admission holds if leave is never
// called (a crawler that died). ok is false when the origin is full; then
// leave is a no-op. Like Reserve it never fails: without Redis the cap
// holds per process.
func (g *Gate) EnterAs(ctx context.Context, class Class, origin string, lease time.Duration) (leave func(), ok bool) {
	if g.cfg.MaxInFlight <= 0 {
		return func() {}, true
	}
	limit := g.cfg.MaxInFlight
	if class > Homepage && limit > 1 {
		limit--
	}
	if g.redisUp() {
		key, token := g.key(origin, "busy"), strconv.FormatUint(rand.Uint64(), 36)
		rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
		admitted, err := enterScript.Run(rctx, g.rdb, []string{key},
			limit, max(lease.Milliseconds(), 1), token).Int()
		cancel()
		if err == nil {
			if admitted != 1 {
				return func() {}, false
			}
			return func() { g.leave(ctx, origin, key, token) }, true
		}
		g.redisFailed(ctx, "enter", origin, err)
	}
	return g.local.enter(origin, limit)
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
// spacing per origin and the same in-flight caps, counted in this process.
type local struct {
	last  *pacing.Slots // when the last fetch per origin started
	slots *pacing.Slots // the next free slot per origin

	mu   sync.Mutex
	busy map[string]int // checks in flight per origin
}

func newLocal(size int) *local {
	return &local{last: pacing.New(size, nil), slots: pacing.New(size, nil), busy: make(map[string]int)}
}

func (l *local) reserve(origin string, spacing, maxWait time.Duration) (time.Duration, bool) {
	return l.slots.Reserve(origin, spacing, maxWait)
}

func (l *local) enter(origin string, limit int) (func(), bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[origin] >= limit {
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

// dailyScript counts one more fetch in KEYS[1], a counter of one UTC day
// that expires two days after it starts, unless it reached ARGV[1]
// already. It returns the count, or -1 when the cap was reached.
var dailyScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return -1 end
n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], 172800) end
return n
`)

// undoDailyScript takes one count back from KEYS[1] while the counter
// exists: a plain DECR of a counter that expired in the meantime would
// make one at -1 that never expires.
var undoDailyScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0
`)

// CountDaily counts one more fetch of class in origin today (UTC) and
// reports whether it stays within limit fetches of that class a day,
// across all processes; undo takes the count back, for a fetch that was
// not made after all. Without Redis it counts nothing and allows: a cap
// on what may be fetched is not worth failing over.
func (g *Gate) CountDaily(ctx context.Context, class Class, origin string, limit int) (undo func(), ok bool) {
	if limit <= 0 || !g.redisUp() {
		return func() {}, true
	}
	key := g.key(origin, fmt.Sprintf("day%d:%s", class, time.Now().UTC().Format("20060102")))
	rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	n, err := dailyScript.Run(rctx, g.rdb, []string{key}, limit).Int()
	cancel()
	if err != nil {
		g.redisFailed(ctx, "count", origin, err)
		return func() {}, true
	}
	if n < 0 {
		return func() {}, false
	}
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.cfg.Timeout)
		defer cancel()
		if err := undoDailyScript.Run(rctx, g.rdb, []string{key}).Err(); err != nil {
			g.log.Warn("host gate: could not take back a daily count", "origin", origin, "err", err)
		}
	}, true
}

// ClassPacer is the gate as the fetch.Pacer of one class of fetches.
type ClassPacer struct {
	g     *Gate
	class Class
}

// PacerFor returns the gate as the pacer of class's fetches: a class below
// Homepage books only a slot that is free now, never one ahead, so the
// pages' checks, which the scheduler books ahead, keep their slots; its
// fetch is deferred to the next free slot instead.
func (g *Gate) PacerFor(class Class) ClassPacer { return ClassPacer{g: g, class: class} }

// Reserve is Gate.Reserve within the class's rule.
func (p ClassPacer) Reserve(ctx context.Context, origin string, spacing, crawlDelay, maxWait time.Duration) (time.Duration, bool) {
	if p.class > Homepage {
		maxWait = 0
	}
	return p.g.Reserve(ctx, origin, spacing, crawlDelay, maxWait)
}

// Take is Gate.Take.
func (p ClassPacer) Take(ctx context.Context, origin string, spacing time.Duration) time.Duration {
	return p.g.Take(ctx, origin, spacing)
}

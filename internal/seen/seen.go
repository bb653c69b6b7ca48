// Package seen is the Redis cache of each page's seen links. It only ever
// spares PostgreSQL the links that are certainly old: a code is added only
// after the link's row is committed, and every Redis failure reads as "not
// seen", so losing Redis costs one slower round and never an update.
//
// A code is whatever 63-bit number the caller gives for a link; the
// processor's codes hash a link's key with its headline, so that a rewritten
// headline reads as unseen (and keys carry "seen2", so that the sets of the
// old codes, short-code values, are never read).
//
// Memory: a page's codes are spread over Buckets sets by value. Sets of integers
// stay in Redis's compact intset encoding (8 bytes per code) while they hold
// at most set-max-intset-entries (512 by default) members, so a page keeps the
// compact form up to about Buckets × 450 links; with 8 buckets that is about
// 3,600 links, far above a portal's homepage.
//
// Growth: a page's sets belong to a generation, TTL long (offset per page so
// that pages do not all roll over at once). A set expires at a fixed time, the
// end of its generation plus one TTL, which writes never push back: a page
// that keeps adding codes cannot keep its sets alive forever. A new
// generation starts empty, and each old link costs one PostgreSQL lookup per
// generation. A set holds at most MaxPerBucket codes, so a page rotating
// thousands of new links per check costs Redis at most Buckets ×
// MaxPerBucket codes, all in the intset encoding; the codes that do not fit
// are not cached, and PostgreSQL decides them.
package seen

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/redisconn"
)

// Defaults applied by Config.WithDefaults.
const (
	// DefaultTTL is Config.TTL's default, 30 days.
	DefaultTTL = 30 * 24 * time.Hour
	// DefaultBuckets is Config.Buckets' default.
	DefaultBuckets = 8
	// DefaultMaxPerBucket is Config.MaxPerBucket's default: Redis's default
	// set-max-intset-entries.
	DefaultMaxPerBucket = 512
	// DefaultTimeout is Config.Timeout's default.
	DefaultTimeout = 2 * time.Second
)

// Config configures a Set.
type Config struct {
	// Prefix starts every key, so instances and tests never collide.
	// Required; the programs use redisconn.DefaultPrefix.
	Prefix string `env:"PORTALWATCH_REDIS_PREFIX"`
	// Epoch is the database's epoch (store.Epoch): a cache filled for another
	// incarnation of the database is never read.
	Epoch string
	// Buckets is how many sets hold one page's codes. Default 8. Changing it
	// only costs cache misses: old keys are never read and expire.
	Buckets int
	// TTL is the length of a page's seen-set generation. Default 30 days. A
	// set is written during its generation only and expires one TTL after it
	// ends, so codes live at most two TTLs; then the page rebuilds its cache
	// from PostgreSQL, one lookup per link.
	TTL time.Duration `env:"PORTALWATCH_SEEN_TTL"`
	// MaxPerBucket caps the codes of one set. Default 512, Redis's default
	// set-max-intset-entries, so that every set stays in the compact intset
	// encoding (8 bytes per code instead of about 52). Codes past it are not
	// cached: PostgreSQL decides them. A page keeps every code cached up to
	// about Buckets × 450 links (8 buckets: 3,600).
	MaxPerBucket int
	// Now returns the current time; default time.Now. Tests move it.
	Now func() time.Time
	// Timeout bounds each Redis round trip, so a hung Redis only delays a
	// task by this much before it is treated as a miss. Default 2s.
	Timeout time.Duration
}

// WithDefaults returns c with every zero field given its default.
func (c Config) WithDefaults() Config {
	if c.Buckets == 0 {
		c.Buckets = DefaultBuckets
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxPerBucket == 0 {
		c.MaxPerBucket = DefaultMaxPerBucket
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Validate names every field that is out of range, in one error.
func (c Config) Validate() error {
	return errors.Join(
		config.Name("Prefix", c.Prefix),
		config.AtLeast("Buckets", c.Buckets, 1),
		config.AtLeast("TTL", c.TTL, time.Minute),
		config.AtLeast("Timeout", c.Timeout, time.Nanosecond),
		config.AtLeast("MaxPerBucket", c.MaxPerBucket, 1),
	)
}

// Set is the seen-set of every page. It is safe for concurrent use.
type Set struct {
	rdb redis.UniversalClient
	cfg Config
}

// Open connects to the Redis that url names: one server, a Sentinel-managed
// primary or a Redis Cluster (see package redisconn for the forms). It does
// not wait for the server. It fails only on a URL it cannot parse; the
// error does not quote the URL.
func Open(url string, cfg Config) (*Set, error) {
	target, err := redisconn.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", err)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// A cache that is down must not hold a task back with retries of its own
	// (redisconn sets none): a failed command is a cache miss, and PostgreSQL
	// decides. With even one retry (go-redis's backoff between attempts) a
	// task took 49 ms instead of 3.6 ms while Redis was unreachable
	// (processor BenchmarkHandle/no-cache). The price is that a pooled
	// connection Redis closed (after its restart) fails one command instead
	// of being redialled within it.
	return &Set{rdb: target.Open(cfg.Timeout), cfg: cfg}, nil
}

// Close closes the connections. It is safe to call more than once.
func (s *Set) Close() error {
	if err := s.rdb.Close(); err != nil && err != redis.ErrClosed {
		return fmt.Errorf("close Redis: %w", err)
	}
	return nil
}

// Ping checks that Redis answers.
func (s *Set) Ping(ctx context.Context) error {
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping Redis: %w", err)
	}
	return nil
}

// HealthCheck pings Redis within a second, for /healthz.
func (s *Set) HealthCheck() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.Ping(ctx)
}

// generation returns the page's current generation and the time its sets
// expire. Each page's generations are shifted by an offset drawn from its id,
// so that pages registered together do not all start over at once.
func (s *Set) generation(pageID int64) (gen int64, expireAt time.Time) {
	ttl := int64(s.cfg.TTL / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	offset := int64(uint64(pageID)*0x9E3779B97F4A7C15>>1) % ttl
	shifted := s.cfg.Now().Unix() + offset
	gen = shifted / ttl
	end := (gen+1)*ttl - offset
	return gen, time.Unix(end+ttl, 0)
}

// key returns one of a page's sets. The page id is the key's hash tag, so
// that on a Redis Cluster all of a page's sets share a slot: Forget's DEL
// of several keys is legal there, and a page's lookups go to one node, so
// losing a node costs the pages on it their cache and no other page a
// round trip.
func (s *Set) key(pageID, gen int64, bucket int) string {
	return s.cfg.Prefix + ":seen2:" + s.cfg.Epoch + ":{" + strconv.FormatInt(pageID, 10) + "}:" +
		strconv.FormatInt(gen, 10) + ":" + strconv.Itoa(bucket)
}

func (s *Set) bucket(code uint64) int { return int(code % uint64(s.cfg.Buckets)) }

// Seen reports, for each code, whether the page's set holds it. On a Redis
// error it returns the error and nil: the caller treats every code as unseen.
func (s *Set) Seen(ctx context.Context, pageID int64, codes []uint64) ([]bool, error) {
	if len(codes) == 0 {
		return nil, nil
	}
	byBucket := s.group(codes)
	gen, _ := s.generation(pageID)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	cmds := make(map[int]*redis.BoolSliceCmd, len(byBucket))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b, idx := range byBucket {
			members := make([]any, len(idx))
			for i, j := range idx {
				members[i] = codes[j]
			}
			cmds[b] = p.SMIsMember(ctx, s.key(pageID, gen, b), members...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up %d codes of page %d in Redis: %w", len(codes), pageID, err)
	}
	seen := make([]bool, len(codes))
	for b, idx := range byBucket {
		for i, hit := range cmds[b].Val() {
			seen[idx[i]] = hit
		}
	}
	return seen, nil
}

// addScript adds codes (ARGV[3:]) to a set (KEYS[1]) while it holds fewer
// than ARGV[1], and sets its expiry to the time ARGV[2] (Unix seconds) when
// it added any. As a script it is atomic: concurrent writers cannot push a
// set past its cap. It returns how many codes it added.
var addScript = redis.NewScript(`
local room = tonumber(ARGV[1]) - redis.call('SCARD', KEYS[1])
local added = 0
for i = 3, #ARGV do
	if room <= 0 then break end
	local n = redis.call('SADD', KEYS[1], ARGV[i])
	room = room - n
	added = added + n
end
if added > 0 then redis.call('EXPIREAT', KEYS[1], ARGV[2]) end
return added
`)

// Add records codes as seen for the page in its current generation. The sets
// expire at the generation's fixed time, which Add never pushes back, and a
// set holds at most MaxPerBucket codes: codes past that are not cached, and
// PostgreSQL decides them. Call it only after the links are committed in
// PostgreSQL.
func (s *Set) Add(ctx context.Context, pageID int64, codes []uint64) error {
	if len(codes) == 0 {
		return nil
	}
	byBucket := s.group(codes)
	gen, expireAt := s.generation(pageID)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	add := func(run func(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd) error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for b, idx := range byBucket {
				args := make([]any, 2, 2+len(idx))
				args[0], args[1] = s.cfg.MaxPerBucket, expireAt.Unix()
				for _, j := range idx {
					args = append(args, codes[j])
				}
				run(ctx, p, []string{s.key(pageID, gen, b)}, args...)
			}
			return nil
		})
		return err
	}
	err := add(addScript.EvalSha)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// A Redis that restarted or was flushed has forgotten the script;
		// EvalSha in a pipeline cannot fall back to EVAL by itself. EVAL
		// sends the script to the node that holds the page's sets and
		// caches it there: a SCRIPT LOAD would go to every master of a
		// cluster, and fail while any of them is lost.
		err = add(addScript.Eval)
	}
	if err != nil {
		return fmt.Errorf("add %d codes of page %d to Redis: %w", len(codes), pageID, err)
	}
	return nil
}

// Remove drops codes from the page's sets of the current generation, as when
// a link's headline changed and its old code must read as unseen again.
func (s *Set) Remove(ctx context.Context, pageID int64, codes []uint64) error {
	if len(codes) == 0 {
		return nil
	}
	byBucket := s.group(codes)
	gen, _ := s.generation(pageID)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b, idx := range byBucket {
			members := make([]any, len(idx))
			for i, j := range idx {
				members[i] = codes[j]
			}
			p.SRem(ctx, s.key(pageID, gen, b), members...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("remove %d codes of page %d from Redis: %w", len(codes), pageID, err)
	}
	return nil
}

// Forget drops a page's sets of the current generation, as when the page is
// removed; older generations expire by themselves.
func (s *Set) Forget(ctx context.Context, pageID int64) error {
	gen, _ := s.generation(pageID)
	keys := make([]string, s.cfg.Buckets)
	for b := range keys {
		keys[b] = s.key(pageID, gen, b)
	}
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("forget page %d in Redis: %w", pageID, err)
	}
	return nil
}

// group returns the indexes of codes by bucket.
func (s *Set) group(codes []uint64) map[int][]int {
	byBucket := make(map[int][]int, s.cfg.Buckets)
	for i, c := range codes {
		b := s.bucket(c)
		byBucket[b] = append(byBucket[b], i)
	}
	return byBucket
}

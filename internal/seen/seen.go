// Package seen is the Redis cache of each page's seen links. It only ever
// spares PostgreSQL the links that are certainly old: a code is added only
// after the link's row is committed, and every Redis failure reads as "not
// seen", so losing Redis costs one slower round and never an update.
//
// Memory: a page's codes are the integer values of its short codes
// (shortlink.CodeValue) spread over Buckets sets by value. Sets of integers
// stay in Redis's compact intset encoding (8 bytes per code) while they hold
// at most set-max-intset-entries (512 by default) members, so a page keeps the
// compact form up to about Buckets × 450 links; with 8 buckets that is about
// 3,600 links, far above a portal's homepage.
package seen

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config configures a Set.
type Config struct {
	// Prefix starts every key, so instances and tests never collide.
	Prefix string
	// Epoch is the database's epoch (store.Epoch): a cache filled for another
	// incarnation of the database is never read.
	Epoch string
	// Buckets is how many sets hold one page's codes. Default 8. Changing it
	// only costs cache misses: old keys are never read and expire.
	Buckets int
	// TTL is how long a page's sets live after their last write. Default 30
	// days; a page not checked for that long rebuilds its cache from
	// PostgreSQL.
	TTL time.Duration
	// Timeout bounds each Redis round trip, so a hung Redis only delays a
	// task by this much before it is treated as a miss. Default 2s.
	Timeout time.Duration
}

// Set is the seen-set of every page. It is safe for concurrent use.
type Set struct {
	rdb *redis.Client
	cfg Config
}

// Open connects to Redis at url. It does not wait for the server.
func Open(url string, cfg Config) (*Set, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse REDIS_URL: %w", withoutURL(err))
	}
	if cfg.Buckets <= 0 {
		cfg.Buckets = 8
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 30 * 24 * time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	opts.DialTimeout = cfg.Timeout
	opts.ReadTimeout = cfg.Timeout
	opts.WriteTimeout = cfg.Timeout
	// A cache that is down must not hold a task back with retries of its own:
	// a failed command is a cache miss, and PostgreSQL decides. With even one
	// retry (go-redis's backoff between attempts) a task took 49 ms instead
	// of 3.6 ms while Redis was unreachable (processor BenchmarkHandle/no-cache).
	// The price is that a pooled connection Redis closed (after its restart)
	// fails one command instead of being redialled within it.
	opts.MaxRetries = -1
	opts.DialerRetries = 1
	return &Set{rdb: redis.NewClient(opts), cfg: cfg}, nil
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

func (s *Set) key(pageID int64, bucket int) string {
	return s.cfg.Prefix + ":seen:" + s.cfg.Epoch + ":" + strconv.FormatInt(pageID, 10) + ":" + strconv.Itoa(bucket)
}

func (s *Set) bucket(code uint64) int { return int(code % uint64(s.cfg.Buckets)) }

// Seen reports, for each code, whether the page's set holds it. On a Redis
// error it returns the error and nil: the caller treats every code as unseen.
func (s *Set) Seen(ctx context.Context, pageID int64, codes []uint64) ([]bool, error) {
	if len(codes) == 0 {
		return nil, nil
	}
	byBucket := s.group(codes)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	cmds := make(map[int]*redis.BoolSliceCmd, len(byBucket))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b, idx := range byBucket {
			members := make([]any, len(idx))
			for i, j := range idx {
				members[i] = codes[j]
			}
			cmds[b] = p.SMIsMember(ctx, s.key(pageID, b), members...)
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

// Add records codes as seen for the page and renews the TTL of the sets it
// touches. Call it only after the links are committed in PostgreSQL.
func (s *Set) Add(ctx context.Context, pageID int64, codes []uint64) error {
	if len(codes) == 0 {
		return nil
	}
	byBucket := s.group(codes)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b, idx := range byBucket {
			members := make([]any, len(idx))
			for i, j := range idx {
				members[i] = codes[j]
			}
			key := s.key(pageID, b)
			p.SAdd(ctx, key, members...)
			p.Expire(ctx, key, s.cfg.TTL)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("add %d codes of page %d to Redis: %w", len(codes), pageID, err)
	}
	return nil
}

// Forget drops a page's sets, as when the page is removed.
func (s *Set) Forget(ctx context.Context, pageID int64) error {
	keys := make([]string, s.cfg.Buckets)
	for b := range keys {
		keys[b] = s.key(pageID, b)
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

// withoutURL drops the URL that net/url quotes, password included, in its
// parse errors, keeping the reason: a connection error must never carry a
// credential into a log.
func withoutURL(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

package seen_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/seen"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

func open(t *testing.T, cfg seen.Config) (*seen.Set, *redis.Client) {
	t.Helper()
	url, prefix := testsvc.Redis(t)
	cfg.Prefix = prefix
	s, err := seen.Open(url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	return s, rdb
}

func TestSeenAfterAddOnly(t *testing.T) {
	s, _ := open(t, seen.Config{Epoch: "e1"})
	ctx := context.Background()
	codes := []uint64{1, 2, 3, 1 << 40, 62*62*62*62*62*62*62*62 - 1}
	got, err := s.Seen(ctx, 7, codes)
	if err != nil {
		t.Fatal(err)
	}
	for i, hit := range got {
		if hit {
			t.Errorf("code %d seen before any Add", codes[i])
		}
	}
	if err := s.Add(ctx, 7, codes[:3]); err != nil {
		t.Fatal(err)
	}
	got, err = s.Seen(ctx, 7, codes)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Seen(code %d) = %v, want %v", codes[i], got[i], want[i])
		}
	}
	// A removed code reads as unseen again; the others stay.
	if err := s.Remove(ctx, 7, []uint64{2, 1 << 40}); err != nil {
		t.Fatal(err)
	}
	if got, err = s.Seen(ctx, 7, codes[:3]); err != nil || !got[0] || got[1] || !got[2] {
		t.Errorf("after removing code 2: Seen = %v, %v; want 1 and 3 only", got, err)
	}
	// Pages are separate: page 8 has seen nothing.
	other, err := s.Seen(ctx, 8, codes[:3])
	if err != nil {
		t.Fatal(err)
	}
	for i, hit := range other {
		if hit {
			t.Errorf("page 8 sees page 7's code %d", codes[i])
		}
	}
}

func TestAnotherEpochSeesNothing(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	ctx := context.Background()
	old, err := seen.Open(url, seen.Config{Prefix: prefix, Epoch: "old"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := old.Add(ctx, 1, []uint64{42}); err != nil {
		t.Fatal(err)
	}
	fresh, err := seen.Open(url, seen.Config{Prefix: prefix, Epoch: "new"})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, err := fresh.Seen(ctx, 1, []uint64{42})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] {
		t.Fatal("a cache filled for an older database claims a link is seen")
	}
}

func TestCodesStayInCompactEncoding(t *testing.T) {
	s, rdb := open(t, seen.Config{Epoch: "e", Buckets: 8})
	ctx := context.Background()
	codes := make([]uint64, 2000)
	for i := range codes {
		codes[i] = rand.Uint64N(62 * 62 * 62 * 62 * 62 * 62 * 62 * 62)
	}
	if err := s.Add(ctx, 99, codes); err != nil {
		t.Fatal(err)
	}
	keys, err := rdb.Keys(ctx, "*:seen2:e:{99}:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 8 {
		t.Fatalf("page 99 has %d keys, want 8 buckets", len(keys))
	}
	for _, k := range keys {
		enc, err := rdb.ObjectEncoding(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if enc != "intset" {
			t.Errorf("%s is encoded as %s, want intset", k, enc)
		}
	}
}

func TestUnreachableRedisIsAnErrorNotAHit(t *testing.T) {
	s, err := seen.Open("redis://127.0.0.1:1/0", seen.Config{Prefix: "x", Epoch: "e"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Seen(context.Background(), 1, []uint64{1, 2})
	if err == nil || got != nil {
		t.Fatalf("Seen with Redis down = %v, %v; want nil and an error", got, err)
	}
}

func TestOpenErrorHidesThePassword(t *testing.T) {
	_, err := seen.Open("redis://:s3cr3t@127.0.0.1:63x79/0", seen.Config{Prefix: "t"})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("Open error = %v, want one without the password", err)
	}
}

// A page that keeps adding codes must not keep its sets alive forever: a set
// expires at a time fixed by its generation, and a later write does not move it.
func TestWritesDoNotRenewTheExpiry(t *testing.T) {
	now := time.Now()
	s, rdb := open(t, seen.Config{Epoch: "e", Buckets: 1, TTL: 30 * 24 * time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	if err := s.Add(ctx, 5, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	keys := rdb.Keys(ctx, "*:seen2:e:{5}:*").Val()
	if len(keys) != 1 {
		t.Fatalf("keys = %v, want one set", keys)
	}
	// Millisecond precision: a relative EXPIRE on each write would move the
	// expiry by the time between writes.
	first := rdb.PExpireTime(ctx, keys[0]).Val()
	if first <= 0 {
		t.Fatalf("set %s has no expiry (%v)", keys[0], first)
	}
	for i := range 50 {
		now = now.Add(time.Hour) // the first generation's writes, or the next's
		if err := s.Add(ctx, 5, []uint64{uint64(i)}); err != nil {
			t.Fatal(err)
		}
		if again := rdb.PExpireTime(ctx, keys[0]).Val(); again != first {
			t.Fatalf("expiry of %s moved from %v to %v after a later write", keys[0], first, again)
		}
	}
	if left := time.Until(time.Unix(0, 0).Add(first)); left > 2*30*24*time.Hour {
		t.Fatalf("set expires in %v, want at most two generations", left)
	}
}

// A generation starts empty: the codes of the last one read as unseen, so
// PostgreSQL decides them again once per generation.
func TestNextGenerationStartsEmpty(t *testing.T) {
	now := time.Now()
	s, _ := open(t, seen.Config{Epoch: "e", TTL: time.Hour, Now: func() time.Time { return now }})
	ctx := context.Background()
	if err := s.Add(ctx, 5, []uint64{7}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	got, err := s.Seen(ctx, 5, []uint64{7})
	if err != nil || got[0] {
		t.Fatalf("Seen two generations later = %v, %v; want unseen", got, err)
	}
}

// A page rotating thousands of new links per check stays within Buckets ×
// MaxPerBucket codes, every set in the intset encoding.
func TestRotatingPageStaysBounded(t *testing.T) {
	s, rdb := open(t, seen.Config{Epoch: "e", Buckets: 8})
	ctx := context.Background()
	var first []uint64
	for round := range 20 {
		codes := make([]uint64, 5000)
		for i := range codes {
			codes[i] = rand.Uint64N(62 * 62 * 62 * 62 * 62 * 62 * 62 * 62)
		}
		if err := s.Add(ctx, 42, codes); err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			first = codes
		}
	}
	keys := rdb.Keys(ctx, "*:seen2:e:{42}:*").Val()
	var total int64
	for _, k := range keys {
		n := rdb.SCard(ctx, k).Val()
		total += n
		if n > 512 {
			t.Errorf("%s holds %d codes, want at most 512", k, n)
		}
		if enc := rdb.ObjectEncoding(ctx, k).Val(); enc != "intset" {
			t.Errorf("%s is encoded as %s, want intset", k, enc)
		}
	}
	if total > 8*512 {
		t.Fatalf("page holds %d codes after 100,000 adds, want at most %d", total, 8*512)
	}
	// A full set keeps what it holds: the codes cached are the first ones.
	hits, err := s.Seen(ctx, 42, first)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, h := range hits {
		if h {
			n++
		}
	}
	if n != total {
		t.Fatalf("%d of the first round's codes are seen, want all %d codes the sets hold", n, total)
	}
}

func TestOpenRefusesAnInvalidConfig(t *testing.T) {
	_, err := seen.Open("redis://127.0.0.1:6379/0", seen.Config{Prefix: "", Buckets: -1, TTL: time.Second})
	if err == nil {
		t.Fatal("Open accepted an empty prefix, -1 buckets and a 1s TTL")
	}
	for _, field := range []string{"Prefix", "Buckets", "TTL"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
	if c := (seen.Config{}).WithDefaults(); c.Buckets != seen.DefaultBuckets || c.TTL != seen.DefaultTTL ||
		c.MaxPerBucket != seen.DefaultMaxPerBucket || c.Timeout != seen.DefaultTimeout {
		t.Errorf("WithDefaults = %+v, want the package's defaults", c)
	}
}

package shortlink

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// SetDigest returns a digest of a page's set of links, given their
// normalised URLs: the same set gives the same digest whatever the order or
// repetitions; any other set gives another one (128 bits of SHA-256 over the
// sorted, distinct keys). A crawler that finds the set a page had at its last
// recorded check can send "unchanged" instead of every link again.
func SetDigest(urls []string) string {
	keys := make([]uint64, len(urls))
	for i, u := range urls {
		keys[i] = Key(u)
	}
	return KeySetDigest(keys)
}

// KeySetDigest is SetDigest for links whose keys are already known. It sorts
// keys in place.
func KeySetDigest(keys []uint64) string {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	h := sha256.New()
	var b [8]byte
	for _, k := range keys {
		binary.BigEndian.PutUint64(b[:], k)
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// KeyBuckets is how many parts BucketDigests splits a key set into.
const KeyBuckets = 32

// KeyBucket is the part of the key space a key falls in: its top 5 bits.
func KeyBucket(key uint64) int { return int(key >> 59) }

// BucketStarts returns where each bucket begins in sorted, distinct keys, as
// PostgreSQL's 1-based array positions, so that a statement can take one
// bucket's keys as a slice of the whole set: bucket b is
// keys[starts[b]-1 : starts[b+1]-1], and starts[KeyBuckets] is one past the
// last key.
func BucketStarts(sorted []uint64) []int32 {
	starts := make([]int32, KeyBuckets+1)
	i := 0
	for b := range KeyBuckets + 1 {
		for i < len(sorted) && KeyBucket(sorted[i]) < b {
			i++
		}
		starts[b] = int32(i + 1)
	}
	return starts
}

// BucketDigests returns a digest of each bucket of a set of keys (64 bits
// of SHA-256 over the bucket's sorted, distinct keys; 0 for an empty one),
// so that two sets can be compared bucket by bucket: a check that differs
// from the page's previous one in a few links differs in at most as many
// buckets, and only those need comparing key by key. It sorts keys in
// place.
func BucketDigests(keys []uint64) []int64 {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	digests := make([]int64, KeyBuckets)
	var b [8]byte
	for start := 0; start < len(keys); {
		bucket := KeyBucket(keys[start])
		end := start
		h := sha256.New()
		for ; end < len(keys) && KeyBucket(keys[end]) == bucket; end++ {
			binary.BigEndian.PutUint64(b[:], keys[end])
			h.Write(b[:])
		}
		digests[bucket] = int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]))
		start = end
	}
	return digests
}

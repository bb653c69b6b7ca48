package shortlink

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
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

// DigestWords is the length of BucketDigests' result: two words a bucket.
const DigestWords = 2 * KeyBuckets

// BucketDigests returns two digests of each bucket of a set of keys: words
// 0 to KeyBuckets-1 are the XOR of the bucket's distinct keys, words
// KeyBuckets to DigestWords-1 the XOR of their Mix; 0 for an empty bucket.
// Two sets are compared bucket by bucket: a check that differs from the
// page's previous one in a few links differs in at most as many buckets,
// and only those need comparing key by key. The XOR makes a digest
// arithmetic: a bucket that only gained keys never seen on the page before
// has the digest of the old bucket XOR those keys, which the database can
// tell from the links it has just inserted, without reading or writing the
// set (store's recording of a check). A bucket that differs by exactly one
// key d differs by d in its first word and by Mix(d) in its second, so the
// key is read off the digests; a difference of several keys gives a first
// word that may look like a key of the bucket, but a second word that is
// not its Mix. Keys are 64 bits of SHA-256, so a set that differs by other
// keys and has the same digest is a 2^-64 chance, no likelier than the
// collision of two keys themselves. It sorts keys in place.
func BucketDigests(keys []uint64) []int64 {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	digests := make([]int64, DigestWords)
	for _, k := range keys {
		digests[KeyBucket(k)] ^= int64(k) // the bits, not the number, are the key
		digests[KeyBuckets+KeyBucket(k)] ^= int64(Mix(k))
	}
	return digests
}

// Mix is a fixed function of a key that is not linear in XOR (Keccak's χ
// on 64 bits: each bit XOR the next bit's complement AND the one after):
// Mix(a^b) is almost never Mix(a)^Mix(b), which tells a bucket digest's
// difference of one key from that of several. MixSQL is the same in SQL.
func Mix(k uint64) uint64 { return k ^ (^bits.RotateLeft64(k, 1) & bits.RotateLeft64(k, 2)) }

// MixSQL returns Mix of the SQL bigint expression k. PostgreSQL's >> on a
// bigint copies the sign bit, hence the masks of the rotations.
func MixSQL(k string) string {
	return `(` + k + ` # (~((` + k + ` << 1) | ((` + k + ` >> 63) & 1)) & ((` + k + ` << 2) | ((` + k + ` >> 62) & 3))))`
}

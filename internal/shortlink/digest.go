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

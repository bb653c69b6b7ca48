package shortlink

import (
	"fmt"
	"testing"
)

func TestSetDigestIgnoresOrderAndRepetition(t *testing.T) {
	a := SetDigest([]string{"https://x.example/a", "https://x.example/b"})
	if b := SetDigest([]string{"https://x.example/b", "https://x.example/a", "https://x.example/b"}); a != b {
		t.Fatalf("same set, different digests: %s and %s", a, b)
	}
	for _, other := range [][]string{
		{"https://x.example/a"},
		{"https://x.example/a", "https://x.example/b", "https://x.example/c"},
		{"https://x.example/a", "https://x.example/B"},
		nil,
	} {
		if SetDigest(other) == a {
			t.Errorf("set %v has the digest of another set", other)
		}
	}
	if len(a) != 32 {
		t.Errorf("digest %q is not 128 bits of hex", a)
	}
}

// A link added to a set changes the digest of its key's bucket and of no
// other, by the key itself, and BucketStarts cuts a sorted set into its buckets.
func TestBucketDigestsChangeOnlyTheChangedBucket(t *testing.T) {
	var keys []uint64
	for i := range 300 {
		keys = append(keys, Key("https://x.example/"+string(rune('a'+i%26))+string(rune('a'+i/26))))
	}
	before := BucketDigests(append([]uint64(nil), keys...))
	added := Key("https://x.example/new")
	after := BucketDigests(append(append([]uint64(nil), keys...), added, keys[0]))
	for b := range KeyBuckets {
		changed := before[b] != after[b]
		if changed != (b == KeyBucket(added)) {
			t.Errorf("bucket %d: changed %t, but the new key is in bucket %d", b, changed, KeyBucket(added))
		}
	}
	if got, want := after[KeyBucket(added)], before[KeyBucket(added)]^int64(added); got != want {
		t.Errorf("digest of the bucket that gained key %x only: %x, want the old digest XOR the key, %x", added, got, want)
	}
	if empty := BucketDigests(nil); len(empty) != DigestWords || empty[0] != 0 {
		t.Errorf("digests of no key = %v, want %d zeros", empty, DigestWords)
	}
	all := append(keys, 0, 1<<63, 1<<63-1, ^uint64(0))
	BucketDigests(all) // sorts
	starts := BucketStarts(all)
	if len(starts) != KeyBuckets+1 || starts[0] != 1 || int(starts[KeyBuckets]) != len(all)+1 {
		t.Fatalf("bucket starts %v of %d keys", starts, len(all))
	}
	for b := range KeyBuckets {
		for _, k := range all[starts[b]-1 : starts[b+1]-1] {
			if KeyBucket(k) != b {
				t.Errorf("key %x is in bucket %d's slice, its bucket is %d", k, b, KeyBucket(k))
			}
		}
	}
}

// A bucket's two digests tell a difference of one key from one of several:
// the XOR of several keys of a bucket is never taken for one key of it.
func TestBucketDigestsTellOneKeyFromSeveral(t *testing.T) {
	keys := make([]uint64, 0, 6000)
	for i := range 6000 {
		keys = append(keys, Key(fmt.Sprintf("https://x.example/story/%d", i)))
	}
	for n := 1; n <= 5; n++ {
		for i := 0; i+n <= len(keys); i += n {
			var d, mixed uint64
			for _, k := range keys[i : i+n] {
				d, mixed = d^k, mixed^Mix(k)
			}
			if one := mixed == Mix(d); one != (n == 1) {
				t.Fatalf("%d keys from %d: their XOR %x and that of their Mix %x taken as one key: %t", n, i, d, mixed, one)
			}
		}
	}
	before := BucketDigests(append([]uint64(nil), keys[:300]...))
	after := BucketDigests(append([]uint64(nil), keys[1:300]...))
	b := KeyBucket(keys[0])
	if uint64(before[b]^after[b]) != keys[0] || uint64(before[KeyBuckets+b]^after[KeyBuckets+b]) != Mix(keys[0]) {
		t.Fatalf("a key left bucket %d: digests differ by %x and %x, want the key and its Mix", b, before[b]^after[b], before[KeyBuckets+b]^after[KeyBuckets+b])
	}
}

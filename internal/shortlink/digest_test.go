package shortlink

import "testing"

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
	if empty := BucketDigests(nil); len(empty) != KeyBuckets || empty[0] != 0 {
		t.Errorf("digests of no key = %v, want %d zeros", empty, KeyBuckets)
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

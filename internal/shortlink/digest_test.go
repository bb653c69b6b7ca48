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
// other, and every bucket's range holds exactly the keys of that bucket,
// also as PostgreSQL's signed numbers.
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
	if empty := BucketDigests(nil); len(empty) != KeyBuckets || empty[0] != 0 {
		t.Errorf("digests of no key = %v, want %d zeros", empty, KeyBuckets)
	}
	for _, k := range append(keys, 0, 1<<63, 1<<63-1, ^uint64(0)) {
		for b := range KeyBuckets {
			first, last := BucketRange(b)
			if in := first <= int64(k) && int64(k) <= last; in != (KeyBucket(k) == b) {
				t.Errorf("key %x: in range of bucket %d %t, its bucket is %d", k, b, in, KeyBucket(k))
			}
		}
	}
}

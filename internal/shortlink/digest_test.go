package shortlink

import (
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

package shortlink

import (
	"testing"
)

func TestSetDigestIgnoresOrderAndRepetition(t *testing.T) {
	a := SetDigest([]string{"https://x.example/a", "https://x.example/b"}, []string{"A", "B"})
	if b := SetDigest([]string{"https://x.example/b", "https://x.example/a", "https://x.example/b"}, []string{"B", "A", "other"}); a != b {
		t.Fatalf("same links, different digests: %s and %s", a, b)
	}
	for _, other := range []struct{ urls, texts []string }{
		{[]string{"https://x.example/a"}, []string{"A"}},
		{[]string{"https://x.example/a", "https://x.example/b", "https://x.example/c"}, []string{"A", "B", "C"}},
		{[]string{"https://x.example/a", "https://x.example/B"}, []string{"A", "B"}},
		{[]string{"https://x.example/a", "https://x.example/b"}, []string{"A", "B rewritten"}},
		// The text must not run into the next link: "AB" and "" is not "A" and "B".
		{[]string{"https://x.example/a", "https://x.example/b"}, []string{"AB", ""}},
		{nil, nil},
	} {
		if SetDigest(other.urls, other.texts) == a {
			t.Errorf("links %v %q have the digest of others", other.urls, other.texts)
		}
	}
	if len(a) != 32 {
		t.Errorf("digest %q is not 128 bits of hex", a)
	}
}

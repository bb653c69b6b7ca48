package secrets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/portalwatch/portalwatch/internal/secrets"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestSealOpensForItsPageAndHeaderOnly(t *testing.T) {
	k, err := secrets.ParseKey("a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=")
	if err != nil {
		t.Fatal(err)
	}
	a, err := k.Seal(1, "Cookie", "session=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.Seal(1, "Cookie", "session=1")
	if a == b || strings.Contains(a, "session") {
		t.Fatalf("sealed twice: %q, %q: want random nonces and no clear text", a, b)
	}
	if got := watch.SealedLen(a); got != len("session=1") {
		t.Errorf("SealedLen = %d, want %d", got, len("session=1"))
	}
	if v, err := k.Open(1, "cookie", a); err != nil || v != "session=1" {
		t.Fatalf("open: %q, %v", v, err)
	}
	for _, try := range []struct {
		page int64
		name string
		s    string
	}{{2, "Cookie", a}, {1, "Authorization", a}, {1, "Cookie", a[:len(a)-2] + "AA"}, {1, "Cookie", "clear"}} {
		if _, err := k.Open(try.page, try.name, try.s); err == nil {
			t.Errorf("opened %+v", try)
		}
	}
	other, _ := secrets.ParseKey("b29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb28=")
	if _, err := other.Open(1, "Cookie", a); !errors.Is(err, secrets.ErrOtherKey) {
		t.Errorf("another key: %v, want ErrOtherKey", err)
	}
}

func TestConfigRefusesABadKeyWithoutShowingIt(t *testing.T) {
	for _, bad := range []string{"c2hvcnQ=", "not base64 at all!"} {
		err := secrets.Config{Key: bad}.Validate()
		if err == nil || strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("Validate(%q) = %v", bad, err)
		}
	}
	if s, err := (secrets.Config{}).Sealer(); s != nil || err != nil {
		t.Errorf("no key: %v, %v; want a nil Sealer", s, err)
	}
}

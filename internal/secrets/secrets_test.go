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

// With old keys a program opens what they sealed and seals with the
// current key alone; Current tells the two apart.
func TestKeyringOpensOldValuesAndSealsWithTheCurrentKey(t *testing.T) {
	const (
		oldKey = "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s="
		newKey = "b29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb28="
	)
	old, _ := secrets.ParseKey(oldKey)
	sealedOld, _ := old.Seal(7, "Cookie", "a=1")
	ring, err := secrets.Config{Key: newKey, OldKeys: " " + oldKey + " ,"}.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ring.Open(7, "Cookie", sealedOld); err != nil || v != "a=1" {
		t.Fatalf("open a value of the old key: %q, %v", v, err)
	}
	sealedNew, err := ring.Seal(7, "Cookie", "a=1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Open(7, "Cookie", sealedNew); !errors.Is(err, secrets.ErrOtherKey) {
		t.Errorf("a new value opened with the old key: %v", err)
	}
	if secrets.Current(ring, sealedOld) || !secrets.Current(ring, sealedNew) || secrets.Current(old, sealedNew) {
		t.Error("Current does not tell the current key's values from the old key's")
	}
	lost, _ := secrets.ParseKey("cXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXFxcXE=")
	sealedLost, _ := lost.Seal(7, "Cookie", "a=1")
	if _, err := ring.Open(7, "Cookie", sealedLost); !errors.Is(err, secrets.ErrOtherKey) || !strings.Contains(err.Error(), "PORTALWATCH_SECRETS_OLD_KEYS") {
		t.Errorf("a value of a key the ring lacks: %v; want ErrOtherKey naming the old keys setting", err)
	}
	for _, bad := range []secrets.Config{
		{OldKeys: oldKey},
		{Key: newKey, OldKeys: newKey},
		{Key: newKey, OldKeys: oldKey + ",c2hvcnQ="},
	} {
		err := bad.Validate()
		if err == nil || strings.Contains(err.Error(), oldKey) || strings.Contains(err.Error(), newKey) {
			t.Errorf("Validate(%+v) = %v; want a refusal that shows no key", bad, err)
		}
	}
}

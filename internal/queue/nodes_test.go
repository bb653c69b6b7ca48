package queue

import (
	"slices"
	"strings"
	"testing"
)

func TestNodesRotateAndMoveAwayFromTheLostNode(t *testing.T) {
	ns, err := newNodes("amqp://a:1/, amqp://b:1/ ,amqp://c:1/", 4) // 4 mod 3: start at b
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ns.order(), []string{"amqp://b:1/", "amqp://c:1/", "amqp://a:1/"}; !slices.Equal(got, want) {
		t.Fatalf("first attempt order = %v, want %v", got, want)
	}
	// Without a connection the next attempt starts one node further.
	if got := ns.order()[0]; got != "amqp://c:1/" {
		t.Fatalf("second attempt starts at %s, want amqp://c:1/", got)
	}
	// Connected to a: when a is lost, a is tried last.
	ns.connectedTo("amqp://a:1/")
	if got, want := ns.order(), []string{"amqp://b:1/", "amqp://c:1/", "amqp://a:1/"}; !slices.Equal(got, want) {
		t.Fatalf("order after losing a = %v, want %v", got, want)
	}
}

func TestOneNodeIsAlwaysTheOneTried(t *testing.T) {
	ns, err := newNodes("amqp://guest:guest@127.0.0.1:5672/", 7)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := ns.order(); len(got) != 1 || got[0] != "amqp://guest:guest@127.0.0.1:5672/" {
			t.Fatalf("order = %v, want the one URL", got)
		}
	}
}

func TestBadNodeListIsRefusedWithoutItsPasswords(t *testing.T) {
	for _, list := range []string{
		"amqp://u:secret@a:5672/,,amqp://u:secret@b:5672/",
		"amqp://u:secret@a:5672/,http://u:secret@b/",
		"",
	} {
		_, err := newNodes(list, 0)
		if err == nil {
			t.Errorf("newNodes(%q) accepted a bad list", list)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("newNodes(%q) error leaks a password: %v", list, err)
		}
	}
}

func TestRedactHidesCredentialsOfEveryNode(t *testing.T) {
	got := redactList("amqp://u:secret@a:5672/, amqps://v:hidden@b/")
	if strings.Contains(got, "secret") || strings.Contains(got, "hidden") || !strings.Contains(got, "a:5672") || !strings.Contains(got, "b:5671") {
		t.Errorf("redactList = %q, want hosts without credentials", got)
	}
}

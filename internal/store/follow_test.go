package store

import (
	"fmt"
	"testing"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// nextFollow on its own: what a whole check writes of its page's following
// state, without a database.
func TestNextFollow(t *testing.T) {
	t.Parallel()
	followed := watch.Followed{Checks: 10, Base: watch.Keys{1, 2, 3, 4}, Added: watch.Keys{9}, Gone: watch.Keys{4},
		Pending: watch.Keys{5, 6}, PendingSince: []int64{10, 9}}
	for _, c := range []struct {
		name  string
		f     watch.Followed
		keys  watch.Keys
		k     int
		write string // base added gone pending since due
	}{
		// Check 11, K = 2: absences since check 10 or before are due.
		{"no link left", followed, watch.Keys{1, 2, 3, 9}, 2,
			"[] [9] [4] [] [] [5 6]"},
		{"a link left, one came back", followed, watch.Keys{1, 2, 5, 9}, 2,
			"[] [5 9] [3 4] [3] [11] [6]"},
		// K = 3: due since check 9 or before.
		{"a gone base key is back", followed, watch.Keys{1, 2, 3, 4, 9}, 3,
			"[] [9] [] [5] [10] [6]"},
		{"a link the delta added left", followed, watch.Keys{1, 2, 3}, 3,
			"[] [] [4] [5 9] [10 11] [6]"},
		{"K = 1: due at once", followed, watch.Keys{2, 3}, 1,
			"[] [] [1 4] [] [] [1 5 6 9]"},
		{"afresh", watch.Followed{Checks: 3, Afresh: true, Pending: watch.Keys{1}, PendingSince: []int64{2}}, watch.Keys{7, 8}, 2,
			"[7 8] [] [] [] [] []"},
	} {
		w := nextFollow(c.f, c.keys, c.k)
		if got := fmt.Sprint(w.base, w.added, w.gone, w.pending, w.since, w.due); got != c.write {
			t.Errorf("%s: wrote %s, want %s", c.name, got, c.write)
		}
	}
}

// Past maxFollowDelta keys of change, a check writes its own set as the
// base, and the delta starts empty.
func TestNextFollowFoldsABigDelta(t *testing.T) {
	t.Parallel()
	var base, keys watch.Keys
	for i := range 100 {
		base = append(base, int64(i))
	}
	keys = append(keys, base[maxFollowDelta/2:]...)
	for i := range maxFollowDelta/2 + 1 {
		keys = append(keys, int64(1000+i))
	}
	w := nextFollow(watch.Followed{Checks: 1, Base: base}, keys, 2)
	if len(w.base) != len(keys) || len(w.added) != 0 || len(w.gone) != 0 || len(w.pending) != maxFollowDelta/2 {
		t.Fatalf("%d keys changed: base of %d, delta %d+%d, %d pending; want a base of %d, no delta, %d pending",
			maxFollowDelta+1, len(w.base), len(w.added), len(w.gone), len(w.pending), len(keys), maxFollowDelta/2)
	}
	w = nextFollow(watch.Followed{Checks: 1, Base: base}, keys[:len(keys)-1], 2)
	if w.base != nil || len(w.added)+len(w.gone) != maxFollowDelta {
		t.Fatalf("%d keys changed: base written %t, delta %d; want the base kept", maxFollowDelta, w.base != nil, len(w.added)+len(w.gone))
	}
}

package store

import (
	"maps"
	"slices"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// A page's followed link set is the links of its last whole check, plus
// the new links of truncated checks since; a link of the set that a whole
// check lacks becomes pending, and one that has been absent for K checks
// becomes due and is recorded in removals by the claim of the page's next
// check (ClaimDueQuery). The set lives
// in the page's row as a base and a small delta (migration 00012), and the
// scheduler's job carries it with the pending absences (watch.Followed), so
// the processor computes a whole check's change here, and the check's
// statement only verifies that the page's state is still the job's and
// writes the new one.

// maxFollowDelta bounds follow_added and follow_gone, which the page's row
// holds inline and every check rewrites: a check that would pass it writes
// its own link set as the new base instead.
const maxFollowDelta = 64

// followWrite is what a whole check writes of its page's following state.
type followWrite struct {
	// base is the new follow_base, nil to keep the page's.
	base watch.Keys
	// added and gone are the new delta against the base that stays.
	added, gone watch.Keys
	// pending and since are the absences still pending after the check,
	// sorted by key, with the check count at which each left.
	pending watch.Keys
	since   []int64
	// due is the absences that reach the removal count at this check.
	due watch.Keys
}

// nextFollow is what a whole check with the link set keys (sorted,
// distinct) writes when the page's state is f, with removal count k: the
// followed keys it lacks become pending from this check on, pending keys
// it has are dropped, and pending keys absent for k checks are due. Its set
// is the page's followed set from then on. A page followed afresh starts
// from keys and reports nothing.
func nextFollow(f watch.Followed, keys watch.Keys, k int) followWrite {
	if f.Afresh {
		return followWrite{base: keys, added: watch.Keys{}, gone: watch.Keys{}, pending: watch.Keys{}, since: []int64{}}
	}
	has := func(key int64) bool { _, ok := slices.BinarySearch(keys, key); return ok }
	check := f.Checks + 1     // absences age by the page's check count
	left := map[int64]int64{} // absent key → the check it left at
	for i, key := range f.Pending {
		if !has(key) && i < len(f.PendingSince) {
			left[key] = f.PendingSince[i]
		}
	}
	base := f.Base
	if !slices.IsSorted(base) {
		base = slices.Sorted(slices.Values(base))
	}
	gone := make(map[int64]bool, len(f.Gone))
	for _, key := range f.Gone {
		gone[key] = true
	}
	lacked := func(key int64) {
		if _, pending := left[key]; !pending && !has(key) {
			left[key] = check
		}
	}
	for _, key := range base {
		if !gone[key] {
			lacked(key)
		}
	}
	for _, key := range f.Added {
		lacked(key)
	}

	w := followWrite{pending: watch.Keys{}, since: []int64{}}
	for _, key := range slices.Sorted(maps.Keys(left)) {
		if since := left[key]; since <= check-int64(k)+1 {
			w.due = append(w.due, key)
		} else {
			w.pending, w.since = append(w.pending, key), append(w.since, since)
		}
	}
	w.added, w.gone = difference(keys, base), difference(base, keys)
	if len(w.added)+len(w.gone) > maxFollowDelta {
		w.base, w.added, w.gone = keys, watch.Keys{}, watch.Keys{}
	}
	return w
}

// difference is the keys of a not in b, both sorted, as a non-nil slice.
func difference(a, b watch.Keys) watch.Keys {
	out := watch.Keys{}
	for _, key := range a {
		if _, ok := slices.BinarySearch(b, key); !ok {
			out = append(out, key)
		}
	}
	return out
}

// sortedKeys is a check's link keys as the page's row holds them: distinct
// and sorted as PostgreSQL's bigints.
func sortedKeys(keys []uint64) watch.Keys {
	out := make(watch.Keys, len(keys))
	for i, k := range keys {
		out[i] = int64(k) // the bits, not the number, are the key
	}
	slices.Sort(out)
	return slices.Compact(out)
}

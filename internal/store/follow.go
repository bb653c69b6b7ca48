package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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

// How a check's statement follows removals (the state is above):
//
//   - a whole check (the page's whole link set, watch.Removals.Keys) writes
//     the state nextFollow computed from its job's watch.Followed, after
//     verifying on the page's locked row that the state is still the job's;
//     otherwise follow_state_changed (migration 00012) fails the statement,
//     which so changes nothing, and recordWhole computes the check again
//     from the row, under its lock;
//   - any other check that counts (304, "unchanged", truncated) ages the
//     pending absences in SQL, and a truncated one adds the links it
//     inserted to the followed set;
//   - a check that re-baselines the page without a whole set stops
//     following it, and the next whole check starts afresh; one with removals
//     off does too.
//
// No check inserts into removals: each moves the absences that reach the
// removal count into the page's due_keys, in the row it rewrites anyway,
// and the scheduler's claim of the page's next check records them, for its
// whole batch of pages, in the statement that rewrites their rows anyway
// (ClaimDueQuery). Every part a statement has costs PostgreSQL its setup at
// every execution: the removals insert in the check's statement cost a
// check whose links rotate a fifth again, and a statement of its own for
// them the rewrite of the page's row and its setup again (docs/benchmarks.md).
// Stale checks (fetched before the page's last) change no following state.

// trackingSQL is a check statement's part that follows removals: columns
// of its page CTE and SET entries of its status update.
type trackingSQL struct{ columns, set string }

// newer is true when the check being recorded is after the page's last
// recorded one (fresh, without a repeat of the same check).
const newer = `(last_checked_at IS NULL OR last_checked_at < $2)`

// startsAfresh is true when a check with the whole link set ($8) starts
// following the page from its own set: the page is not followed yet, has no
// baseline, or is being re-baselined.
const startsAfresh = `(follow_base IS NULL OR baseline_at IS NULL OR (rebaseline AND $8))`

// notFollowing is the part of a check with removals off: the page stops
// being followed, so that turning removals on starts afresh. Absences
// already due are still recorded.
var notFollowing = trackingSQL{set: `
				follow_base = NULL, follow_added = NULL, follow_gone = NULL, pending_keys = NULL, pending_since = NULL`}

// writingFollow is the part of a whole check whose following state w was
// computed from f, the state its job carried (or its row had, under its
// lock), with its parameters numbered from p: f's check count and whether
// it started afresh (p, p+1), then w's added, gone, pending, since and due
// (p+2 … p+6), and w's base when it writes one (p+7). The page CTE tells
// whether the locked row's state is still the job's (the check count moves
// with every check that changes it).
func writingFollow(f watch.Followed, w followWrite, p int) (trackingSQL, []any) {
	set, args := followSet(`page.newer_check`, `page.state_moved`, f, w, p)
	return trackingSQL{
		columns: `,
				` + newer + ` AS newer_check,
				` + stateMoved(p) + ` AS state_moved`,
		set: set,
	}, args
}

// stateMoved is true when the page row's following state is not the one
// whose check count and start afresh are the parameters p and p+1.
func stateMoved(p int) string {
	return fmt.Sprintf(`NOT (ok_checks = $%d::bigint AND `+startsAfresh+` = $%d::boolean)`, p, p+1)
}

// followSet is writingFollow's SET entries and their parameters, for SQL
// conditions: newer, the check is after the page's last; moved, the page's
// state is not f.
func followSet(newer, moved string, f watch.Followed, w followWrite, p int) (string, []any) {
	n := func(i int) string { return fmt.Sprintf("$%d", p+i) }
	set := `
				follow_added  = CASE WHEN NOT ` + newer + ` THEN follow_added
				                     WHEN ` + moved + ` THEN follow_state_changed()
				                     ELSE ` + n(2) + `::bigint[] END,
				follow_gone   = CASE WHEN ` + newer + ` THEN ` + n(3) + `::bigint[] ELSE follow_gone END,
				pending_keys  = CASE WHEN ` + newer + ` THEN ` + n(4) + `::bigint[] ELSE pending_keys END,
				pending_since = CASE WHEN ` + newer + ` THEN ` + n(5) + `::bigint[] ELSE pending_since END,
				due_keys      = CASE WHEN ` + newer + ` AND cardinality(` + n(6) + `::bigint[]) > 0
				                     THEN coalesce(due_keys, '{}') || ` + n(6) + `::bigint[] ELSE due_keys END`
	args := []any{f.Checks, f.Afresh, w.added, w.gone, w.pending, w.since, w.due}
	if w.base != nil {
		set += `,
				follow_base   = CASE WHEN ` + newer + ` THEN ` + n(7) + `::bytea ELSE follow_base END`
		args = append(args, w.base.Bytes())
	}
	return set, args
}

// aging is the SET entries of a check that counts without the whole link
// set, for SQL conditions and expressions: where stop holds, the page stops
// being followed; where ages holds, its absences age to check number c,
// those pending since k checks become due, and the keys of the SQL array
// added join the followed set (empty: none). A page only ever checked
// truncated would grow its delta with each check's new links, so past
// maxFollowDelta keys the whole followed set becomes the base.
func aging(stop, ages, k, c, added string) string {
	due := `p.s <= ` + c + ` - ` + k + ` + 1`
	pendingAt := func(col, where string) string {
		return `ARRAY(SELECT p.` + col + ` FROM unnest(pending_keys, pending_since) AS p(k, s) WHERE ` + where + ` ORDER BY p.k)`
	}
	base, addedSet, gone := `follow_base`, `follow_added`, `follow_gone`
	if added != "" {
		fold := `(coalesce(cardinality(follow_added), 0) + coalesce(cardinality(follow_gone), 0) + cardinality(` + added + `) > ` +
			fmt.Sprint(maxFollowDelta) + `)`
		base = `CASE WHEN ` + ages + ` AND ` + fold + ` THEN follow_bytes(ARRAY(
					SELECT s.k FROM (SELECT follow_keys(follow_base) EXCEPT SELECT unnest(follow_gone)
					                 UNION SELECT unnest(follow_added) UNION SELECT unnest(` + added + `)) AS s(k) ORDER BY 1))
				                     ELSE follow_base END`
		addedSet = `CASE WHEN ` + fold + ` THEN '{}' ELSE follow_added || ` + added + ` END`
		gone = `CASE WHEN ` + ages + ` AND ` + fold + ` THEN '{}' ELSE follow_gone END`
	}
	return `
				follow_base   = CASE WHEN ` + stop + ` THEN NULL ELSE ` + base + ` END,
				follow_added  = CASE WHEN ` + stop + ` THEN NULL WHEN ` + ages + ` THEN ` + addedSet + ` ELSE follow_added END,
				follow_gone   = CASE WHEN ` + stop + ` THEN NULL ELSE ` + gone + ` END,
				pending_keys  = CASE WHEN ` + stop + ` THEN NULL WHEN ` + ages + ` THEN ` + pendingAt("k", "NOT ("+due+")") + ` ELSE pending_keys END,
				pending_since = CASE WHEN ` + stop + ` THEN NULL WHEN ` + ages + ` THEN ` + pendingAt("s", "NOT ("+due+")") + ` ELSE pending_since END,
				due_keys      = CASE WHEN ` + stop + ` THEN due_keys
				                     WHEN ` + ages + ` AND EXISTS (SELECT 1 FROM unnest(pending_keys, pending_since) AS p(k, s) WHERE ` + due + `)
				                     THEN coalesce(due_keys, '{}') || ` + pendingAt("k", due) + ` ELSE due_keys END`
}

// agingLinks is the part of a check with new links but without the whole
// link set (truncated), with the removal count K as parameter p: its newly
// inserted links (fresh) join the followed set, since they are on the page;
// no link can be found missing.
func agingLinks(p int) trackingSQL {
	return trackingSQL{
		columns: `,
				` + newer + ` AS newer_check, ` + startsAfresh + ` AS afresh, ok_checks + 1 AS check_no`,
		set: aging(`page.newer_check AND page.afresh`, `page.newer_check AND NOT page.afresh`, fmt.Sprintf("$%d::int", p),
			`page.check_no`, `ARRAY(SELECT link_key FROM fresh)`),
	}
}

// followedColumns are the columns of the page row p that make a
// watch.Followed (followedDest); the base is left out when the next whole
// check starts afresh anyway.
const followedColumns = `p.ok_checks, ` + afreshRow + `, CASE WHEN NOT ` + afreshRow + ` THEN p.follow_base END,
		          p.follow_added, p.follow_gone, p.pending_keys, p.pending_since`

// afreshRow is startsAfresh for a whole check, of the page row p.
const afreshRow = `(p.follow_base IS NULL OR p.baseline_at IS NULL OR p.rebaseline)`

// followedDest are the scan destinations of followedColumns in f.
func followedDest(f *watch.Followed) []any {
	return []any{&f.Checks, &f.Afresh, (*scannedBase)(&f.Base), &f.Added, &f.Gone, &f.Pending, &f.PendingSince}
}

// scannedBase scans follow_base (watch.Keys.Bytes) into watch.Keys: NULL
// is nil (not followed, or the check starts afresh).
type scannedBase watch.Keys

func (k *scannedBase) Scan(src any) error {
	if src == nil {
		*k = nil
		return nil
	}
	b, ok := src.([]byte)
	if !ok {
		return fmt.Errorf("follow_base: want bytes, got %T", src)
	}
	keys, err := watch.KeysFromBytes(b)
	if err != nil {
		return fmt.Errorf("follow_base: %w", err)
	}
	*k = scannedBase(keys)
	return nil
}

// readFollowed reads the following state of page id and locks its row,
// inside tx.
func readFollowed(ctx context.Context, tx pgx.Tx, id int64) (watch.Followed, error) {
	var f watch.Followed
	err := tx.QueryRow(ctx, `SELECT `+followedColumns+` FROM pages p WHERE p.id = $1 FOR UPDATE`, id).Scan(followedDest(&f)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("read the following state of page %d: %w", id, err)
	}
	return f, nil
}

// isStateMoved reports whether err is follow_state_changed's.
func isStateMoved(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "PW001"
}

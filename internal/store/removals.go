package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// How a check's statement follows removals (see follow.go for the state):
//
//   - a whole check (the page's whole link set, watch.Removals.Keys) writes
//     the state nextFollow computed from its job's watch.Followed, after
//     verifying on the page's locked row that the state is still the job's;
//     otherwise follow_state_changed (migration 00012) fails the statement,
//     which so changes nothing, and recordLinks computes the check again
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
// them the rewrite of the page's row and its setup again (BENCHMARKS.md).
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

// RecordRemovals records in removals the due absences of the pages ids,
// all in one statement, and returns how many it recorded. It is the
// processors' sweep: the claim of a page's next check records them
// otherwise (ClaimDueQuery), so this is for pages no claim reaches soon,
// such as paused ones. Taking a page's due_keys empties them in the same
// statement, so each absence is recorded once however many processors and
// schedulers take them at once; the rows are locked in id order, so two
// sweeps never deadlock. Reading due (its InitPlan) first matters: an
// UPDATE that ran before due's lock would leave due's rows invisible to it,
// and their removals unrecorded. The pages are emptied by their ids, an
// index scan, where a join to due would be planned as a hash join over the
// whole table.
func (s *Store) RecordRemovals(ctx context.Context, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, `
		WITH due AS (
			SELECT id, due_keys FROM pages WHERE id = ANY ($1::bigint[]) AND due_keys IS NOT NULL ORDER BY id FOR UPDATE
		), taken AS (
			UPDATE pages SET due_keys = NULL WHERE id = ANY (ARRAY(SELECT id FROM due))
		)
		INSERT INTO removals (page_id, link_key)
		SELECT due.id, d.k FROM due CROSS JOIN unnest(due.due_keys) AS d(k)`, ids)
	if err != nil {
		return 0, fmt.Errorf("record the due removals of %d pages: %w", len(ids), err)
	}
	return tag.RowsAffected(), nil
}

// PagesWithDueRemovals returns up to limit pages with due absences not yet
// recorded. A running system has many, each until its next claim; the
// sweep looks for those that no claim reaches soon. It reads every page's
// row in table order until it has found limit: an index on due_keys would
// cost every check that makes a removal due its HOT update, and a scan in
// id order would read the table in random order. So the processor calls it
// at its start and once an hour, not per check.
func (s *Store) PagesWithDueRemovals(ctx context.Context, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM pages WHERE due_keys IS NOT NULL LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("find pages with due removals: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("find pages with due removals: %w", err)
	}
	return ids, nil
}

// PruneRemovals deletes up to limit removals recorded more than olderThan
// ago, oldest first, and returns how many it deleted.
func (s *Store) PruneRemovals(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM removals WHERE id IN (
			SELECT id FROM removals WHERE removed_at < now() - $1 * interval '1 millisecond'
			ORDER BY removed_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete removals older than %s: %w", olderThan, err)
	}
	return tag.RowsAffected(), nil
}

// Removals returns the removals q selects (its PageID, Since and Limit),
// newest first, with their links' URL and text (removalColumns).
func (s *Store) Removals(ctx context.Context, q UpdatesQuery) ([]watch.Removal, error) {
	pageID, since, limit := q.args()
	rows, err := s.pool.Query(ctx, `
		SELECT `+removalColumns+` FROM `+namedRemovals+`
		WHERE `+removalNamed+` AND ($1::bigint IS NULL OR r.page_id = $1) AND ($2::timestamptz IS NULL OR r.removed_at >= $2)
		ORDER BY r.removed_at DESC, r.id DESC
		LIMIT $3`, pageID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	removals, err := pgx.CollectRows(rows, scanRemoval)
	if err != nil {
		return nil, fmt.Errorf("query removals: %w", err)
	}
	return removals, nil
}

// namedRemovals is removals r with the link l of each one whose URL and
// text are not copied into it: readers take them from links (00014), and
// links' retention copies them when it prunes the link (PruneLinks).
// Select removalColumns where removalNamed holds: a removal recorded after
// its link was pruned (absent for the removal count across more than links'
// retention) has no URL and is left out, as it was never recorded before.
const namedRemovals = `removals r LEFT JOIN LATERAL (
			SELECT l.url, l.text FROM links l WHERE r.url IS NULL AND l.page_id = r.page_id AND l.link_key = r.link_key) l ON true`

const (
	removalColumns = `r.id, r.page_id, coalesce(r.url, l.url), coalesce(r.text, l.text), r.removed_at`
	removalNamed   = `(r.url IS NOT NULL OR l.url IS NOT NULL)`
)

func scanRemoval(r pgx.CollectableRow) (watch.Removal, error) {
	var m watch.Removal
	err := r.Scan(&m.ID, &m.PageID, &m.URL, &m.Text, &m.RemovedAt)
	return m, err
}

// QueryRemovals returns the removals of one page (pageID 0: every page),
// removed at or after since (zero: any time), at most limit (0: 100),
// newest first.
func (s *Store) QueryRemovals(ctx context.Context, pageID int64, since time.Time, limit int) ([]watch.Removal, error) {
	return s.Removals(ctx, UpdatesQuery{PageID: pageID, Since: since, Limit: limit})
}

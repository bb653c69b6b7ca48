package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/portalwatch/portalwatch/internal/watch"
)

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
		INSERT INTO removals (page_id, link_key, snapshot_id)
		SELECT due.id, d.k, `+newestSnapshot+` FROM due CROSS JOIN unnest(due.due_keys) AS d(k)`, ids)
	if err != nil {
		return 0, fmt.Errorf("record the due removals of %d pages: %w", len(ids), err)
	}
	return tag.RowsAffected(), nil
}

// newestSnapshot is the snapshot a removal of page due.id is recorded
// with (removals.snapshot_id, 00028): the page's newest. The check that
// made the removal due kept one when it read a changed link set; when it
// read the same links again (a 304, the same body, the same links), the
// newest is the snapshot of the check that last changed them, which the
// processor indexes too (store.keepsSnapshot). It runs once a removal
// row, which are few, and is one step of snapshots_page.
const newestSnapshot = `(SELECT s.id FROM snapshots s WHERE s.page_id = due.id ORDER BY s.fetched_at DESC LIMIT 1)`

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

// Removals returns the removals f selects, newest first, with their
// links' URL and text (removalColumns).
func (s *Store) Removals(ctx context.Context, f watch.RemovalFilter) ([]watch.Removal, error) {
	var pageID *int64
	if f.PageID != 0 {
		pageID = &f.PageID
	}
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+removalColumns+` FROM `+namedRemovals+`
		WHERE `+removalNamed+` AND r.page_id NOT IN (SELECT id FROM pages WHERE deleted_at IS NOT NULL)
			AND ($1::bigint IS NULL OR r.page_id = $1) AND ($2::timestamptz IS NULL OR r.removed_at >= $2)
		ORDER BY r.removed_at DESC, r.id DESC
		LIMIT $3`, pageID, since, f.LimitOrDefault())
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
			SELECT l.url, l.text, l.first_seen_at FROM links l WHERE l.page_id = r.page_id AND l.link_key = r.link_key) l ON true`

const (
	removalColumns = `r.id, r.page_id, coalesce(r.url, l.url), coalesce(r.text, l.text), r.removed_at, l.first_seen_at,
		(SELECT s.id FROM snapshots s WHERE s.id = r.snapshot_id)`
	removalNamed = `(r.url IS NOT NULL OR l.url IS NOT NULL)`
)

func scanRemoval(r pgx.CollectableRow) (watch.Removal, error) {
	var (
		m     watch.Removal
		first *time.Time
	)
	if err := r.Scan(&m.ID, &m.PageID, &m.URL, &m.Text, &m.RemovedAt, &first, &m.SnapshotID); err != nil {
		return m, err
	}
	if first != nil {
		m.DwellSeconds = watch.DwellSeconds(*first, m.RemovedAt)
	}
	return m, nil
}

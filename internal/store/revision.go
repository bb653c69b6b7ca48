package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// RevisionsQuery reads a page of one page's revisions ($1), those with an
// id below $2, newest first, at most $3. Ids come from one sequence in the
// order the checks recorded them, so the walk of events_page (page_id, id)
// backwards is the order of the checks and stops after $3 rows; the other
// kinds of event it passes are few. The page must be watched: a page in
// the trash has no revisions to show, as it has no updates.
const RevisionsQuery = `
		SELECT e.id, e.page_id, e.url, e.old_text, e.new_text, e.at
		FROM events e
		WHERE e.page_id = $1 AND e.id < $2 AND e.kind = 'link.rewritten'
			AND EXISTS (SELECT 1 FROM pages WHERE id = $1 AND deleted_at IS NULL)
		ORDER BY e.id DESC
		LIMIT $3`

// Revisions returns the headline revisions of page f.PageID, newest first
// (RevisionsQuery): those with an id below f.Before, at most f.Limit. The
// next call of a list passes the ID of the last revision it got as Before.
// It returns watch.ErrPageNotFound for a page that is not watched (or is in
// the trash).
func (s *Store) Revisions(ctx context.Context, f watch.RevisionFilter) ([]watch.Revision, error) {
	pageID, before := f.PageID, f.Before
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.pool.Query(ctx, RevisionsQuery, pageID, before, f.LimitOrDefault())
	if err != nil {
		return nil, fmt.Errorf("read the revisions of page %d: %w", pageID, err)
	}
	revs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Revision, error) {
		var v watch.Revision
		err := r.Scan(&v.ID, &v.PageID, &v.URL, &v.OldText, &v.NewText, &v.At)
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the revisions of page %d: %w", pageID, err)
	}
	if len(revs) > 0 {
		return revs, nil
	}
	// An empty answer is a page without revisions, or no page at all.
	var found bool
	err = s.pool.QueryRow(ctx, `SELECT true FROM pages WHERE id = $1 AND deleted_at IS NULL`, pageID).Scan(&found)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("page %d: %w", pageID, watch.ErrPageNotFound)
	case err != nil:
		return nil, fmt.Errorf("read the revisions of page %d: %w", pageID, err)
	}
	return revs, nil
}

// PruneEvents deletes up to limit events of checks more than olderThan
// ago, oldest first, and returns how many it deleted. No index has their
// time: it reads the limit oldest by id (the primary key) and deletes those
// of them that are old. Ids are drawn as the checks commit and a time is
// when its check fetched the page, minutes apart at most, so an event that
// is not old yet among the oldest ids waits for a later round, and a round
// with nothing to delete reads limit rows, not the table.
func (s *Store) PruneEvents(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM events WHERE id IN (
			SELECT id FROM (SELECT id, at FROM events ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED) oldest
			WHERE at < now() - $1 * interval '1 millisecond')`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("delete events older than %s: %w", olderThan, err)
	}
	return tag.RowsAffected(), nil
}

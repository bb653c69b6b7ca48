package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// TrashPage moves a watched page to the trash and returns it, or
// watch.ErrPageNotFound (also for a page in the trash already). Every
// delete goes through the trash: the page is no longer claimed for checks
// nor listed, and keeps its links, updates and subscriptions until
// EmptyTrash deletes it for good (after watch.TrashRetention) or
// RestorePage or an add of its URL brings it back. A check already in
// flight finishes and is recorded.
func (s *Store) TrashPage(ctx context.Context, id int64) (watch.Page, error) {
	page, err := scanPage(s.pool.QueryRow(ctx, `
		UPDATE pages SET deleted_at = now(), changed_at = now()
		WHERE id = $1 AND deleted_at IS NULL
		RETURNING `+pageColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("move page %d to the trash: %w", id, err)
	}
	return page, nil
}

// RestorePage brings a page back from the trash, as it was, and returns
// it, or watch.ErrPageNotFound when the trash holds no page id. It is due
// at once: what it missed while in the trash is found by that check.
func (s *Store) RestorePage(ctx context.Context, id int64) (watch.Page, error) {
	page, err := scanPage(s.pool.QueryRow(ctx, `
		UPDATE pages SET deleted_at = NULL, changed_at = now(), next_check_at = now()
		WHERE id = $1 AND deleted_at IS NOT NULL
		RETURNING `+pageColumns, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Page{}, fmt.Errorf("page %d in the trash: %w", id, watch.ErrPageNotFound)
	}
	if err != nil {
		return watch.Page{}, fmt.Errorf("restore page %d: %w", id, err)
	}
	return page, nil
}

// TrashedPages returns the pages in the trash, most recently deleted first.
func (s *Store) TrashedPages(ctx context.Context) ([]watch.Page, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+pageColumns+` FROM pages WHERE deleted_at IS NOT NULL ORDER BY deleted_at DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list the trash: %w", err)
	}
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Page, error) { return scanPage(r) })
	if err != nil {
		return nil, fmt.Errorf("list the trash: %w", err)
	}
	return pages, nil
}

// EmptyTrash deletes for good up to limit pages that have been in the
// trash for olderThan or longer, oldest first, with their links, updates,
// removals and subscriptions, and returns how many it deleted. olderThan 0
// empties the whole trash.
func (s *Store) EmptyTrash(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM pages WHERE id IN (
			SELECT id FROM pages WHERE deleted_at <= now() - $1 * interval '1 millisecond'
			ORDER BY deleted_at LIMIT $2 FOR UPDATE SKIP LOCKED)`, olderThan.Milliseconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("empty the trash: %w", err)
	}
	return tag.RowsAffected(), nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ReadMark returns the newest update the reader signed in with token has
// marked read, as a cursor of the newest-first order of updates: that
// update and every older one are read. ok is false when the reader has
// marked nothing yet.
func (s *Store) ReadMark(ctx context.Context, token string) (mark watch.Cursor, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `
		SELECT m.read_at, m.read_id FROM reader_marks m JOIN api_tokens t ON t.id = m.token_id
		WHERE t.name = $1`, token).Scan(&mark.DiscoveredAt, &mark.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Cursor{}, false, nil
	}
	if err != nil {
		return watch.Cursor{}, false, fmt.Errorf("read mark of %q: %w", token, err)
	}
	return mark, true, nil
}

// MarkRead marks read, for the reader signed in with token, the update at
// mark and every older one. A mark older than the reader's present one
// changes nothing, so a page left open in another tab cannot make read
// updates unread again. It returns watch.ErrTokenNotFound for a token
// that no longer exists.
func (s *Store) MarkRead(ctx context.Context, token string, mark watch.Cursor) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO reader_marks (token_id, read_at, read_id)
		SELECT id, $2, $3 FROM api_tokens WHERE name = $1
		ON CONFLICT (token_id) DO UPDATE SET read_at = excluded.read_at, read_id = excluded.read_id, marked_at = now()
		WHERE (reader_marks.read_at, reader_marks.read_id) < (excluded.read_at, excluded.read_id)`,
		token, mark.DiscoveredAt, mark.ID)
	if err != nil {
		return fmt.Errorf("mark read for %q: %w", token, err)
	}
	if tag.RowsAffected() == 0 {
		// Either no such token or an older mark; tell them apart.
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_tokens WHERE name = $1)`, token).Scan(&exists); err != nil {
			return fmt.Errorf("mark read for %q: %w", token, err)
		}
		if !exists {
			return fmt.Errorf("token %q: %w", token, watch.ErrTokenNotFound)
		}
	}
	return nil
}

// CountUnread counts the updates of watched pages newer than mark, up to
// max: a reader back from a long absence is told "999+", not kept waiting
// for an exact count.
func (s *Store) CountUnread(ctx context.Context, mark watch.Cursor, max int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		SELECT count(*) FROM (
			SELECT 1 FROM updates u JOIN pages p ON p.id = u.page_id
			WHERE (u.discovered_at, u.id) > ($1::timestamptz, $2::bigint) AND p.deleted_at IS NULL
			LIMIT $3) unread`, mark.DiscoveredAt, mark.ID, max).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unread updates: %w", err)
	}
	return n, nil
}

// Sparklines returns, for each page of ids, how many new links it recorded
// in each hour of the last hours hours, oldest first; a page without any
// is absent. It reads the hourly counts the updates trigger keeps
// (page_hours, migration 00017), never updates themselves.
func (s *Store) Sparklines(ctx context.Context, ids []int64, hours int) (map[int64][]int, error) {
	first := time.Now().Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)
	rows, err := s.pool.Query(ctx, `SELECT page_id, hour, links FROM page_hours WHERE page_id = ANY($1) AND hour >= $2`, ids, first)
	if err != nil {
		return nil, fmt.Errorf("read sparklines: %w", err)
	}
	defer rows.Close()
	out := map[int64][]int{}
	for rows.Next() {
		var (
			id    int64
			hour  time.Time
			links int
		)
		if err := rows.Scan(&id, &hour, &links); err != nil {
			return nil, fmt.Errorf("read sparklines: %w", err)
		}
		i := int(hour.Sub(first) / time.Hour)
		if i < 0 || i >= hours {
			continue
		}
		line := out[id]
		if line == nil {
			line = make([]int, hours)
			out[id] = line
		}
		line[i] += links
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sparklines: %w", err)
	}
	return out, nil
}

// PruneSparklines deletes the hourly counts of new links (page_hours) older
// than olderThan, which the pages list no longer shows, and returns how
// many it deleted.
func (s *Store) PruneSparklines(ctx context.Context, olderThan time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM page_hours WHERE hour < now() - $1 * interval '1 millisecond'`, olderThan.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("delete hourly counts older than %s: %w", olderThan, err)
	}
	return tag.RowsAffected(), nil
}

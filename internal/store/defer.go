package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// DeferCheck records that a crawler put off a check of a page, decided at
// decidedAt, until until: the page's lease is freed and its next check set
// to until. Nothing else changes: a deferral is neither a check nor a
// failure, so the page's status, validators, failure count and links stay
// as they were. A deferral older than the page's last recorded check (a late
// redelivery) changes nothing, so it cannot pull a newer schedule back. It
// returns watch.ErrPageNotFound if the page was removed, and an error
// wrapping watch.ErrPermanent if PostgreSQL refuses the deferral.
func (s *Store) DeferCheck(ctx context.Context, pageID int64, decidedAt, until time.Time) error {
	var id int64
	err := s.pool.QueryRow(ctx, `
		UPDATE pages SET
			lease_until   = CASE WHEN `+fresh+` THEN NULL ELSE lease_until END,
			next_check_at = CASE WHEN `+fresh+` THEN $3 ELSE next_check_at END
		WHERE id = $1
		RETURNING id`, pageID, decidedAt, until).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("defer check of page %d: %w", pageID, watch.ErrPageNotFound)
	}
	if err != nil {
		return fmt.Errorf("defer check of page %d: %w", pageID, interpretError(err))
	}
	return nil
}

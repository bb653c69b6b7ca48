package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// ResealReport is what ResealSecrets did.
type ResealReport struct {
	// Pages is how many pages had a value sealed again.
	Pages int
	// Resealed is how many values were sealed again with the current key,
	// Current how many it had sealed already.
	Resealed, Current int
	// Failed are the values no key of the sealer opens: only setting them
	// again mends them.
	Failed []ResealFailure
}

// ResealFailure is a secret header value that did not open.
type ResealFailure struct {
	PageID int64
	Header string
	Err    string
}

// ResealSecrets seals again, with the store's sealer, every secret header
// value of every page (in the trash too) that isCurrent says the current
// key did not seal: the step between giving the programs a new key (the
// old one kept to open with) and dropping the old one. Each page is
// sealed again in a transaction of its own under the lock of its row, so
// an edit of the page at the same time is not lost. Its validators stay:
// the values are the same. A value no key opens is left as it was and
// reported.
func (s *Store) ResealSecrets(ctx context.Context, isCurrent func(sealed string) bool) (ResealReport, error) {
	var rep ResealReport
	if s.sealer == nil {
		return rep, watch.ErrNoSecretsKey
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM pages WHERE headers IS NOT NULL ORDER BY id`)
	if err != nil {
		return rep, fmt.Errorf("list pages with headers: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return rep, fmt.Errorf("list pages with headers: %w", err)
	}
	for _, id := range ids {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var hs []watch.Header
			if err := tx.QueryRow(ctx, `SELECT coalesce(headers, '[]') FROM pages WHERE id = $1 FOR UPDATE`, id).Scan(&hs); err != nil {
				return err
			}
			changed := 0
			for i, h := range hs {
				if h.Sealed == "" {
					continue
				}
				if isCurrent(h.Sealed) {
					rep.Current++
					continue
				}
				clear, err := s.sealer.Open(id, h.Name, h.Sealed)
				if err != nil {
					rep.Failed = append(rep.Failed, ResealFailure{PageID: id, Header: h.Name, Err: err.Error()})
					continue
				}
				if hs[i].Sealed, err = s.sealer.Seal(id, h.Name, clear); err != nil {
					return err
				}
				changed++
			}
			if changed == 0 {
				return nil
			}
			if _, err := tx.Exec(ctx, `UPDATE pages SET headers = $2 WHERE id = $1`, id, hs); err != nil {
				return err
			}
			rep.Pages++
			rep.Resealed += changed
			return nil
		})
		if err != nil {
			return rep, fmt.Errorf("seal the headers of page %d again: %w", id, err)
		}
	}
	return rep, nil
}

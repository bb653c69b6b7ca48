package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// recordWhole records a successful check that has candidate links, the
// page's whole link set to follow, or a snapshot (watch.Check.Snapshot),
// in one transaction: the check's statement; the snapshot's index row,
// unless the check was stale (keepsSnapshot), so that index and check
// commit together or not at all and no row names a check that never was;
// and, between them and the commit, retitling with the headlines the
// check replaced.
//
// The transaction takes two round trips (recordPipelined) where a
// transaction of its statements one by one took five or six: that cost
// PostgreSQL and the processor more than the rows themselves. A job whose
// following state is unknown, or moved since (the optimistic statement
// fails), takes recordLocked, which reads the state under the page's lock
// first.
func (s *Store) recordWhole(ctx context.Context, c watch.Check, links []watch.NewLink, retitling watch.Retitling) (watch.Recorded, error) {
	if r := c.Removals; r.Checks > 0 && r.Keys != nil && !r.Followed.Known() {
		return s.recordLocked(ctx, c, links, retitling)
	}
	rec, err := s.recordPipelined(ctx, c, links, retitling)
	if isStateMoved(err) {
		return s.recordLocked(ctx, c, links, retitling)
	}
	return rec, err
}

// recordPipelined is recordWhole for a check whose job's following state
// is known or not needed: BEGIN goes with the check's statement in one
// batch, the index row with COMMIT in another. A failure leaves the
// connection in a transaction that is rolled back (or, failing that, the
// pool drops the connection, which it does with any not idle).
func (s *Store) recordPipelined(ctx context.Context, c watch.Check, links []watch.NewLink, retitling watch.Retitling) (watch.Recorded, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return watch.Recorded{}, fmt.Errorf("record check: %w", err)
	}
	defer conn.Release()
	q := &beginning{conn: conn}
	rec, err := checkStatement(ctx, q, c, links)
	if err = errors.Join(err, q.close()); err != nil {
		rollback(ctx, conn)
		return watch.Recorded{}, err
	}
	tellRetitled(ctx, c, rec, retitling)
	b := &pgx.Batch{}
	indexed := c.Snapshot != nil && keepsSnapshot(rec)
	if indexed {
		stmt, args, err := indexStatement(c, rec)
		if err != nil {
			rollback(ctx, conn)
			return watch.Recorded{}, err
		}
		b.Queue(stmt, args...)
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	if indexed {
		rec.Snapshot, err = scanIndexed(br.QueryRow(), c.Snapshot)
	}
	if err == nil {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("commit check: %w", err)
		}
	}
	if err = errors.Join(err, br.Close()); err != nil {
		rollback(ctx, conn)
		return watch.Recorded{}, err
	}
	return rec, nil
}

// recordLocked is recordWhole reading the page's following state under
// its lock first: the job's state cannot be tried optimistically here,
// since a failed statement aborts the transaction.
func (s *Store) recordLocked(ctx context.Context, c watch.Check, links []watch.NewLink, retitling watch.Retitling) (watch.Recorded, error) {
	var rec watch.Recorded
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		r := c.Removals
		if r.Checks <= 0 || r.Keys == nil {
			rec, err = checkStatement(ctx, tx, c, links)
		} else {
			var f watch.Followed
			if f, err = readFollowed(ctx, tx, c.PageID); err != nil {
				return err
			}
			rec, err = sendFollowing(ctx, tx, c, links, f, sortedKeys(r.Keys))
			rec.Recomputed = true
		}
		if err != nil {
			return err
		}
		tellRetitled(ctx, c, rec, retitling)
		if c.Snapshot == nil || !keepsSnapshot(rec) {
			return nil
		}
		stmt, args, err := indexStatement(c, rec)
		if err != nil {
			return err
		}
		rec.Snapshot, err = scanIndexed(tx.QueryRow(ctx, stmt, args...), c.Snapshot)
		return err
	})
	return rec, err
}

// tellRetitled calls retitling, if any, with the headlines rec replaced.
func tellRetitled(ctx context.Context, c watch.Check, rec watch.Recorded, retitling watch.Retitling) {
	if retitling != nil && len(rec.Retitled) > 0 {
		retitling(ctx, c.PageID, rec.Retitled)
	}
}

// checkStatement sends the check's own statement through q, with the
// job's following state when removals are followed.
func checkStatement(ctx context.Context, q querier, c watch.Check, links []watch.NewLink) (watch.Recorded, error) {
	r := c.Removals
	switch {
	case len(links) == 0 && r.Keys == nil:
		return recordSuccess(ctx, q, c)
	case r.Checks <= 0:
		return sendRecordLinks(ctx, q, c, links, notFollowing, nil)
	case r.Keys == nil:
		return sendRecordLinks(ctx, q, c, links, agingLinks(22), []any{r.Checks})
	}
	return sendFollowing(ctx, q, c, links, *r.Followed, sortedKeys(r.Keys))
}

// beginning is a querier whose first statement opens a transaction: BEGIN
// and the statement are sent in one batch. Later statements run on the
// connection, inside the transaction; close ends the batch.
type beginning struct {
	conn *pgxpool.Conn
	br   pgx.BatchResults
}

func (b *beginning) send(ctx context.Context, sql string, args []any) error {
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	batch.Queue(sql, args...)
	b.br = b.conn.SendBatch(ctx, batch)
	if _, err := b.br.Exec(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return nil
}

func (b *beginning) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if b.br != nil {
		if err := b.close(); err != nil {
			return nil, err
		}
		return b.conn.Query(ctx, sql, args...)
	}
	if err := b.send(ctx, sql, args); err != nil {
		return nil, err
	}
	return b.br.Query()
}

func (b *beginning) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if b.br != nil {
		if err := b.close(); err != nil {
			return errRow{err}
		}
		return b.conn.QueryRow(ctx, sql, args...)
	}
	if err := b.send(ctx, sql, args); err != nil {
		return errRow{err}
	}
	return b.br.QueryRow()
}

// close reads the batch to its end (again: a no-op); its error is the
// batch's first. A statement after the first closes the batch, which the
// connection must finish before it sends another.
func (b *beginning) close() error {
	if b.br == nil {
		return nil
	}
	return b.br.Close()
}

// errRow is a pgx.Row that fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// rollback ends the failed transaction on conn. Should it fail too, the
// pool drops the connection on release, since it is not idle.
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	_, _ = conn.Exec(ctx, "ROLLBACK")
}

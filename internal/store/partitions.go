package store

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// partitionLock is the advisory lock key of updates' partition maintenance,
// distinct from goose's migration lock.
const partitionLock int64 = 0x7077_7570_6172_7473 // "pwuparts"

// week is one week's partition of updates, [start, start+7 days) in UTC.
type week struct{ start time.Time }

func weekOf(t time.Time) week {
	t = t.UTC()
	monday := t.AddDate(0, 0, -((int(t.Weekday()) + 6) % 7))
	return week{time.Date(monday.Year(), monday.Month(), monday.Day(), 0, 0, 0, 0, time.UTC)}
}

func (w week) end() time.Time { return w.start.AddDate(0, 0, 7) }

// name is the partition's name, which migration 00006 uses too.
func (w week) name() string { return "updates_w" + w.start.Format("20060102") }

var weekName = regexp.MustCompile(`^updates_w(\d{8})$`)

// MaintainUpdatePartitions keeps updates' weekly partitions (migration
// 00006): it makes the partitions of the current UTC week and of the next
// ahead weeks, makes the partition of every week that has rows in
// updates_default and moves those rows into it, and detaches and drops every
// weekly partition whose whole week ended more than retention ago (zero
// keeps them all). Updates therefore live between retention and retention
// plus a week.
//
// It runs in one transaction under a transaction-level advisory lock: of
// several processors calling it at once one does the work and the others
// return Skipped at once. Its DDL waits at most 5 s for the table locks
// (lock_timeout), so a long reader of updates makes it fail rather than
// stall every insert behind it; the caller tries again at its next round.
// On a schema older than 00006 it does nothing and returns Skipped.
func (s *Store) MaintainUpdatePartitions(ctx context.Context, retention time.Duration, ahead int) (watch.PartitionChanges, error) {
	var ch watch.PartitionChanges
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var partitioned, locked bool
		var now time.Time
		err := tx.QueryRow(ctx, `SELECT
			coalesce((SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass('updates')), false),
			pg_try_advisory_xact_lock($1), now()`, partitionLock).Scan(&partitioned, &locked, &now)
		if err != nil {
			return fmt.Errorf("take the partition maintenance lock: %w", err)
		}
		if !partitioned || !locked {
			ch.Skipped = true
			return nil
		}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '5s'`); err != nil {
			return fmt.Errorf("set lock timeout: %w", err)
		}
		existing, err := updatePartitions(ctx, tx)
		if err != nil {
			return err
		}
		wanted, err := weeksWanted(ctx, tx, now, ahead)
		if err != nil {
			return err
		}
		for _, w := range wanted {
			if _, ok := existing[w.name()]; ok {
				continue
			}
			moved, err := createWeek(ctx, tx, w)
			if err != nil {
				return err
			}
			existing[w.name()] = w
			ch.Created = append(ch.Created, w.name())
			ch.Moved += moved
		}
		if retention <= 0 {
			return nil
		}
		cutoff := now.Add(-retention)
		var old []week
		for _, w := range existing {
			if !w.end().After(cutoff) {
				old = append(old, w)
			}
		}
		slices.SortFunc(old, func(a, b week) int { return a.start.Compare(b.start) })
		for _, w := range old {
			name := pgx.Identifier{w.name()}.Sanitize()
			if _, err := tx.Exec(ctx, `ALTER TABLE updates DETACH PARTITION `+name); err != nil {
				return fmt.Errorf("detach partition %s: %w", w.name(), err)
			}
			if _, err := tx.Exec(ctx, `DROP TABLE `+name); err != nil {
				return fmt.Errorf("drop partition %s: %w", w.name(), err)
			}
			ch.Dropped = append(ch.Dropped, w.name())
		}
		return nil
	})
	if err != nil {
		return watch.PartitionChanges{}, fmt.Errorf("maintain the partitions of updates: %w", err)
	}
	return ch, nil
}

// updatePartitions returns updates' weekly partitions by name. Partitions
// not named like ours (the default, or one an operator made) are left alone.
func updatePartitions(ctx context.Context, tx pgx.Tx) (map[string]week, error) {
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'updates'::regclass`)
	if err != nil {
		return nil, fmt.Errorf("list partitions of updates: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list partitions of updates: %w", err)
	}
	out := make(map[string]week, len(names))
	for _, n := range names {
		m := weekName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		start, err := time.Parse("20060102", m[1])
		if err != nil {
			continue // a name like ours but no date: not ours
		}
		out[n] = week{start}
	}
	return out, nil
}

// weeksWanted returns the current week, the next ahead ones and the weeks of
// the rows in updates_default, oldest first.
func weeksWanted(ctx context.Context, tx pgx.Tx, now time.Time, ahead int) ([]week, error) {
	var out []week
	for i := 0; i <= ahead; i++ {
		out = append(out, week{weekOf(now).start.AddDate(0, 0, 7*i)})
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT date_trunc('week', discovered_at, 'UTC') FROM updates_default`)
	if err != nil {
		return nil, fmt.Errorf("read the weeks of updates_default: %w", err)
	}
	strays, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, fmt.Errorf("read the weeks of updates_default: %w", err)
	}
	for _, t := range strays {
		if w := weekOf(t); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b week) int { return a.start.Compare(b.start) })
	return out, nil
}

// createWeek makes w's partition as a plain table, moves w's rows out of
// updates_default into it and attaches it: PostgreSQL refuses a partition
// for a range the default partition holds rows of. Attaching builds the
// partition's indexes and foreign key from updates' own; its CHECK
// constraints (migration 00020) must be there before, copied with the
// columns, or PostgreSQL refuses to attach it. It returns the rows moved.
func createWeek(ctx context.Context, tx pgx.Tx, w week) (int64, error) {
	name := pgx.Identifier{w.name()}.Sanitize()
	from, to := w.start.Format(time.RFC3339), w.end().Format(time.RFC3339)
	if _, err := tx.Exec(ctx, `CREATE TABLE `+name+` (LIKE updates INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`); err != nil {
		return 0, fmt.Errorf("create partition %s: %w", w.name(), err)
	}
	tag, err := tx.Exec(ctx, `WITH moved AS (
			DELETE FROM updates_default WHERE discovered_at >= $1 AND discovered_at < $2 RETURNING *)
		INSERT INTO `+name+` SELECT * FROM moved`, w.start, w.end())
	if err != nil {
		return 0, fmt.Errorf("move rows of %s out of updates_default: %w", w.name(), err)
	}
	if _, err := tx.Exec(ctx, `ALTER TABLE updates ATTACH PARTITION `+name+
		` FOR VALUES FROM ('`+from+`') TO ('`+to+`')`); err != nil {
		return 0, fmt.Errorf("attach partition %s: %w", w.name(), err)
	}
	return tag.RowsAffected(), nil
}

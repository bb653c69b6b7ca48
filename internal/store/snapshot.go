package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// keepsSnapshot reports whether a check's snapshot is indexed: unless the
// check was stale. The crawler archives only a check whose link set
// differs from the page's recorded one (or that must send its links
// whole), so a fresh check with a snapshot recorded news, revisions, the
// baseline, removals made due, or a link gone for the first time. The
// last one records nothing yet, but its snapshot is what later removals
// are shown with: a check that makes a removal due after reading the same
// links again (a 304, the same body) has no body of its own, and the
// page's newest snapshot must then be the one that showed the link gone
// (newestSnapshot). A stale check does not show the page as it is now.
func keepsSnapshot(rec watch.Recorded) bool {
	return !rec.Stale
}

// indexStatement returns the statement that inserts the index row of the
// check's snapshot and, for a record that holds its payload, makes it the
// page's original, in one statement. A revisit whose original is no
// longer indexed (retention took it while the job was in flight) is not
// indexed: it would name a payload nobody can read. A redelivered check
// inserts nothing (record_id is unique).
func indexStatement(c watch.Check, rec watch.Recorded) (string, []any, error) {
	ref := c.Snapshot
	var orig []byte
	if ref.RevisitOf == "" {
		var err error
		orig, err = json.Marshal(watch.SnapshotOriginal{RecordID: ref.RecordID, PayloadDigest: ref.PayloadDigest,
			TargetURI: ref.TargetURI, Date: ref.WrittenAt})
		if err != nil {
			return "", nil, fmt.Errorf("index snapshot %s: %w", ref.RecordID, err)
		}
	}
	return `
		WITH ins AS (
			INSERT INTO snapshots (page_id, check_id, fetched_at, file, file_offset, length, record_id, payload_digest,
				revisit_of, target_uri, status, content_type, payload_bytes, baseline, updates, revisions, removals, rendered_bytes)
			SELECT $1, $2::uuid, $3, $4, $5, $6, $7, $8, o.id, $10, $11, $12, $13, $14, $15, $16, $17, nullif($19::bigint, 0)
			FROM (SELECT NULL) AS one LEFT JOIN snapshots o ON o.record_id = $9 AND o.page_id = $1
			WHERE $9 = '' OR o.id IS NOT NULL
			ON CONFLICT (record_id) DO NOTHING
			RETURNING id
		), original AS (
			UPDATE pages SET snapshot_original = $18
			WHERE id = $1 AND $18::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM ins)
		)
		SELECT id FROM ins`,
		[]any{c.PageID, ref.CheckID, c.FetchedAt, ref.File, ref.Offset, ref.Length, ref.RecordID, ref.PayloadDigest,
			ref.RevisitOf, ref.TargetURI, ref.Status, ref.ContentType, ref.PayloadBytes, rec.Baseline,
			len(rec.Updates), rec.Revisions, rec.Due, orig, ref.RenderedBytes}, nil
}

// scanIndexed reads indexStatement's result: the row's id, 0 when none was
// inserted.
func scanIndexed(row pgx.Row, ref *watch.SnapshotRef) (int64, error) {
	var id int64
	err := row.Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("index snapshot %s: %w", ref.RecordID, err)
	}
	return id, nil
}

// indexArticleSnapshot inserts the index row of the snapshot of article
// id's fetch, in the transaction that stores the article.
func indexArticleSnapshot(ctx context.Context, tx pgx.Tx, id int64, ref *watch.SnapshotRef, fetchedAt time.Time) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO snapshots (article_id, check_id, fetched_at, file, file_offset, length, record_id, payload_digest,
			target_uri, status, content_type, payload_bytes)
		VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (record_id) DO NOTHING`,
		id, ref.CheckID, fetchedAt, ref.File, ref.Offset, ref.Length, ref.RecordID, ref.PayloadDigest,
		ref.TargetURI, ref.Status, ref.ContentType, ref.PayloadBytes)
	if err != nil {
		return fmt.Errorf("index the snapshot of article %d: %w", id, err)
	}
	return nil
}

// ArticleSnapshots returns the snapshots of article id's fetches, newest
// first.
func (s *Store) ArticleSnapshots(ctx context.Context, id int64) ([]watch.Snapshot, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+snapshotColumns+`
		FROM snapshots s LEFT JOIN snapshots o ON o.id = s.revisit_of
		WHERE s.article_id = $1 ORDER BY s.fetched_at DESC, s.id DESC LIMIT 100`, id)
	if err != nil {
		return nil, fmt.Errorf("snapshots of article %d: %w", id, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Snapshot, error) { return scanSnapshot(r) })
	if err != nil {
		return nil, fmt.Errorf("snapshots of article %d: %w", id, err)
	}
	return out, nil
}

// snapshotColumns are the columns scanSnapshot reads, of snapshots s and
// its original o (LEFT JOIN snapshots o ON o.id = s.revisit_of).
const snapshotColumns = `s.id, coalesce(s.page_id, 0), coalesce(s.article_id, 0), s.check_id::text, s.fetched_at, s.file, s.file_offset, s.length, s.record_id,
	s.payload_digest, s.target_uri, s.status, s.content_type, s.payload_bytes, s.fetched_at,
	s.baseline, s.updates, s.revisions, s.removals, coalesce(s.rendered_bytes, 0),
	o.file, o.file_offset, o.length, o.record_id, o.payload_digest, o.target_uri, o.status, o.content_type, o.payload_bytes, o.fetched_at`

func scanSnapshot(row pgx.Row) (watch.Snapshot, error) {
	var (
		s    watch.Snapshot
		o    watch.SnapshotRef
		oID  *string
		oOff *int64
		oLen *int64
		oDig *string
		oURI *string
		oSt  *int
		oCT  *string
		oPB  *int64
		oAt  *time.Time
		oF   *string
	)
	err := row.Scan(&s.ID, &s.PageID, &s.ArticleID, &s.CheckID, &s.FetchedAt, &s.Ref.File, &s.Ref.Offset, &s.Ref.Length, &s.Ref.RecordID,
		&s.Ref.PayloadDigest, &s.Ref.TargetURI, &s.Ref.Status, &s.Ref.ContentType, &s.Ref.PayloadBytes, &s.Ref.WrittenAt,
		&s.Baseline, &s.Updates, &s.Revisions, &s.Removals, &s.Ref.RenderedBytes,
		&oF, &oOff, &oLen, &oID, &oDig, &oURI, &oSt, &oCT, &oPB, &oAt)
	if err != nil {
		return s, err
	}
	s.Ref.CheckID = s.CheckID
	if oID != nil {
		o = watch.SnapshotRef{File: *oF, Offset: *oOff, Length: *oLen, RecordID: *oID, PayloadDigest: *oDig, TargetURI: *oURI,
			Status: *oSt, ContentType: *oCT, PayloadBytes: *oPB, WrittenAt: *oAt}
		s.Original = &o
		s.Ref.RevisitOf = o.RecordID
	}
	return s, nil
}

// Snapshots returns the page's snapshots, newest first, at most limit.
func (s *Store) Snapshots(ctx context.Context, pageID int64, limit int) ([]watch.Snapshot, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+snapshotColumns+`
		FROM snapshots s LEFT JOIN snapshots o ON o.id = s.revisit_of
		WHERE s.page_id = $1 ORDER BY s.fetched_at DESC, s.id DESC LIMIT $2`, pageID, budget(limit))
	if err != nil {
		return nil, fmt.Errorf("snapshots of page %d: %w", pageID, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Snapshot, error) { return scanSnapshot(r) })
	if err != nil {
		return nil, fmt.Errorf("snapshots of page %d: %w", pageID, err)
	}
	return out, nil
}

// Snapshot returns snapshot id, watch.ErrSnapshotNotFound when there is
// none or its page is in the trash.
func (s *Store) Snapshot(ctx context.Context, id int64) (watch.Snapshot, error) {
	snap, err := scanSnapshot(s.pool.QueryRow(ctx, `SELECT `+snapshotColumns+`
		FROM snapshots s LEFT JOIN snapshots o ON o.id = s.revisit_of LEFT JOIN pages p ON p.id = s.page_id
		WHERE s.id = $1 AND (s.page_id IS NULL OR p.deleted_at IS NULL)`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return snap, fmt.Errorf("snapshot %d: %w", id, watch.ErrSnapshotNotFound)
	}
	if err != nil {
		return snap, fmt.Errorf("snapshot %d: %w", id, err)
	}
	return snap, nil
}

// SnapshotFileBytes returns, for each archive file that index rows name,
// the bytes of it they reference: what the sweep must keep.
func (s *Store) SnapshotFileBytes(ctx context.Context) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT file, sum(length)::bigint FROM snapshots GROUP BY file`)
	if err != nil {
		return nil, fmt.Errorf("archive files in the index: %w", err)
	}
	out := map[string]int64{}
	var (
		file string
		n    int64
	)
	_, err = pgx.ForEachRow(rows, []any{&file, &n}, func() error { out[file] = n; return nil })
	if err != nil {
		return nil, fmt.Errorf("archive files in the index: %w", err)
	}
	return out, nil
}

// expirable is true for a snapshot retention may delete: no revisit
// refers to it and it is not its page's original (a job in flight may
// carry that one to a crawler).
const expirable = `NOT EXISTS (SELECT 1 FROM snapshots r WHERE r.revisit_of = s.id)
	AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.id = s.page_id AND p.snapshot_original->>'recordId' = s.record_id)`

// ExpireSnapshots deletes up to limit snapshots fetched before before
// (oldest first) and returns how many.
func (s *Store) ExpireSnapshots(ctx context.Context, before time.Time, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM snapshots WHERE id IN (
		SELECT s.id FROM snapshots s WHERE s.fetched_at < $1 AND `+expirable+` ORDER BY s.fetched_at LIMIT $2)`, before, budget(limit))
	if err != nil {
		return 0, fmt.Errorf("expire snapshots: %w", err)
	}
	return tag.RowsAffected(), nil
}

// EvictSnapshots deletes the oldest snapshots, up to limit, while the
// bytes the index references are over maxBytes, and returns how many.
func (s *Store) EvictSnapshots(ctx context.Context, maxBytes int64, limit int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM snapshots WHERE id IN (
		SELECT id FROM (
			SELECT s.id, (SELECT sum(length) FROM snapshots) - sum(s.length) OVER (ORDER BY s.fetched_at, s.id) + s.length AS left_bytes
			FROM snapshots s WHERE `+expirable+` ORDER BY s.fetched_at, s.id LIMIT $2) AS oldest
		WHERE left_bytes > $1)`, maxBytes, budget(limit))
	if err != nil {
		return 0, fmt.Errorf("evict snapshots over %d bytes: %w", maxBytes, err)
	}
	return tag.RowsAffected(), nil
}

// MoveSnapshots points the rows of file at their new places after a
// compaction copied them into another file: moved maps an old offset to
// the new file and offset.
func (s *Store) MoveSnapshots(ctx context.Context, file, to string, moved map[int64]int64) error {
	olds, news := make([]int64, 0, len(moved)), make([]int64, 0, len(moved))
	for o, n := range moved {
		olds, news = append(olds, o), append(news, n)
	}
	_, err := s.pool.Exec(ctx, `UPDATE snapshots s SET file = $2, file_offset = m.n
		FROM unnest($3::bigint[], $4::bigint[]) AS m(o, n) WHERE s.file = $1 AND s.file_offset = m.o`, file, to, olds, news)
	if err != nil {
		return fmt.Errorf("move snapshots of %s to %s: %w", file, to, err)
	}
	return nil
}

// SnapshotRanges returns the distinct byte ranges of file the index
// references, by offset.
func (s *Store) SnapshotRanges(ctx context.Context, file string) ([][2]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT file_offset, length FROM snapshots WHERE file = $1 ORDER BY file_offset`, file)
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", file, err)
	}
	var (
		out    [][2]int64
		off, n int64
	)
	_, err = pgx.ForEachRow(rows, []any{&off, &n}, func() error { out = append(out, [2]int64{off, n}); return nil })
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", file, err)
	}
	return out, nil
}

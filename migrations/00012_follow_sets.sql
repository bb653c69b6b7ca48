-- +goose Up
-- A page's followed link set in its own row, computed by the processor.
-- 00009 to 00011 kept the set in 32 followed_keys rows a page, found its
-- changes by comparing them in SQL or by bucket digests, and recorded a
-- check's due removals inside the check's statement. Each part a statement
-- has costs PostgreSQL its setup at every execution, so following cost a
-- check whose links rotate a third again (docs/benchmarks.md). Now the
-- scheduler's job carries the page's whole followed set, the processor
-- computes what the check changes, and the statement only verifies that the
-- page's state is still the job's (ok_checks; follow_state_changed
-- otherwise) and writes the new one:
--
--   follow_base  the set as of the last fold, out of line (EXTERNAL: random
--                keys do not compress), so a check that leaves it alone
--                copies only its pointer;
--   follow_added, follow_gone
--                keys followed that the base lacks, and base keys no longer
--                followed: the set is follow_base less follow_gone plus
--                follow_added. A check folds them into a new base once they
--                pass 64 keys (internal/store/follow.go);
--   due_keys     links absent for K checks, not yet in removals. A check
--                moves them here with the rest of its write; the processor
--                records them for many pages in one statement
--                (store.RecordRemovals), which empties the array, so each is
--                recorded once.
--
-- NULL follow_base is a page not followed (removals off, never checked
-- with the whole link set, or re-baselined by a check without it).
-- pending_keys and pending_since are kept as they are.
ALTER TABLE pages
    ADD COLUMN follow_base bigint[],
    ADD COLUMN follow_added bigint[],
    ADD COLUMN follow_gone bigint[],
    ADD COLUMN due_keys bigint[];
ALTER TABLE pages ALTER COLUMN follow_base SET STORAGE EXTERNAL;

-- 00011's followed set: each bucket row's keys and the page's links
-- inserted after the row, less gone_keys.
UPDATE pages p SET follow_base = ARRAY(
        SELECT s.k FROM (
            SELECT unnest(f.keys) FROM followed_keys f WHERE f.page_id = p.id
            UNION
            SELECT l.link_key FROM links l JOIN followed_keys f
                ON f.page_id = l.page_id AND f.bucket = ((l.link_key >> 59) & 31)
            WHERE l.page_id = p.id AND l.first_check > f.through) AS s(k)
        WHERE s.k <> ALL (coalesce(p.gone_keys, '{}'))
        ORDER BY 1),
    follow_added = '{}', follow_gone = '{}'
WHERE p.pending_keys IS NOT NULL;

DROP TABLE followed_keys;
ALTER TABLE pages DROP COLUMN link_buckets, DROP COLUMN gone_keys;
ALTER TABLE links DROP COLUMN first_check;
DROP FUNCTION followed_set_changed();

-- +goose StatementBegin
CREATE FUNCTION follow_state_changed() RETURNS bigint[] LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the page''s following state is no longer the one the check was computed from'
        USING ERRCODE = 'PW001', HINT = 'Read the page''s state again and compute the check anew.';
END $$;
-- +goose StatementEnd

-- +goose Down
-- 00011 keeps the followed set in bucket rows; its digests start empty, so
-- every followed page's next whole check compares every bucket. Removals
-- already due are recorded now, as 00011's check would have.
DROP FUNCTION follow_state_changed();
-- +goose StatementBegin
CREATE FUNCTION followed_set_changed() RETURNS bigint[] LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the check''s link set is not the page''s followed set with the links the check inserted'
        USING ERRCODE = 'PW001', HINT = 'Record the check with the statement that compares the sets.';
END $$;
-- +goose StatementEnd
ALTER TABLE links ADD COLUMN first_check integer;
ALTER TABLE pages ADD COLUMN link_buckets bigint[], ADD COLUMN gone_keys bigint[];
CREATE TABLE followed_keys (
    page_id bigint   NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    bucket  smallint NOT NULL,
    keys    bigint[] NOT NULL,
    through integer  NOT NULL DEFAULT 0,
    PRIMARY KEY (page_id, bucket)
) WITH (fillfactor = 75);
INSERT INTO followed_keys (page_id, bucket, keys, through)
SELECT p.id, b.b, ARRAY(
        SELECT s.k FROM (
            SELECT unnest(p.follow_base) EXCEPT SELECT unnest(p.follow_gone)
            UNION
            SELECT unnest(p.follow_added)) AS s(k)
        WHERE ((s.k >> 59) & 31) = b.b ORDER BY 1),
    p.ok_checks
FROM pages p, generate_series(0, 31) AS b(b)
WHERE p.follow_base IS NOT NULL;
UPDATE pages SET pending_keys = coalesce(pending_keys, '{}'), pending_since = coalesce(pending_since, '{}')
WHERE follow_base IS NOT NULL;
INSERT INTO removals (page_id, link_key, url, text)
SELECT p.id, l.link_key, l.url, l.text
FROM pages p CROSS JOIN unnest(p.due_keys) AS d(k) JOIN links l ON l.page_id = p.id AND l.link_key = d.k;
ALTER TABLE pages DROP COLUMN follow_base, DROP COLUMN follow_added, DROP COLUMN follow_gone, DROP COLUMN due_keys;

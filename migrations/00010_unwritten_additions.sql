-- +goose Up
-- A check that only adds links the page never had writes nothing to follow
-- them. 00009 rewrote the followed_keys row of every bucket whose digest
-- changed, and on a page that gains stories without losing any, every check
-- changes some: following cost a third more database time per check with
-- no link ever leaving (docs/benchmarks.md). Now a bucket's followed set is its
-- row's keys and the page's links inserted after the row was written:
-- links.first_check is the page's check count (pages.ok_checks) at the
-- check that inserted the link, followed_keys.through the count at the
-- check that wrote the row. Bucket digests are XORs of their keys
-- (shortlink.BucketDigests), so the check's statement tells a bucket that
-- only gained new links (its stored digest XOR the links it inserted is the
-- check's digest) from one that lost or got back a link, and compares and
-- rewrites only the latter.
--
-- Both columns are added without a default, so no table is rewritten. Links
-- inserted before (first_check NULL) are never after a row; the digests
-- were SHA-256 and are cleared, so each followed page's next whole check
-- compares every bucket once, and rewrites the rows it compares.
ALTER TABLE links ADD COLUMN first_check integer;
ALTER TABLE followed_keys ADD COLUMN through integer NOT NULL DEFAULT 0;
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;

-- A check the processor expects only to add new links is recorded by a
-- statement that compares nothing and checks the expectation
-- (internal/store/removals.go, trackingAddsOnly); when it is wrong, this
-- fails that statement, so it changes nothing, and the processor sends the
-- statement that compares.
-- +goose StatementBegin
CREATE FUNCTION followed_set_changed() RETURNS bigint[] LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the check''s link set is not the page''s followed set with the links the check inserted'
        USING ERRCODE = 'PW001', HINT = 'Record the check with the statement that compares the sets.';
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION followed_set_changed();
-- 00009 holds the whole set in the rows: the links a row does not list but
-- follows go into it.
UPDATE followed_keys f SET keys = ARRAY(
    SELECT k FROM unnest(f.keys) AS k
    UNION
    SELECT l.link_key FROM links l
    WHERE l.page_id = f.page_id AND ((l.link_key >> 59) & 31) = f.bucket AND l.first_check > f.through
    ORDER BY 1)
WHERE EXISTS (SELECT 1 FROM links l
              WHERE l.page_id = f.page_id AND ((l.link_key >> 59) & 31) = f.bucket AND l.first_check > f.through);
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;
ALTER TABLE followed_keys DROP COLUMN through;
ALTER TABLE links DROP COLUMN first_check;

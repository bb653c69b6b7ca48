-- +goose Up
-- A check that loses links writes no followed_keys row either. 00010 still
-- rewrote the row of every bucket that lost a link, after reading it and the
-- bucket's later links: on a front page where stories rotate out, following
-- cost half as much again per check (docs/benchmarks.md). Now the digests tell a
-- bucket that lost or got back exactly one link: pages.link_buckets holds
-- two words a bucket (shortlink.BucketDigests), the XOR of its keys and the
-- XOR of their Mix, and a bucket whose stored digests XOR the links the
-- check inserted XOR the check's differ by d and Mix(d) differs by the one
-- key d. So the processor tells what such a check changes and the store
-- records it with a statement that compares nothing
-- (internal/store/removals.go, knowing). The rows then keep listing keys
-- that left: gone_keys holds them, sorted, and a bucket's followed set is
-- its row's keys and the page's links inserted after the row, less
-- gone_keys. A check that compares rewrites every bucket with a gone key,
-- and so empties gone_keys. NULL is none.
--
-- The digests of 00010 have one word a bucket and are cleared, so each
-- followed page's next whole check compares every bucket once.
ALTER TABLE pages ADD COLUMN gone_keys bigint[];
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;

-- +goose Down
-- 00010's followed set has no exceptions: each bucket that has a gone key
-- is rewritten with its followed set, as a check that compares it would.
UPDATE followed_keys f SET keys = ARRAY(
        SELECT s.k FROM (
            SELECT unnest(f.keys)
            UNION
            SELECT l.link_key FROM links l
            WHERE l.page_id = f.page_id AND ((l.link_key >> 59) & 31) = f.bucket AND l.first_check > f.through) AS s(k)
        WHERE s.k <> ALL (p.gone_keys)
        ORDER BY 1),
    through = p.ok_checks
FROM pages p
WHERE p.id = f.page_id AND EXISTS (SELECT 1 FROM unnest(p.gone_keys) AS g(k) WHERE ((g.k >> 59) & 31) = f.bucket);
ALTER TABLE pages DROP COLUMN gone_keys;
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;

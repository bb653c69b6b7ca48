-- +goose Up
-- Removals without touching links. 00008 found the links that left a page by
-- reading links_live (an index of the links not removed) and marked each
-- removal, each options-change leftover and each link that came back with an
-- update of its links row, all inside the check's statement. links is hash
-- partitioned into 32 tables, and PostgreSQL sets up an update or a scan of
-- a partitioned table (locks, result relations, the append of every
-- partition) at each execution of a generic plan, touching rows or not:
-- perf put 31 % of the database's CPU there, and following cost +43 % per
-- check with no link leaving at all (docs/benchmarks.md).
--
-- followed_keys holds the page's last whole link set, one row per bucket of
-- the key space (shortlink.KeyBucket; pages.link_buckets keeps the 32
-- digests): a check whose bucket digests differ reads and rewrites only
-- those buckets' rows, a few keys each, on a table that is neither
-- partitioned nor indexed beyond its key, so the rewrite is a HOT update in
-- place (fillfactor leaves the room). links keeps no removal state: a link
-- removed and later back is simply in a set again, and was never new.
--
-- Size: one row of ~20 keys per bucket a page has links in, at most 32 a
-- page: at 10 M pages of 300 links about 300 M rows of ~200 bytes, 60 GB,
-- a fifth of links' size, with a small primary key.
CREATE TABLE followed_keys (
    page_id bigint   NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    bucket  smallint NOT NULL,
    keys    bigint[] NOT NULL,
    PRIMARY KEY (page_id, bucket)
) WITH (fillfactor = 75);

-- Pages 00008 followed: their last whole set is their live links without
-- the pending ones. Their digests are cleared, so their next whole check
-- compares every bucket once (keeping the pending absences) and stores
-- digests that match these rows.
INSERT INTO followed_keys (page_id, bucket, keys)
SELECT l.page_id, ((l.link_key >> 59) & 31)::smallint, array_agg(l.link_key ORDER BY l.link_key)
FROM links l JOIN pages p ON p.id = l.page_id
WHERE p.pending_keys IS NOT NULL AND l.removed_at IS NULL AND NOT (l.link_key = ANY (p.pending_keys))
GROUP BY 1, 2;
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;

DROP INDEX links_live;
ALTER TABLE links DROP COLUMN removed_at;

-- +goose Down
ALTER TABLE links ADD COLUMN removed_at timestamptz;
-- A followed page's links that are neither in its last whole set nor pending
-- were removed, or left out by its options: 00008 marks both.
UPDATE links SET removed_at = now()
FROM pages p
WHERE links.page_id = p.id AND p.pending_keys IS NOT NULL
  AND NOT (links.link_key = ANY (p.pending_keys))
  AND NOT EXISTS (SELECT 1 FROM followed_keys f
                  WHERE f.page_id = links.page_id AND f.bucket = ((links.link_key >> 59) & 31)
                    AND links.link_key = ANY (f.keys));
CREATE INDEX links_live ON links (page_id, link_key) WHERE removed_at IS NULL;
UPDATE pages SET link_buckets = NULL WHERE link_buckets IS NOT NULL;
DROP TABLE followed_keys;

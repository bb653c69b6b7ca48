-- +goose Up
-- Removals without a stored copy of each page's link set. 00007 kept every
-- page's keys in link_sets and rewrote that array (300–600 keys, ~5 KB of
-- WAL) on every check whose set changed, and marked each link that left
-- with an update of its links row: make bench measured +148 % of the
-- database's CPU per check. Now the links that left are found by reading the
-- page's live links (links_live, an index of the links not removed) against
-- the check's keys inside the check's own statement, and the pending
-- absences live in the page's row, which every check rewrites anyway: a
-- changed check writes only the links that are removed or come back.
--
-- pending_keys and pending_since are parallel arrays, sorted by key: a link
-- of the page that left it, and the page's ok_checks count at the first
-- successful check that did not find it. NULL (not '{}') means the page is
-- not followed yet (removals were off, or options changed and no whole
-- link set has been seen since): the next check with the whole set starts
-- from it without reporting anything.
--
-- link_buckets holds the digests of the 32 buckets of the key space of the
-- page's last whole link set (shortlink.BucketDigests): a check compares
-- key by key only the buckets whose digest changed, so its cost follows the
-- links that changed, not the links the page has. NULL: compare them all.
ALTER TABLE pages
    ADD COLUMN pending_keys  bigint[],
    ADD COLUMN pending_since bigint[],
    ADD COLUMN link_buckets  bigint[];

-- Pages that 00007 followed keep their pending absences.
UPDATE pages SET pending_keys = coalesce(a.keys, '{}'), pending_since = coalesce(a.since, '{}')
FROM link_sets s LEFT JOIN LATERAL (
    SELECT array_agg(l.link_key ORDER BY l.link_key) AS keys, array_agg(l.absent_at ORDER BY l.link_key) AS since
    FROM links l WHERE l.page_id = s.page_id AND l.absent_at IS NOT NULL AND l.removed_at IS NULL
) a ON true
WHERE pages.id = s.page_id;

-- removed_at now says the link is not followed as on its page: recorded as a
-- removal, or left out of the watched part by an options change (00007 only
-- dropped those from its stored set). Without this, such links would be
-- found missing by the first check and reported as removed.
UPDATE links SET removed_at = now()
FROM link_sets s
WHERE links.page_id = s.page_id AND links.removed_at IS NULL AND links.absent_at IS NULL
  AND NOT (links.link_key = ANY (s.keys));

DROP TABLE link_sets;
DROP INDEX links_absent;
ALTER TABLE links DROP COLUMN absent_at;
ALTER TABLE pages DROP COLUMN removal_due_at;

-- One entry per link still on its page: the check reads a page's entries
-- (an index-only scan once vacuum has been by) rather than every link the
-- page ever had. On a large installation this index takes a while to build
-- and blocks writes to links meanwhile; stop the processors first.
CREATE INDEX links_live ON links (page_id, link_key) WHERE removed_at IS NULL;

-- +goose Down
DROP INDEX links_live;
ALTER TABLE links ADD COLUMN absent_at bigint;
CREATE INDEX links_absent ON links (page_id, absent_at) WHERE absent_at IS NOT NULL AND removed_at IS NULL;
ALTER TABLE pages ADD COLUMN removal_due_at bigint;
CREATE TABLE link_sets (
    page_id    bigint PRIMARY KEY REFERENCES pages (id) ON DELETE CASCADE,
    digest     text NOT NULL,
    keys       bigint[] NOT NULL,
    fetched_at timestamptz NOT NULL
);
UPDATE links SET absent_at = p.since
FROM pages, unnest(pages.pending_keys, pages.pending_since) AS p(k, since)
WHERE links.page_id = pages.id AND links.link_key = p.k;
-- Early is safe: 00007 records only the absences old enough at that check.
UPDATE pages SET removal_due_at = (SELECT min(since) FROM unnest(pending_since) AS since)
WHERE cardinality(pending_since) > 0;
-- Without link_sets rows 00007 starts each page's set afresh at its next
-- whole check; the links now marked removed stay so until they come back.
ALTER TABLE pages DROP COLUMN pending_keys, DROP COLUMN pending_since, DROP COLUMN link_buckets;

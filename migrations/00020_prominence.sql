-- +goose Up
-- Prominence (issue 33): where the portal put a new link, and whether a
-- watch still sees its page.

-- Where a new link stood on its homepage when it was first seen: its rank
-- among the page's kept links in document order (1 is the first), the level
-- of the heading its headline came from (0: none), and the landmark that
-- holds its first anchor ('none' when no landmark does). NULL in all three:
-- not known, as for updates recorded before this step. Adding nullable
-- columns without a default rewrites no partition of updates.
ALTER TABLE updates
    ADD COLUMN position int CHECK (position > 0),
    ADD COLUMN heading smallint CHECK (heading BETWEEN 0 AND 6),
    ADD COLUMN landmark text CHECK (landmark IN ('header', 'nav', 'main', 'aside', 'footer', 'none'));

-- A page is degraded while its checks say the watch may be blind: no kept
-- links, far fewer than it usually has, regions that match nothing, or a
-- block (401, 403, 429, a challenge page). degraded names the reason (a
-- word for programs), degraded_detail says it for people, degraded_since is
-- when the run of such checks began; all NULL while the page is healthy.
-- kept_counts holds the kept links of the page's last successful checks
-- that read a body (at most 10, oldest first), the history its usual count
-- is the median of.
ALTER TABLE pages
    ADD COLUMN degraded text CHECK (degraded IN ('no_links', 'few_links', 'region_empty', 'blocked', 'challenge')),
    ADD COLUMN degraded_detail text,
    ADD COLUMN degraded_since timestamptz,
    ADD COLUMN kept_counts int[] NOT NULL DEFAULT '{}' CHECK (cardinality(kept_counts) <= 10);

-- +goose Down
ALTER TABLE pages DROP COLUMN kept_counts, DROP COLUMN degraded_since, DROP COLUMN degraded_detail, DROP COLUMN degraded;
ALTER TABLE updates DROP COLUMN landmark, DROP COLUMN heading, DROP COLUMN position;

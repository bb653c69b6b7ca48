-- +goose Up
-- What the last successful check left out, shown on the page's status:
-- last_truncated counts links the crawler dropped (link cap, task byte
-- budget); last_cut counts new links the processor did not record because
-- of the per-check or per-day cap. new_links_day/new_links_today count the
-- new links recorded on one UTC day, for the per-day cap.
ALTER TABLE pages
    ADD COLUMN last_truncated  integer NOT NULL DEFAULT 0,
    ADD COLUMN last_cut        integer NOT NULL DEFAULT 0,
    ADD COLUMN new_links_day   date,
    ADD COLUMN new_links_today integer NOT NULL DEFAULT 0,
    -- links_seen_at is the time of the page's last link refresh: the check
    -- whose whole link set set last_seen_at of every link on the page. A
    -- link older than it was absent from the page at that check.
    ADD COLUMN links_seen_at   timestamptz;

-- last_seen_at is refreshed at most once a day per page (see links_seen_at),
-- not on every check: a link is forgotten only when it has been absent from
-- the page for the retention period. The default is evaluated once, so the
-- column costs no table rewrite.
ALTER TABLE links ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX links_last_seen ON links (last_seen_at);

-- +goose Down
DROP INDEX links_last_seen;
ALTER TABLE links DROP COLUMN last_seen_at;
ALTER TABLE pages
    DROP COLUMN last_truncated,
    DROP COLUMN last_cut,
    DROP COLUMN new_links_day,
    DROP COLUMN new_links_today,
    DROP COLUMN links_seen_at;

-- +goose Up
-- The web page as a place to read (issue 28).

-- The trash: every delete of a page (the web page, the API, watchctl
-- remove) marks it deleted. A deleted page is not checked and is left out
-- of every list, feed and message, keeps its links and updates, and comes
-- back when it is restored or its URL is added again; the processors'
-- retention rounds delete it for good 7 days after.
ALTER TABLE pages ADD COLUMN deleted_at timestamptz;
DROP INDEX pages_due;
CREATE INDEX pages_due ON pages (next_check_at) WHERE enabled AND deleted_at IS NULL;
CREATE INDEX pages_deleted ON pages (deleted_at) WHERE deleted_at IS NOT NULL;

-- Which updates were taken down again: the river marks them, looking each
-- one up by its link.
CREATE INDEX removals_link ON removals (page_id, link_key);

-- What each reader has read: a reader is the token a person signed in
-- with, and the updates at or before (read_at, read_id) in the
-- newest-first order of updates are read.
CREATE TABLE reader_marks (
    token_id  bigint PRIMARY KEY REFERENCES api_tokens (id) ON DELETE CASCADE,
    read_at   timestamptz NOT NULL,
    read_id   bigint NOT NULL,
    marked_at timestamptz NOT NULL DEFAULT now()
);

-- New links per page and hour, for the pages list's sparkline of the last
-- week: counted as updates are inserted, one statement-level trigger per
-- insert, so the list reads at most 168 rows a page and never updates.
-- Rows older than 8 days are deleted by the processors' retention rounds.
CREATE TABLE page_hours (
    page_id bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    hour    timestamptz NOT NULL,
    links   integer NOT NULL,
    PRIMARY KEY (page_id, hour)
);

-- +goose StatementBegin
CREATE FUNCTION count_page_hours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO page_hours (page_id, hour, links)
    SELECT page_id, date_trunc('hour', discovered_at, 'UTC'), count(*) FROM new_updates GROUP BY 1, 2
    ON CONFLICT (page_id, hour) DO UPDATE SET links = page_hours.links + excluded.links;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER updates_count_page_hours AFTER INSERT ON updates
    REFERENCING NEW TABLE AS new_updates FOR EACH STATEMENT EXECUTE FUNCTION count_page_hours();

INSERT INTO page_hours (page_id, hour, links)
SELECT page_id, date_trunc('hour', discovered_at, 'UTC'), count(*) FROM updates
WHERE discovered_at > now() - interval '8 days'
GROUP BY 1, 2;

-- +goose Down
DROP TRIGGER updates_count_page_hours ON updates;
DROP FUNCTION count_page_hours();
DROP TABLE page_hours;
DROP TABLE reader_marks;
DROP INDEX removals_link;
DELETE FROM pages WHERE deleted_at IS NOT NULL;
DROP INDEX pages_deleted;
DROP INDEX pages_due;
CREATE INDEX pages_due ON pages (next_check_at) WHERE enabled;
ALTER TABLE pages DROP COLUMN deleted_at;

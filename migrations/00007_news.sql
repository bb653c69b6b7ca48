-- +goose Up
-- A page's regions and keyword rules (watch.LinkOptions: within, exclude,
-- includeText, excludeText, includeUrl, excludeUrl), one text[] column per
-- list like ignore_patterns: each list is read and replaced on its own
-- (watchctl set --within, the API's PATCH), and registration has checked
-- every entry before it is stored.
ALTER TABLE pages
    ADD COLUMN within_selectors  text[] NOT NULL DEFAULT '{}',
    ADD COLUMN exclude_selectors text[] NOT NULL DEFAULT '{}',
    ADD COLUMN include_text      text[] NOT NULL DEFAULT '{}',
    ADD COLUMN exclude_text      text[] NOT NULL DEFAULT '{}',
    ADD COLUMN include_url       text[] NOT NULL DEFAULT '{}',
    ADD COLUMN exclude_url       text[] NOT NULL DEFAULT '{}',
    -- rebaseline is set when a person changes what the page's checks admit
    -- (regions, keyword rules, ignore patterns, same-site): the next
    -- successful check with the whole link set records the links it finds
    -- as a baseline does, without updates, and clears it.
    ADD COLUMN rebaseline        boolean NOT NULL DEFAULT false,
    -- burst_detection flags a check whose new links are more than the
    -- burst share of the page's links (a redesign) as one burst.
    ADD COLUMN burst_detection   boolean NOT NULL DEFAULT true,
    -- ok_checks counts the page's successful checks; a link that left the
    -- page is removed once it has been absent for K of them (see
    -- links.absent_at). removal_due_at is the ok_checks value at which the
    -- earliest pending absence reaches K, NULL when none is pending: a check
    -- reaching it records the removals, and no other check reads links.
    ADD COLUMN ok_checks         bigint NOT NULL DEFAULT 0,
    ADD COLUMN removal_due_at    bigint;

-- summary is the link's teaser (watch.Link.Summary); burst says the update
-- came with a redesign flood and is shown within one event, not alone.
-- Both defaults are constants: no table rewrite, and the statements work on
-- a partitioned updates as on a plain one.
ALTER TABLE updates
    ADD COLUMN summary text NOT NULL DEFAULT '',
    ADD COLUMN burst   boolean NOT NULL DEFAULT false;

-- absent_at is pages.ok_checks of the first successful check that did not
-- find the link, NULL while it is on the page; removed_at is set when the
-- link has been recorded in removals, so it is recorded once. Only links
-- that leave or come back are written; the partial index keeps the pending
-- ones at hand without reading a page's present links.
ALTER TABLE links
    ADD COLUMN absent_at  bigint,
    ADD COLUMN removed_at timestamptz;
CREATE INDEX links_absent ON links (page_id, absent_at) WHERE absent_at IS NOT NULL AND removed_at IS NULL;

-- link_sets keeps each page's link set as its last whole check found it
-- (the keys and their digest), so a check whose digest differs finds what
-- left and what came back by two set differences in one statement, and a
-- check with the same digest writes nothing.
CREATE TABLE link_sets (
    page_id    bigint PRIMARY KEY REFERENCES pages (id) ON DELETE CASCADE,
    digest     text NOT NULL,
    keys       bigint[] NOT NULL,
    -- fetched_at is the check's; an older check arriving late is ignored.
    fetched_at timestamptz NOT NULL
);

-- removals lists links that left their page for good (absent for K
-- successful checks). A link that comes back stays a known link, not news.
CREATE TABLE removals (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    page_id    bigint NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    link_key   bigint NOT NULL,
    url        text NOT NULL,
    text       text NOT NULL,
    removed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX removals_newest ON removals (removed_at DESC, id DESC);
CREATE INDEX removals_page ON removals (page_id, removed_at DESC, id DESC);

-- +goose Down
DROP TABLE removals;
DROP TABLE link_sets;
DROP INDEX links_absent;
ALTER TABLE links DROP COLUMN absent_at, DROP COLUMN removed_at;
ALTER TABLE updates DROP COLUMN summary, DROP COLUMN burst;
ALTER TABLE pages
    DROP COLUMN within_selectors, DROP COLUMN exclude_selectors, DROP COLUMN include_text,
    DROP COLUMN exclude_text, DROP COLUMN include_url, DROP COLUMN exclude_url,
    DROP COLUMN rebaseline, DROP COLUMN burst_detection, DROP COLUMN ok_checks, DROP COLUMN removal_due_at;

-- +goose Up
-- Pages rendered in headless Chromium (issue 35): their jobs go to the
-- render queue instead of the job queue, and the renderer hands the DOM
-- the page's scripts built to the crawler's link walk. false, the default,
-- is a plain fetch: a page inserted with plain SQL is not rendered.
ALTER TABLE pages ADD COLUMN render boolean NOT NULL DEFAULT false;
-- A CSS selector the renderer waits for before it reads the DOM, bounded
-- by its deadline per page; NULL waits for the network to go idle.
ALTER TABLE pages ADD COLUMN wait_for text
    CHECK (wait_for IS NULL OR length(wait_for) BETWEEN 1 AND 500);

-- The last plain check of the page read almost no links but scripts: the
-- page may build its links with JavaScript, and watchctl list and the page
-- view suggest rendering it. A rendered check clears it.
ALTER TABLE pages ADD COLUMN render_hint boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE pages DROP COLUMN render_hint;
ALTER TABLE pages DROP COLUMN wait_for;
ALTER TABLE pages DROP COLUMN render;

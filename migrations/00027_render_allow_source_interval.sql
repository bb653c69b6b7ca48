-- +goose Up
-- The two per-page and per-source settings issues 32 and 35 left for
-- later, in one step.

-- Hosts beyond the page's own site a rendered page may load subresources
-- from (a CDN, an API host), as host names or host:port. The renderer
-- blocks every other host outside the page's site; each name is still
-- resolved and refused if it is private. Empty, the default, allows the
-- page's site alone.
ALTER TABLE pages ADD COLUMN render_allow text[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(render_allow) <= 20);

-- How often a feed or news sitemap is checked; NULL, the default, follows
-- its page's interval. A news sitemap updated every minute can be read
-- more often than a slow homepage, or a large feed less often.
ALTER TABLE sources ADD COLUMN check_interval interval
    CHECK (check_interval IS NULL OR check_interval >= '10 seconds');

-- +goose Down
ALTER TABLE sources DROP COLUMN check_interval;
ALTER TABLE pages DROP COLUMN render_allow;

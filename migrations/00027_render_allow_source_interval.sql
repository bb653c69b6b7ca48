-- +goose Up
-- The two per-page and per-source settings issues 32 and 35 left for
-- later, a person's switch for a source, why a discovery failed, and the
-- size of a rendered snapshot, in one step.

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

-- A feed or sitemap a person paused: kept and listed, not checked. Apart
-- from enabled, which is discovery's (a source found again is enabled
-- again): a paused source stays paused until a person resumes it, and its
-- first check then is a silent baseline. The index of due sources leaves
-- paused ones out, as the claim does.
ALTER TABLE sources ADD COLUMN paused boolean NOT NULL DEFAULT false;
DROP INDEX sources_due;
CREATE INDEX sources_due ON sources (next_check_at) WHERE enabled AND NOT paused;

-- Why the page's last discovery of feeds and sitemaps failed (the page
-- did not load, robots.txt refused it...); NULL after one that worked.
-- Shown with the page's sources, so a page that chose feeds and has none
-- says why.
ALTER TABLE pages ADD COLUMN sources_discovery_error text
    CHECK (length(sources_discovery_error) <= 1000);

-- The size of the DOM a rendered check archived beside its response (a
-- resource record in the same range of the file); NULL for a plain
-- fetch. The evidence of a page built by scripts is its DOM, so the API
-- and the page view offer it only where a check kept one.
ALTER TABLE snapshots ADD COLUMN rendered_bytes bigint
    CHECK (rendered_bytes IS NULL OR rendered_bytes >= 0);

-- +goose Down
ALTER TABLE snapshots DROP COLUMN rendered_bytes;
ALTER TABLE pages DROP COLUMN sources_discovery_error;
DROP INDEX sources_due;
ALTER TABLE sources DROP COLUMN paused;
CREATE INDEX sources_due ON sources (next_check_at) WHERE enabled;
ALTER TABLE sources DROP COLUMN check_interval;
ALTER TABLE pages DROP COLUMN render_allow;

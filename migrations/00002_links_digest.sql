-- +goose Up
-- links_digest is the digest of the link set of the page's last recorded
-- check; jobs carry it so a crawler that finds the same set sends only
-- "unchanged", sparing the broker, the processor and the database.
ALTER TABLE pages ADD COLUMN links_digest text;

-- Every claim moves a page's next_check_at, leaving a dead index entry where
-- the next due-page scan starts; vacuum pages after a few thousand claims
-- rather than a fifth of the table.
ALTER TABLE pages SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
                       autovacuum_vacuum_cost_delay = 0);

-- +goose Down
ALTER TABLE pages RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_cost_delay);
ALTER TABLE pages DROP COLUMN links_digest;

-- +goose Up
-- The snapshot a removal is shown with (issue 34): the page's newest
-- snapshot when the removal is recorded, which is the page as the check
-- that made the removal due read it. That check kept a snapshot of its
-- own when it read a changed link set; when it read the same body (a 304,
-- the same bytes, or the same links), the page's newest snapshot is the
-- one whose links it read again. No foreign key: retention deletes
-- snapshots in bulk, and a key would cost each deletion a lookup in
-- removals; readers join the snapshot and find none once it is gone.
ALTER TABLE removals ADD COLUMN snapshot_id bigint;

-- +goose Down
ALTER TABLE removals DROP COLUMN snapshot_id;

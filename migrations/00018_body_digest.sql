-- +goose Up
-- A page whose body is byte for byte the one its last recorded check read
-- is not decoded nor parsed again (issue 29): body_digest is the digest of
-- that body (with the crawler's parse settings), kept and cleared with
-- links_digest, whose promise it shares: every link read from that body is
-- recorded.
ALTER TABLE pages ADD COLUMN body_digest text;

-- +goose Down
ALTER TABLE pages DROP COLUMN body_digest;

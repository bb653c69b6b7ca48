-- +goose Up
-- Request headers per page (issue 32): sent with every fetch of the page's
-- homepage, never with robots.txt. A JSON array of {"name", "value"} for a
-- header in clear and {"name", "sealed"} for a secret one (Cookie,
-- Authorization…), sealed with AES-256-GCM under PORTALWATCH_SECRETS_KEY for
-- this page id and header name (package secrets): the database never holds
-- a secret in clear, and the scheduler copies the sealed value into the job
-- unchanged. NULL, the default, is no header: a page inserted with plain SQL
-- sends none.
ALTER TABLE pages ADD COLUMN headers jsonb
    CHECK (headers IS NULL OR jsonb_typeof(headers) = 'array');

-- +goose Down
ALTER TABLE pages DROP COLUMN headers;

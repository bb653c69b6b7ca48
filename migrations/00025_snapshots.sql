-- +goose Up
-- The archive's index (issue 34): one row per check whose page, as
-- fetched, is kept as WARC records (docs/archive.md). The processor
-- inserts it in the check's own transaction, only for a check that
-- recorded something, so a row never exists without its check; the
-- records themselves are in the archive's files, which the sweep keeps
-- while a row names them.
CREATE TABLE snapshots (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- A homepage's check, or an article fetch of the extractor: one of
    -- the two.
    page_id        bigint REFERENCES pages (id) ON DELETE CASCADE,
    article_id     bigint REFERENCES articles (id) ON DELETE CASCADE,
    -- The check's id, also in the metadata record.
    check_id       uuid NOT NULL,
    fetched_at     timestamptz NOT NULL,
    -- Where the check's records are: a file of the archive store and the
    -- byte range of its gzip members (request, response or revisit,
    -- metadata).
    file           text NOT NULL CHECK (file ~ '^[A-Za-z0-9][A-Za-z0-9._-]*$'),
    file_offset    bigint NOT NULL CHECK (file_offset >= 0),
    length         bigint NOT NULL CHECK (length > 0),
    -- The response or revisit record's WARC-Record-ID: a redelivered
    -- check indexes nothing twice.
    record_id      text NOT NULL UNIQUE,
    payload_digest text NOT NULL,
    -- For a revisit, the snapshot holding the payload; retention keeps an
    -- original while a revisit refers to it.
    revisit_of     bigint REFERENCES snapshots (id),
    target_uri     text NOT NULL,
    status         int NOT NULL,
    content_type   text NOT NULL DEFAULT '',
    payload_bytes  bigint NOT NULL,
    -- What the check recorded.
    baseline       boolean NOT NULL DEFAULT false,
    updates        int NOT NULL DEFAULT 0,
    revisions      int NOT NULL DEFAULT 0,
    removals       int NOT NULL DEFAULT 0,
    CHECK ((page_id IS NULL) <> (article_id IS NULL))
);
CREATE INDEX snapshots_page ON snapshots (page_id, fetched_at DESC);
CREATE INDEX snapshots_article ON snapshots (article_id) WHERE article_id IS NOT NULL;
CREATE INDEX snapshots_file ON snapshots (file);
CREATE INDEX snapshots_revisit_of ON snapshots (revisit_of) WHERE revisit_of IS NOT NULL;

-- The page's newest snapshot that holds its payload, which the claim puts
-- in the job (watch.SnapshotOriginal) so that a crawler writes an
-- identical body as a revisit record.
ALTER TABLE pages ADD COLUMN snapshot_original jsonb;

-- +goose Down
ALTER TABLE pages DROP COLUMN snapshot_original;
DROP TABLE snapshots;

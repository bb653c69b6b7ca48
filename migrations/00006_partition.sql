-- +goose Up
-- links and updates become partitioned, for an installation of 10 M pages.
--
-- links is partitioned by HASH (page_id) into 32 partitions. At 10 M pages
-- of ~300 links it holds 3e9 rows, ~770 GB with its indexes (257 bytes a
-- row, docs/benchmarks.md): 32 partitions keep each near 1e8 rows and 24 GB, a
-- size autovacuum and an index rebuild get through in minutes, while a
-- statement that is not keyed by page id (the link pruner's oldest-first
-- scan) merges only 32 index scans. Every statement of a check names one page_id, so it touches
-- one partition. The count can change only by rewriting the table, so it is
-- chosen for the largest installation, not for today's; 64 would halve the
-- partitions again at the cost of twice the planning work for those global
-- scans. links is never dropped by partition: a link is forgotten by the
-- batched DELETE of PruneLinks, by its own last-seen time.
--
-- updates is partitioned by RANGE (discovered_at), one partition per UTC week
-- (Monday 00:00 to Monday 00:00), so retention drops whole partitions instead
-- of deleting rows (the processor's pruner: internal/store/partitions.go).
-- Weeks, not months: an update is kept at most one partition longer than
-- PORTALWATCH_UPDATES_RETENTION (a partition goes once all of it is older),
-- a week past a retention of 30 days rather than a month, and a partition
-- holds 1/4 as many rows for the pruner to unlink at once; the partition
-- count stays small (5 to 6 at 30 days, 56 at a year). Partitions are made
-- for the weeks holding data and for the next 3 weeks; the processor keeps
-- making them ahead. updates_default catches a row outside every partition
-- (if no processor ran for weeks); the pruner moves such rows into their
-- week's partition when it makes it.
--
-- Unique constraints of a partitioned table must contain the partition key,
-- so updates' primary key becomes (id, discovered_at) and its old UNIQUE
-- (page_id, link_key) goes. Neither was what makes a link news once: the
-- check statement (internal/store/checks.go) inserts into links first and
-- writes an update only for a row that insert really added, so the links
-- primary key (page_id, link_key) decides. A link forgotten by link retention
-- and seen again is recorded again, as it always was documented to be; the
-- old constraint silently swallowed that second update while the first was
-- still kept. ids stay unique: they come from one sequence.
--
-- PostgreSQL 15 has no identity column on a partitioned table (17 does), so
-- updates.id takes its default from an owned sequence, updates_id_seq, which
-- continues where the identity left off: no id is given twice, so the
-- notifier's cursors and delivery logs stay true.
--
-- The data is copied into new tables without indexes, the old tables are
-- dropped, and every index and constraint is built afterwards with its old
-- name: a bulk load and then one sort per index, in this one transaction.
-- Readers wait on the lock for the copy; a large installation migrates in a
-- maintenance window (roughly a minute per 10 M links on a small machine).

-- Week bounds and partition names are UTC weeks whatever the server's zone.
SET LOCAL TimeZone = 'UTC';

CREATE TABLE links_partitioned (
    page_id       bigint NOT NULL,
    link_key      bigint NOT NULL,
    url           text NOT NULL,
    text          text NOT NULL,
    code          text NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
) PARTITION BY HASH (page_id);

CREATE TABLE updates_partitioned (
    id            bigint NOT NULL,
    page_id       bigint NOT NULL,
    url           text NOT NULL,
    text          text NOT NULL,
    code          text NOT NULL,
    link_key      bigint NOT NULL,
    discovered_at timestamptz NOT NULL DEFAULT now(),
    xact          xid8 NOT NULL DEFAULT pg_current_xact_id()
) PARTITION BY RANGE (discovered_at);

-- +goose StatementBegin
DO $$
DECLARE
    week   timestamptz;
    last   timestamptz;
    seq    record;
BEGIN
    FOR i IN 0..31 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF links_partitioned FOR VALUES WITH (MODULUS 32, REMAINDER %s)',
                       'links_p' || lpad(i::text, 2, '0'), i);
    END LOOP;

    -- Weeks from the oldest update's to three weeks ahead, in UTC. The names
    -- (updates_wYYYYMMDD, the Monday) are what the pruner looks for.
    SELECT coalesce(date_trunc('week', min(discovered_at), 'UTC'), date_trunc('week', now(), 'UTC'))
        INTO week FROM updates;
    last := date_trunc('week', now(), 'UTC') + interval '3 weeks';
    WHILE week <= last LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF updates_partitioned FOR VALUES FROM (%L) TO (%L)',
                       'updates_w' || to_char(week AT TIME ZONE 'UTC', 'YYYYMMDD'), week, week + interval '1 week');
        week := week + interval '1 week';
    END LOOP;
    CREATE TABLE updates_default PARTITION OF updates_partitioned DEFAULT;

    INSERT INTO links_partitioned (page_id, link_key, url, text, code, first_seen_at, last_seen_at)
        SELECT page_id, link_key, url, text, code, first_seen_at, last_seen_at FROM links;
    INSERT INTO updates_partitioned (id, page_id, url, text, code, link_key, discovered_at, xact)
        SELECT id, page_id, url, text, code, link_key, discovered_at, xact FROM updates;

    -- The identity's state, read before dropping the table drops it.
    EXECUTE format('SELECT last_value, is_called FROM %s', pg_get_serial_sequence('updates', 'id')) INTO seq;
    DROP TABLE updates;
    DROP TABLE links;
    CREATE SEQUENCE updates_id_seq;
    PERFORM setval('updates_id_seq', seq.last_value, seq.is_called);
END
$$;
-- +goose StatementEnd

ALTER TABLE links_partitioned RENAME TO links;
ALTER TABLE updates_partitioned RENAME TO updates;
ALTER SEQUENCE updates_id_seq OWNED BY updates.id;
ALTER TABLE updates ALTER COLUMN id SET DEFAULT nextval('updates_id_seq');

ALTER TABLE links ADD CONSTRAINT links_pkey PRIMARY KEY (page_id, link_key);
ALTER TABLE links ADD CONSTRAINT links_page_id_fkey FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;
CREATE INDEX links_last_seen ON links (last_seen_at);

ALTER TABLE updates ADD CONSTRAINT updates_pkey PRIMARY KEY (id, discovered_at);
ALTER TABLE updates ADD CONSTRAINT updates_page_id_fkey FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;
CREATE INDEX updates_newest ON updates (discovered_at DESC, id DESC);
CREATE INDEX updates_page_since ON updates (page_id, discovered_at DESC, id DESC);
CREATE INDEX updates_text_trgm ON updates USING gin (text gin_trgm_ops);
CREATE INDEX updates_xact ON updates (xact, id);
CREATE INDEX updates_page_xact ON updates (page_id, xact, id);

-- +goose Down
-- Back to plain tables, with updates' identity continuing the sequence. The
-- old UNIQUE (page_id, link_key) of updates returns: of a link recorded twice
-- (forgotten and seen again) only the older update is kept.
CREATE TABLE links_plain (LIKE links INCLUDING DEFAULTS);
INSERT INTO links_plain SELECT * FROM links;

CREATE TABLE updates_plain (
    id            bigint GENERATED ALWAYS AS IDENTITY,
    page_id       bigint NOT NULL,
    url           text NOT NULL,
    text          text NOT NULL,
    code          text NOT NULL,
    link_key      bigint NOT NULL,
    discovered_at timestamptz NOT NULL DEFAULT now(),
    xact          xid8 NOT NULL DEFAULT pg_current_xact_id()
);
INSERT INTO updates_plain OVERRIDING SYSTEM VALUE
    SELECT DISTINCT ON (page_id, link_key) id, page_id, url, text, code, link_key, discovered_at, xact
    FROM updates ORDER BY page_id, link_key, id;

-- +goose StatementBegin
DO $$
DECLARE
    seq record;
BEGIN
    SELECT last_value, is_called INTO seq FROM updates_id_seq;
    PERFORM setval(pg_get_serial_sequence('updates_plain', 'id'), seq.last_value, seq.is_called);
END
$$;
-- +goose StatementEnd

DROP TABLE updates;
DROP TABLE links;
ALTER TABLE links_plain RENAME TO links;
ALTER TABLE updates_plain RENAME TO updates;
ALTER SEQUENCE updates_plain_id_seq RENAME TO updates_id_seq;

ALTER TABLE links ADD CONSTRAINT links_pkey PRIMARY KEY (page_id, link_key);
ALTER TABLE links ADD CONSTRAINT links_page_id_fkey FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;
CREATE INDEX links_last_seen ON links (last_seen_at);

ALTER TABLE updates ADD CONSTRAINT updates_pkey PRIMARY KEY (id);
ALTER TABLE updates ADD CONSTRAINT updates_page_id_link_key_key UNIQUE (page_id, link_key);
ALTER TABLE updates ADD CONSTRAINT updates_page_id_fkey FOREIGN KEY (page_id) REFERENCES pages (id) ON DELETE CASCADE;
CREATE INDEX updates_newest ON updates (discovered_at DESC, id DESC);
CREATE INDEX updates_page_since ON updates (page_id, discovered_at DESC, id DESC);
CREATE INDEX updates_text_trgm ON updates USING gin (text gin_trgm_ops);
CREATE INDEX updates_xact ON updates (xact, id);
CREATE INDEX updates_page_xact ON updates (page_id, xact, id);

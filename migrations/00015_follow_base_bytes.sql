-- +goose Up
-- pages.follow_base as bytes: each key 8 bytes big-endian, in the order of
-- the set (sorted), as jobs already carry it (watch.Keys' JSON). Every
-- claim of a followed page sends its base to the scheduler, and as a
-- bigint[] PostgreSQL sends it one element at a time through int8send: 22
-- of the 28 µs a claim spent reading a 356-key base (docs/benchmarks.md), where
-- bytes are one copy. SQL that needs the keys themselves (a truncated check
-- folding its additions into the base) reads them with follow_keys and
-- writes them with follow_bytes. The table is rewritten: on a large
-- installation this takes a while and blocks the pages table; stop the
-- programs first.
-- +goose StatementBegin
CREATE FUNCTION follow_keys(b bytea) RETURNS SETOF bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || encode(substring(b FROM i * 8 + 1 FOR 8), 'hex'))::bit(64)::bigint
    FROM generate_series(0, length(b) / 8 - 1) AS i
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION follow_bytes(keys bigint[]) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(int8send(k), ''::bytea ORDER BY n), ''::bytea)
    FROM unnest(keys) WITH ORDINALITY AS u(k, n)
$$;
-- +goose StatementEnd
ALTER TABLE pages ALTER COLUMN follow_base TYPE bytea USING follow_bytes(follow_base);
-- Random keys do not compress: keep the base out of line, uncompressed.
ALTER TABLE pages ALTER COLUMN follow_base SET STORAGE EXTERNAL;

-- +goose Down
-- A column's transform takes no subquery: a function reads the keys.
-- +goose StatementBegin
CREATE FUNCTION follow_key_array(b bytea) RETURNS bigint[]
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT ARRAY(SELECT follow_keys(b)) $$;
-- +goose StatementEnd
ALTER TABLE pages ALTER COLUMN follow_base TYPE bigint[] USING follow_key_array(follow_base);
ALTER TABLE pages ALTER COLUMN follow_base SET STORAGE EXTERNAL;
DROP FUNCTION follow_key_array(bytea);
DROP FUNCTION follow_bytes(bigint[]);
DROP FUNCTION follow_keys(bytea);

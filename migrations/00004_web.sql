-- +goose Up
-- Pages gain a name and tags, set by people (watchctl, the API, the web
-- page). title is the page's <title> as last seen, for the processor to
-- fill once crawlers send it; a page without a name is shown by its title,
-- then by its host. changed_at moves whenever a person changes the page, so
-- feeds can tell a renamed or retagged source without reading updates.
ALTER TABLE pages
    ADD COLUMN name       text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    ADD COLUMN tags       text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tags) <= 20),
    ADD COLUMN title      text,
    ADD COLUMN changed_at timestamptz NOT NULL DEFAULT now();
-- The tag feed and the tag filter ask "which pages carry tag T": tags @> '{T}'.
CREATE INDEX pages_tags ON pages USING gin (tags);

-- Searching updates by text is a substring match (ILIKE '%…%'); a trigram
-- index answers a rare word without reading every row of a large table.
-- pg_trgm is a trusted extension: the database's owner may create it.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX updates_text_trgm ON updates USING gin (text gin_trgm_ops);

-- api_tokens holds the HTTP API's bearer tokens. Only the SHA-256 of a token
-- is kept: the token itself is shown once, when it is created.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
    hash         bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    can_write    boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz
);

-- +goose Down
DROP TABLE api_tokens;
DROP INDEX updates_text_trgm;
DROP INDEX pages_tags;
ALTER TABLE pages DROP COLUMN changed_at, DROP COLUMN title, DROP COLUMN tags, DROP COLUMN name;

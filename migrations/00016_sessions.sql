-- +goose Up
-- sessions are the web page's sign-ins. The cookie holds a random session
-- id, and only its SHA-256 is kept here, bound to the token that signed in:
-- signing out deletes the row, revoking the token deletes its sessions, and
-- a stolen cookie is worth nothing once either happens. Per-reader state of
-- the page hangs off the token a session names. Before this migration the
-- cookie held the token's secret itself; such a cookie names no session,
-- so the upgrade signs every reader of the page out once.
CREATE TABLE sessions (
    hash         bytea PRIMARY KEY CHECK (length(hash) = 32),
    token_id     bigint NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_token ON sessions (token_id);

-- +goose Down
DROP TABLE sessions;

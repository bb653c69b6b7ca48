package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// sessionTouchEvery is how stale a session's last_seen_at may grow before
// a request writes it again, as for tokens.
const sessionTouchEvery = time.Minute

// CreateSession starts a session of the token called tokenName that ends
// after ttl, under the SHA-256 of id (the caller makes id, a random secret
// that only the cookie holds). It drops the token's expired sessions on the
// way, so they never pile up. It returns watch.ErrTokenNotFound when the
// token was revoked meanwhile.
func (s *Store) CreateSession(ctx context.Context, tokenName, id string, ttl time.Duration) error {
	hash := sha256.Sum256([]byte(id))
	tag, err := s.pool.Exec(ctx, `
		WITH token AS (SELECT id FROM api_tokens WHERE name = $1),
		expired AS (DELETE FROM sessions WHERE token_id = (SELECT id FROM token) AND expires_at < now())
		INSERT INTO sessions (hash, token_id, expires_at)
		SELECT $2, id, now() + $3 * interval '1 millisecond' FROM token`, tokenName, hash[:], ttl.Milliseconds())
	if err != nil {
		return fmt.Errorf("start a session of token %q: %w", tokenName, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("start a session of token %q: %w", tokenName, watch.ErrTokenNotFound)
	}
	return nil
}

// VerifySession returns the token of the live session whose id is id, or
// watch.ErrTokenNotFound for an unknown, ended or expired session (or one
// whose token was revoked). Like VerifyToken, it records the use at most
// once a minute, and not at all for a role that may not write.
func (s *Store) VerifySession(ctx context.Context, id string) (watch.Token, error) {
	hash := sha256.Sum256([]byte(id))
	var (
		t    watch.Token
		used *time.Time
		seen time.Time
	)
	err := s.pool.QueryRow(ctx, `
		SELECT t.name, t.can_write, t.created_at, t.last_used_at, s.last_seen_at
		FROM sessions s JOIN api_tokens t ON t.id = s.token_id
		WHERE s.hash = $1 AND s.expires_at > now()`, hash[:]).Scan(&t.Name, &t.Write, &t.CreatedAt, &used, &seen)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Token{}, watch.ErrTokenNotFound
	}
	if err != nil {
		return watch.Token{}, fmt.Errorf("verify session: %w", err)
	}
	if used != nil {
		t.LastUsedAt = *used
	}
	if time.Since(seen) > sessionTouchEvery {
		_, err := s.pool.Exec(ctx, `UPDATE sessions SET last_seen_at = now() WHERE hash = $1`, hash[:])
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42501") { // insufficient_privilege
			return watch.Token{}, fmt.Errorf("record use of a session of token %q: %w", t.Name, err)
		}
	}
	return t, nil
}

// EndSession ends the session whose id is id; ending one that does not
// exist (ended already, say) is not an error.
func (s *Store) EndSession(ctx context.Context, id string) error {
	hash := sha256.Sum256([]byte(id))
	if _, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE hash = $1`, hash[:]); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

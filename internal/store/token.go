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

// tokenTouchEvery is how stale last_used_at may grow before a use writes
// it again: a feed reader polling every minute costs one write a minute
// at most, and a read-only role (which cannot write it) nothing.
const tokenTouchEvery = time.Minute

// CreateToken stores the SHA-256 of secret under name. It returns
// watch.ErrDuplicateToken when a token of that name exists. The caller
// makes the secret (it is shown once and never stored).
func (s *Store) CreateToken(ctx context.Context, name, secret string, write bool) (watch.Token, error) {
	hash := sha256.Sum256([]byte(secret))
	var t watch.Token
	err := s.pool.QueryRow(ctx, `
		INSERT INTO api_tokens (name, hash, can_write) VALUES ($1, $2, $3)
		RETURNING name, can_write, created_at`, name, hash[:], write).Scan(&t.Name, &t.Write, &t.CreatedAt)
	if isUniqueViolation(err) {
		return watch.Token{}, fmt.Errorf("token %q: %w", name, watch.ErrDuplicateToken)
	}
	if err != nil {
		return watch.Token{}, fmt.Errorf("create token %q: %w", name, err)
	}
	return t, nil
}

// Tokens lists every token by name.
func (s *Store) Tokens(ctx context.Context) ([]watch.Token, error) {
	rows, err := s.pool.Query(ctx, `SELECT name, can_write, created_at, last_used_at FROM api_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	tokens, err := pgx.CollectRows(rows, scanToken)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken deletes the token called name, or returns
// watch.ErrTokenNotFound.
func (s *Store) RevokeToken(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM api_tokens WHERE name = $1`, name)
	if err != nil {
		return fmt.Errorf("revoke token %q: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("token %q: %w", name, watch.ErrTokenNotFound)
	}
	return nil
}

// VerifyToken returns the token whose secret is secret, or
// watch.ErrTokenNotFound. It records the use at most once a minute per
// token, and not at all when the database role may not write (a read-only
// deployment): the check itself only reads.
func (s *Store) VerifyToken(ctx context.Context, secret string) (watch.Token, error) {
	hash := sha256.Sum256([]byte(secret))
	rows, err := s.pool.Query(ctx, `SELECT name, can_write, created_at, last_used_at FROM api_tokens WHERE hash = $1`, hash[:])
	if err != nil {
		return watch.Token{}, fmt.Errorf("verify token: %w", err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanToken)
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Token{}, watch.ErrTokenNotFound
	}
	if err != nil {
		return watch.Token{}, fmt.Errorf("verify token: %w", err)
	}
	if time.Since(t.LastUsedAt) > tokenTouchEvery {
		_, err := s.pool.Exec(ctx, `UPDATE api_tokens SET last_used_at = now() WHERE hash = $1`, hash[:])
		var pgErr *pgconn.PgError
		if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42501") { // insufficient_privilege
			return watch.Token{}, fmt.Errorf("record use of token %q: %w", t.Name, err)
		}
	}
	return t, nil
}

func scanToken(r pgx.CollectableRow) (watch.Token, error) {
	var (
		t    watch.Token
		used *time.Time
	)
	if err := r.Scan(&t.Name, &t.Write, &t.CreatedAt, &used); err != nil {
		return watch.Token{}, err
	}
	if used != nil {
		t.LastUsedAt = *used
	}
	return t, nil
}

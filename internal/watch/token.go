package watch

import (
	"errors"
	"time"
)

// ErrTokenNotFound is returned for a token that does not exist (or was
// revoked), whether looked up by name or by its secret.
var ErrTokenNotFound = errors.New("token not found")

// ErrDuplicateToken is returned when a token of the same name exists.
var ErrDuplicateToken = errors.New("a token of that name already exists")

// Token is an API token as listed; its secret is never stored.
type Token struct {
	Name       string
	Write      bool // may change pages, not only read
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used
}

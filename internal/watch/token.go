package watch

import (
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
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

// TokenPrefix marks portalwatch's tokens, so a leaked one is easy to
// recognise in a log or a secret scanner.
const TokenPrefix = "pw_"

// NewTokenSecret makes a token's secret: 130 random bits, not guessable,
// and short enough to paste into a feed reader.
func NewTokenSecret() string { return TokenPrefix + rand.Text() }

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckTokenName refuses a token name the store would not take.
func CheckTokenName(name string) error {
	if !tokenNameRE.MatchString(name) {
		return Refused("name", fmt.Errorf("token name %q: use 1 to 64 letters, digits, '_', '.' or '-'", name))
	}
	return nil
}

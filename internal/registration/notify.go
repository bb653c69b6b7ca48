package registration

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"unicode"
)

// MaxTagLength caps a subscription's tag, in bytes.
const MaxTagLength = 64

// CheckWebhook checks a webhook URL as CheckURL checks a page's: syntax,
// and the non-public address guard with the name resolved, which the
// notifier's dialer applies again at every delivery. It returns the URL as
// typed, not normalised: a receiver's query may carry a token that
// normalisation would drop. Errors are as CheckURL's.
func (pol Policy) CheckWebhook(ctx context.Context, raw string) (string, error) {
	if _, err := pol.CheckURL(ctx, raw); err != nil {
		return "", err
	}
	return raw, nil
}

// CheckEmail checks an e-mail address and returns its bare form
// ("desk@example.com" from "Desk <desk@example.com>"); a malformed one
// gets a *RefusedError.
func CheckEmail(raw string) (string, error) {
	a, err := mail.ParseAddress(raw)
	if err != nil || !strings.Contains(a.Address, "@") {
		return "", refused("email", fmt.Errorf("%q is not an e-mail address: want one like desk@example.com", raw))
	}
	return a.Address, nil
}

// CheckTag checks a tag to subscribe to: 1 to MaxTagLength bytes of
// printable characters without spaces; anything else gets a *RefusedError.
func CheckTag(tag string) error {
	bad := strings.IndexFunc(tag, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) })
	if tag == "" || len(tag) > MaxTagLength || bad >= 0 {
		return refused("tag", fmt.Errorf("tag %q: want 1 to %d printable characters without spaces", tag, MaxTagLength))
	}
	return nil
}

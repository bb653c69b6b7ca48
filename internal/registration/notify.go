package registration

import (
	"context"
	"fmt"
	"net/mail"
	"strings"

	"github.com/portalwatch/portalwatch/internal/watch"
)

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
// gets a *watch.RefusedError.
func CheckEmail(raw string) (string, error) {
	a, err := mail.ParseAddress(raw)
	if err != nil || !strings.Contains(a.Address, "@") {
		return "", watch.Refused("email", fmt.Errorf("%q is not an e-mail address: want one like desk@example.com", raw))
	}
	return a.Address, nil
}

// CheckTag checks a tag to subscribe to by the rule pages' tags follow
// (watch.NormalizeTags: lower-cased letters, digits, '-' and '_'), so that
// a subscription can only name a tag a page can carry, and returns it as
// pages store it; anything else gets a *watch.RefusedError.
func CheckTag(tag string) (string, error) {
	tags, err := watch.NormalizeTags([]string{tag})
	if err != nil {
		return "", watch.Refused("tag", err)
	}
	if len(tags) != 1 {
		return "", watch.Refused("tag", fmt.Errorf("tag %q is empty: name the tag whose pages to follow", tag))
	}
	return tags[0], nil
}

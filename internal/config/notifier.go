package config

import (
	"errors"
	"fmt"
	"net/mail"
	"time"
)

// validate checks the notifier's settings against each other and the SMTP
// ones on their own; the error names each bad variable on its own line.
func (n Notifier) validate() error {
	var errs []error
	if n.RetryMax > 24*time.Hour {
		errs = append(errs, fmt.Errorf("PORTALWATCH_NOTIFY_RETRY_MAX=%s: want at most 24h", n.RetryMax))
	}
	if n.RetryMin > n.RetryMax {
		errs = append(errs, fmt.Errorf("PORTALWATCH_NOTIFY_RETRY_MIN=%s is above PORTALWATCH_NOTIFY_RETRY_MAX=%s", n.RetryMin, n.RetryMax))
	}
	if longest := max(n.WebhookTimeout, n.SMTPTimeout); n.Lease < 2*longest {
		errs = append(errs, fmt.Errorf("PORTALWATCH_NOTIFIER_LEASE=%s: want at least twice the longest delivery timeout (%s), or deliveries outlive their lease and go out twice", n.Lease, longest))
	}
	if n.SMTPURL != "" {
		if err := validURL("PORTALWATCH_SMTP_URL", n.SMTPURL, "smtp", "smtps"); err != nil {
			errs = append(errs, err)
		}
		if n.SMTPFrom == "" {
			errs = append(errs, errors.New("PORTALWATCH_SMTP_FROM is empty: set the sender address of e-mail, such as portalwatch <watch@example.com>"))
		}
	}
	if n.SMTPFrom != "" {
		if _, err := mail.ParseAddress(n.SMTPFrom); err != nil {
			errs = append(errs, fmt.Errorf("PORTALWATCH_SMTP_FROM=%q: not an e-mail address (%v)", n.SMTPFrom, err))
		}
	}
	return errors.Join(errs...)
}

package notify

import (
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// NewSenders returns the senders cfg configures: webhooks always (with the
// deployment's PORTALWATCH_ALLOW_PRIVATE and user agent), e-mail when
// PORTALWATCH_SMTP_URL is set; and a function that closes them. It fails
// only on SMTP settings that config.Load would have refused.
func NewSenders(cfg config.Config) (map[watch.Channel]Sender, func(), error) {
	n := cfg.Notifier
	hooks := NewWebhookSender(WebhookConfig{Timeout: n.WebhookTimeout, AllowPrivate: cfg.AllowPrivate, UserAgent: cfg.Crawler.UserAgent})
	senders := map[watch.Channel]Sender{watch.Webhook: hooks}
	if n.SMTPURL != "" {
		mail, err := NewEmailSender(EmailConfig{URL: n.SMTPURL, From: n.SMTPFrom, Timeout: n.SMTPTimeout})
		if err != nil {
			return nil, nil, err
		}
		senders[watch.Email] = mail
	}
	return senders, hooks.CloseIdleConnections, nil
}

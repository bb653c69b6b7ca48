package proc

import (
	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notify"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// NotifySenders returns the senders cfg configures, for the notifier and
// `watchctl notify test` alike: webhooks always, dialling through the
// crawler's address guard (PORTALWATCH_ALLOW_PRIVATE) with its user agent;
// e-mail when PORTALWATCH_SMTP_URL is set; and a function that closes them.
// It fails only on SMTP settings that config.Load would have refused.
func NotifySenders(cfg config.Config) (map[watch.Channel]notify.Sender, func(), error) {
	n := cfg.Notifier
	agent := cfg.Crawler.UserAgent
	if agent == "" {
		agent = fetch.DefaultUserAgent
	}
	hooks := notify.NewWebhookSender(notify.WebhookConfig{
		Timeout: n.WebhookTimeout, DialControl: fetch.DialGuard(cfg.AllowPrivate), UserAgent: agent,
	})
	senders := map[watch.Channel]notify.Sender{watch.Webhook: hooks}
	if n.SMTPURL != "" {
		mail, err := notify.NewEmailSender(notify.EmailConfig{URL: n.SMTPURL, From: n.SMTPFrom, Timeout: n.SMTPTimeout})
		if err != nil {
			return nil, nil, err
		}
		senders[watch.Email] = mail
	}
	return senders, hooks.CloseIdleConnections, nil
}

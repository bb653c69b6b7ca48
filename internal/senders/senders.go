// Package senders builds the notifier's sender of each channel from its
// settings: webhooks always, e-mail when an SMTP server is set. The
// notifier, the web program's and watchctl's test messages use it alike, so
// a test message goes out as a real one would.
package senders

import (
	"syscall"

	"github.com/portalwatch/portalwatch/internal/email"
	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/watch"
	"github.com/portalwatch/portalwatch/internal/webhook"
)

// Config configures the sender of each channel.
type Config struct {
	Webhook webhook.Config
	Email   email.Config
}

// WithDefaults returns c with the timeouts' defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Webhook.Timeout <= 0 {
		c.Webhook.Timeout = webhook.DefaultTimeout
	}
	if c.Email.Timeout <= 0 {
		c.Email.Timeout = email.DefaultTimeout
	}
	return c
}

// New returns the senders cfg configures, webhooks with each dial vetted by
// dial (the crawler's address guard; see webhook.Config.DialControl), and a
// function that closes them. It fails only on e-mail settings that
// email.Config.Validate refuses.
func New(cfg Config, dial func(network, address string, c syscall.RawConn) error) (map[watch.Channel]notifier.Sender, func(), error) {
	hooks := cfg.Webhook
	hooks.DialControl = dial
	webhooks := webhook.New(hooks)
	senders := map[watch.Channel]notifier.Sender{watch.Webhook: webhooks}
	if cfg.Email.URL != "" {
		mail, err := email.New(cfg.Email)
		if err != nil {
			return nil, nil, err
		}
		senders[watch.Email] = mail
	}
	return senders, webhooks.CloseIdleConnections, nil
}

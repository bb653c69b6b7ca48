package notify

import (
	"syscall"

	"github.com/portalwatch/portalwatch/internal/watch"
)

// SendersConfig configures the sender of each channel.
type SendersConfig struct {
	Webhook WebhookConfig
	Email   EmailConfig
}

// WithDefaults returns c with the timeouts' defaults filled in.
func (c SendersConfig) WithDefaults() SendersConfig {
	if c.Webhook.Timeout <= 0 {
		c.Webhook.Timeout = DefaultWebhookTimeout
	}
	if c.Email.Timeout <= 0 {
		c.Email.Timeout = DefaultSMTPTimeout
	}
	return c
}

// NewSenders returns the senders cfg configures, for the notifier and the
// test messages of the web program and watchctl alike: webhooks always,
// each dial vetted by dial (the crawler's address guard; see
// WebhookConfig.DialControl), and e-mail when cfg.Email.URL is set; and a
// function that closes them. It fails only on e-mail settings that
// EmailConfig.Validate refuses.
func NewSenders(cfg SendersConfig, dial func(network, address string, c syscall.RawConn) error) (map[watch.Channel]Sender, func(), error) {
	hooks := cfg.Webhook
	hooks.DialControl = dial
	webhooks := NewWebhookSender(hooks)
	senders := map[watch.Channel]Sender{watch.Webhook: webhooks}
	if cfg.Email.URL != "" {
		mail, err := NewEmailSender(cfg.Email)
		if err != nil {
			return nil, nil, err
		}
		senders[watch.Email] = mail
	}
	return senders, webhooks.CloseIdleConnections, nil
}

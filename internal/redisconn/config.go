package redisconn

import "github.com/portalwatch/portalwatch/internal/config"

// Config says where Redis is.
type Config struct {
	// URL names one server, a Sentinel-managed primary or a Redis Cluster,
	// in a form of the package comment. Default DefaultURL.
	URL string `env:"REDIS_URL"`
}

// Defaults of the programs' Redis settings.
const (
	DefaultURL = "redis://127.0.0.1:6379/0"
	// DefaultPrefix starts every key of an installation that does not
	// name its own (PORTALWATCH_REDIS_PREFIX).
	DefaultPrefix = "portalwatch"
)

// WithDefaults returns c with an unset URL given DefaultURL.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	return c
}

// Validate reads the URL as Open will, so that a URL the adapters would
// refuse stops a program at its start; the error never shows its password.
func (c Config) Validate() error {
	if _, err := Parse(c.URL); err != nil {
		return config.Invalid("URL", config.RedactURL(c.URL), err.Error())
	}
	return nil
}

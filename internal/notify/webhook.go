package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/portalwatch/portalwatch/internal/config"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// Webhook defaults and limits.
const (
	// DefaultWebhookTimeout bounds one webhook request, from the dial to
	// the end of the kept response.
	DefaultWebhookTimeout = 10 * time.Second
	// MaxResponseBytes is how much of a receiver's response is read and
	// kept (in the delivery log's last error): a receiver must not make
	// the notifier read or store more.
	MaxResponseBytes = 1024
	// SecretPrefix starts every signing secret (Standard Webhooks).
	SecretPrefix = "whsec_"
)

// Message types, the body's "type".
const (
	TypeUpdatesCreated = "updates.created"
	TypeTest           = "subscription.test"
)

// NewSecret returns a new signing secret: "whsec_" and the base64 of 32
// random bytes.
func NewSecret() string {
	var key [32]byte
	rand.Read(key[:]) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:])
}

// Sign returns the webhook-signature header value of a message, Standard
// Webhooks version 1: "v1," and the base64 HMAC-SHA256, keyed with the
// secret's base64 key (after "whsec_"), of id "." timestamp "." body. It
// fails on a secret that is not "whsec_" and base64.
func Sign(secret, id string, timestamp int64, body []byte) (string, error) {
	key, err := secretKey(secret)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("signing secret does not start with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("signing secret is not %s and base64", SecretPrefix)
	}
	return key, nil
}

// Body is a webhook's JSON body.
type Body struct {
	Type    string             `json:"type"`
	Page    watch.NotifiedPage `json:"page"`
	Updates []BodyUpdate       `json:"updates"`
}

// BodyUpdate is one update in a webhook's body.
type BodyUpdate struct {
	ID           int64     `json:"id"`
	URL          string    `json:"url"`
	Text         string    `json:"text"`
	Code         string    `json:"code"`
	DiscoveredAt time.Time `json:"discovered_at"`
}

// body returns the JSON of batch b, which holds one check's updates and so
// one page, without HTML escaping.
func body(typ string, b watch.Batch) ([]byte, error) {
	msg := Body{Type: typ, Updates: make([]BodyUpdate, 0, len(b.Updates))}
	for _, u := range b.Updates {
		msg.Updates = append(msg.Updates, BodyUpdate{ID: u.ID, URL: u.URL, Text: u.Text, Code: u.Code, DiscoveredAt: u.DiscoveredAt.UTC()})
	}
	if len(b.Updates) > 0 {
		msg.Page = b.Pages[b.Updates[0].PageID]
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// WebhookConfig configures a WebhookSender.
type WebhookConfig struct {
	// Timeout bounds one request from the dial to the end of the kept
	// response, at least 100ms. Zero means DefaultWebhookTimeout.
	Timeout time.Duration `env:"PORTALWATCH_WEBHOOK_TIMEOUT"`
	// DialControl vets every address a request dials, after name
	// resolution, so neither a redirecting name nor DNS rebinding reaches
	// what it refuses. The program passes the crawler's guard
	// (fetch.DialGuard with PORTALWATCH_ALLOW_PRIVATE); nil dials anything,
	// which only a test wants.
	DialControl func(network, address string, c syscall.RawConn) error
	// UserAgent is sent with every request; empty sends "portalwatch". The
	// programs send the crawler's.
	UserAgent string `env:"PORTALWATCH_USER_AGENT"`
}

// Validate names every field out of range.
func (c WebhookConfig) Validate() error {
	return config.AtLeast("Timeout", c.Timeout, 100*time.Millisecond)
}

// WebhookSender posts signed messages to webhook URLs. It never follows a
// redirect (a 3xx is a failure), uses no proxy, vets every dial with
// DialControl, and reads at most
// MaxResponseBytes of a response. It is safe for concurrent use.
type WebhookSender struct {
	cfg WebhookConfig
	hc  *http.Client
	now func() time.Time
}

// NewWebhookSender returns a sender for cfg.
func NewWebhookSender(cfg WebhookConfig) *WebhookSender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultWebhookTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "portalwatch"
	}
	dialer := &net.Dialer{Timeout: min(cfg.Timeout, 5*time.Second), Control: cfg.DialControl}
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would hide the real destination from the dial guard
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    4,
	}
	return &WebhookSender{
		cfg: cfg,
		hc: &http.Client{
			Transport:     transport,
			Timeout:       cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: time.Now,
	}
}

// CloseIdleConnections closes kept-alive connections; call it on the way out.
func (w *WebhookSender) CloseIdleConnections() { w.hc.CloseIdleConnections() }

// Send posts batch b as a message of type typ to sub's URL, signed with its
// secret under the headers webhook-id (b.ID, the same at every retry),
// webhook-timestamp and webhook-signature. Any 2xx is a delivery.
func (w *WebhookSender) Send(ctx context.Context, sub watch.Subscription, typ string, b watch.Batch) Result {
	payload, err := body(typ, b)
	if err != nil {
		return Result{Err: err}
	}
	ts := w.now().Unix()
	sig, err := Sign(sub.Secret, b.ID, ts, payload)
	if err != nil {
		return Result{Err: fmt.Errorf("subscription %d: %w", sub.ID, err), Gone: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Target, bytes.NewReader(payload))
	if err != nil {
		return Result{Err: fmt.Errorf("webhook URL %s: %w", sub.Target, err), Gone: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.cfg.UserAgent)
	req.Header.Set("webhook-id", b.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := w.hc.Do(req)
	if err != nil {
		return Result{Err: postError(err)}
	}
	defer resp.Body.Close()
	kept, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		// The receiver accepted the message; a broken body after that
		// does not undo it.
		return Result{Code: resp.StatusCode}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return Result{Code: resp.StatusCode, Err: fmt.Errorf("HTTP %d: redirects are not followed (Location: %s)",
			resp.StatusCode, oneLine(resp.Header.Get("Location")))}
	case err != nil:
		return Result{Code: resp.StatusCode, Err: fmt.Errorf("HTTP %d: reading the response: %w", resp.StatusCode, err)}
	}
	said := oneLine(string(kept))
	if said == "" {
		said = http.StatusText(resp.StatusCode)
	}
	return Result{
		Code: resp.StatusCode,
		Err:  fmt.Errorf("HTTP %d: %s", resp.StatusCode, said),
		// 410 Gone is the receiver's way of saying "stop".
		Gone: resp.StatusCode == http.StatusGone,
	}
}

// postError says why a request got no response, without the URL (which
// the log entry already names and which may carry a token).
func postError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no response in time: %w", err)
	}
	return fmt.Errorf("no response: %w", err)
}

// oneLine squeezes s onto one line of at most MaxResponseBytes bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxResponseBytes {
		s = s[:MaxResponseBytes]
	}
	return strings.ToValidUTF8(s, "?")
}

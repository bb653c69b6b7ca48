package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
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
	// DefaultTimeout bounds one webhook request, from the dial to
	// the end of the kept response.
	DefaultTimeout = 10 * time.Second
	// AcceptedBodyGrace is how long the body of a 2xx answer is read
	// for: the status accepts the message and the body is not needed, but
	// one that comes with the status (most do) is read to its end so that
	// the connection carries the next message.
	AcceptedBodyGrace = 100 * time.Millisecond
	// MaxResponseBytes is how much of a receiver's response is read and
	// kept (in the delivery log's last error): a receiver must not make
	// the notifier read or store more.
	MaxResponseBytes = 1024
)

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

// Tolerance is how far a message's webhook-timestamp may be from the
// receiver's clock for Verify to take it: older ones are replays.
const Tolerance = 5 * time.Minute

// Verify checks a received message the way Standard Webhooks tells
// receivers to, and README's receivers are told to: its webhook-timestamp
// within Tolerance of now, and one of its webhook-signature values the
// body's signature with the subscription's secret.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q: not a Unix time", h.Get("webhook-timestamp"))
	}
	if d := now.Sub(time.Unix(ts, 0)).Abs(); d > Tolerance {
		return fmt.Errorf("webhook-timestamp is %s from now: over %s, a replay", d.Round(time.Second), Tolerance)
	}
	want, err := Sign(secret, h.Get("webhook-id"), ts, body)
	if err != nil {
		return err
	}
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no webhook-signature matches the body")
}

func secretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, watch.SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("signing secret does not start with %q", watch.SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("signing secret is not %s and base64", watch.SecretPrefix)
	}
	return key, nil
}

// BodyVersion is the form of Body this program sends. Fields are only ever
// added to it, each optional, so a receiver ignores what it does not know
// and a fleet of notifiers of two versions sends bodies both read.
const BodyVersion = 1

// Body is a webhook's JSON body: the API's update objects (watch.Update,
// the one definition of an update as it leaves portalwatch) of one check
// of one page, or one event of one page (type its kind, Event set,
// Updates absent).
type Body struct {
	Version int                `json:"version"`
	Type    string             `json:"type"`
	Page    watch.NotifiedPage `json:"page"`
	Updates []watch.Update     `json:"updates,omitempty"`
	// Event is the event of a message whose type is an event kind.
	Event *watch.Event `json:"event,omitempty"`
}

// body returns the JSON of batch b, which holds one check's updates and so
// one page, or one event, without HTML escaping.
func body(typ string, b watch.Batch) ([]byte, error) {
	msg := Body{Version: BodyVersion, Type: typ}
	if len(b.Updates) == 0 && len(b.Events) > 0 {
		// Webhooks get no digests, so a batch of events is one event.
		e := b.Events[0].Published()
		msg.Page, msg.Event = b.Pages[e.PageID], &e
		return encode(msg)
	}
	msg.Updates = make([]watch.Update, 0, len(b.Updates))
	if len(b.Updates) > 0 {
		msg.Page = b.Pages[b.Updates[0].PageID]
	}
	for _, u := range b.Updates {
		u = u.Published()
		if u.PageName == "" {
			u.PageName = b.Pages[u.PageID].Name
		}
		msg.Updates = append(msg.Updates, u)
	}
	return encode(msg)
}

func encode(msg Body) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Config configures a Sender.
type Config struct {
	// Timeout bounds one request from the dial to the end of the kept
	// response, at least 100ms: Send never takes longer. A receiver that
	// sends no status within it has failed ("no response in 10s"). Zero
	// means DefaultTimeout.
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
func (c Config) Validate() error {
	return config.AtLeast("Timeout", c.Timeout, 100*time.Millisecond)
}

// Sender posts signed messages to webhook URLs. It never follows a
// redirect (a 3xx is a failure), uses no proxy, vets every dial with
// DialControl, and reads at most
// MaxResponseBytes of a response. It is safe for concurrent use.
type Sender struct {
	cfg         Config
	dialTimeout time.Duration
	hc          *http.Client
	now         func() time.Time
}

// New returns a sender for cfg.
func New(cfg Config) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "portalwatch"
	}
	dialTimeout := min(cfg.Timeout, 5*time.Second)
	dialer := &net.Dialer{Timeout: dialTimeout, Control: cfg.DialControl}
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
	return &Sender{
		cfg:         cfg,
		dialTimeout: dialTimeout,
		hc: &http.Client{
			Transport: transport,
			// The whole request, the response's body included: a
			// ResponseHeaderTimeout alone would leave a dripped body
			// unbounded.
			Timeout:       cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: time.Now,
	}
}

// CloseIdleConnections closes kept-alive connections; call it on the way out.
func (w *Sender) CloseIdleConnections() { w.hc.CloseIdleConnections() }

// Send posts batch b as a message of type typ to sub's URL, signed with its
// secret under the headers webhook-id (b.ID, the same at every retry),
// webhook-timestamp and webhook-signature. Any 2xx within Config.Timeout is
// a delivery, whatever its body does after: Send returns at most
// AcceptedBodyGrace after the status. No status within Config.Timeout is a
// failure, "no response in" the timeout.
func (w *Sender) Send(ctx context.Context, sub watch.Subscription, typ string, b watch.Batch) watch.SendResult {
	payload, err := body(typ, b)
	if err != nil {
		return watch.SendResult{Err: err}
	}
	ts := w.now().Unix()
	sig, err := Sign(sub.Secret, b.ID, ts, payload)
	if err != nil {
		return watch.SendResult{Err: fmt.Errorf("subscription %d: %w", sub.ID, err), Gone: true}
	}
	// cut ends the request early, to stop reading the body of an
	// accepted message.
	ctx, cut := context.WithCancel(ctx)
	defer cut()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Target, bytes.NewReader(payload))
	if err != nil {
		return watch.SendResult{Err: fmt.Errorf("webhook URL %s: %w", sub.Target, err), Gone: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.cfg.UserAgent)
	req.Header.Set("webhook-id", b.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := w.hc.Do(req)
	if err != nil {
		return watch.SendResult{Err: w.postError(ctx, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// The receiver accepted the message with its status; its body
		// says nothing the notifier needs, and a broken, endless or
		// dripped one does not undo the delivery. It is read briefly, for
		// the connection's sake, and then cut, so that the delivery is
		// recorded when it happened and a receiver cannot hold the
		// subscription's lease after accepting.
		stop := time.AfterFunc(AcceptedBodyGrace, cut)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
		stop.Stop()
		return watch.SendResult{Code: resp.StatusCode}
	}
	kept, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return watch.SendResult{Code: resp.StatusCode, Err: fmt.Errorf("HTTP %d: redirects are not followed (Location: %s)",
			resp.StatusCode, watch.ErrorLine(resp.Header.Get("Location")))}
	case err != nil:
		return watch.SendResult{Code: resp.StatusCode, Err: fmt.Errorf("HTTP %d: reading the response: %w", resp.StatusCode, err)}
	}
	said := watch.ErrorLine(string(kept))
	if said == "" {
		said = http.StatusText(resp.StatusCode)
	}
	return watch.SendResult{
		Code: resp.StatusCode,
		Err:  fmt.Errorf("HTTP %d: %s", resp.StatusCode, said),
		// 410 Gone is the receiver's way of saying "stop".
		Gone: resp.StatusCode == http.StatusGone,
	}
}

// postError says why a request got no response, without the URL (which
// the log entry already names and which may carry a token): with a
// timeout, which one ran out ("no response in 10s").
func (w *Sender) postError(ctx context.Context, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var (
		ne net.Error
		oe *net.OpError
	)
	switch {
	case ctx.Err() != nil:
		// The caller's deadline or cancellation, not the receiver's.
	case errors.As(err, &oe) && oe.Op == "dial" && oe.Timeout():
		return fmt.Errorf("no connection in %s: %w", w.dialTimeout, err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("no response in %s: %w", w.cfg.Timeout, err)
	}
	return fmt.Errorf("no response: %w", err)
}

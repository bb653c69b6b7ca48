package watch

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ErrSubscriptionNotFound is returned when an id names no subscription.
var ErrSubscriptionNotFound = errors.New("subscription not found")

// ErrLeaseLost is returned when a notifier reports on a subscription that
// another notifier has taken over since (its lease ran out): the report is
// dropped, and the message may be delivered again under the same id.
var ErrLeaseLost = errors.New("subscription lease lost")

// Channel is how a subscription is notified.
type Channel string

// The channels.
const (
	Webhook Channel = "webhook"
	Email   Channel = "email"
)

// Digest says how often an e-mail subscription is sent its updates.
type Digest string

// The digests: every check's updates at once, or one message an hour or a
// day (at the top of the hour, at midnight UTC).
const (
	DigestNone   Digest = "none"
	DigestHourly Digest = "hourly"
	DigestDaily  Digest = "daily"
)

// ParseDigest reads "none", "hourly" or "daily"; "" is none.
func ParseDigest(s string) (Digest, error) {
	switch d := Digest(s); d {
	case "":
		return DigestNone, nil
	case DigestNone, DigestHourly, DigestDaily:
		return d, nil
	}
	return "", fmt.Errorf("digest %q: want none, hourly or daily", s)
}

// Subscription asks for the updates of every page, one page or the pages of
// one tag to be sent to a webhook or an e-mail address.
type Subscription struct {
	ID      int64
	Channel Channel
	// Target is the webhook URL or the e-mail address.
	Target string
	// Secret signs webhooks: "whsec_" and a base64 key (Standard Webhooks).
	// Empty for e-mail.
	Secret string
	Digest Digest
	// PageID scopes the subscription to one page; 0 means no page scope.
	PageID int64
	// Tag scopes the subscription to the pages with this tag; "" means no
	// tag scope. At most one of PageID and Tag is set.
	Tag       string
	CreatedAt time.Time
	// PausedAt is when the notifier gave up on a target that kept failing;
	// zero while the subscription is active.
	PausedAt     time.Time
	PausedReason string
	// WaitArticle is how long the notifier may hold a message back for the
	// articles of its updates (see Batch.ArticleHold), so that it carries
	// their headlines and leads; 0, the default, sends at once with the
	// articles still pending. At most MaxWaitArticle.
	WaitArticle time.Duration
	// Events are the kinds of event it is sent besides updates, in
	// EventKinds' order; none by default.
	Events []EventKind
}

// MaxWaitArticle is the longest Subscription.WaitArticle. A message held
// for an article holds the subscription's later messages back too (they
// go out in order), so the wait is kept to minutes; the extractor reads
// most articles within seconds of their update.
const MaxWaitArticle = 10 * time.Minute

// ParseWaitArticle reads a subscription's wait for articles as people
// write a duration ("30s", "2m"); "" is 0, no wait. Its errors say what
// would do, without naming the field: the caller knows its name.
func ParseWaitArticle(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return d, CheckWaitArticle(d)
}

// CheckWaitArticle checks a subscription's wait for articles: from 0 (no
// wait) to MaxWaitArticle. Its errors say what would do, without naming
// the field.
func CheckWaitArticle(d time.Duration) error {
	switch {
	case d < 0:
		return errors.New("cannot be negative; give 0 to send at once")
	case d > MaxWaitArticle:
		return fmt.Errorf("at most %s, because a message held back holds every later one back too; "+
			"most articles are read within seconds, so 30s to 2m is usually enough", FormatDuration(MaxWaitArticle))
	}
	return nil
}

// ArticleHold reports whether a subscription that waits up to wait for
// articles holds batch b back at now: while one of its updates has its
// article pending and was found less than wait ago. until is when the last
// such wait ends; from then on b goes out as it is, whatever is still
// pending. A batch is held whole, so that one check stays one message,
// and a held batch holds back those after it (see package notifier).
func (b Batch) ArticleHold(wait time.Duration, now time.Time) (until time.Time, held bool) {
	if wait <= 0 {
		return time.Time{}, false
	}
	for _, u := range b.Updates {
		if u.Article == nil || u.Article.Status != ArticlePending {
			continue
		}
		if end := u.DiscoveredAt.Add(wait); end.After(now) && end.After(until) {
			until, held = end, true
		}
	}
	return until, held
}

// Scope describes what the subscription covers, for people.
func (s Subscription) Scope() string {
	switch {
	case s.PageID != 0:
		return fmt.Sprintf("page %d", s.PageID)
	case s.Tag != "":
		return "tag " + s.Tag
	}
	return "all pages"
}

// Lease is a notifier's claim on one subscription: until it runs out no
// other notifier works on the subscription. Cursor and Token are the
// store's; a service passes them back unchanged.
type Lease struct {
	Subscription Subscription
	// Cursor marks what has been delivered; opaque outside the store.
	Cursor string
	// Token proves the lease is still this notifier's.
	Token int64
	// Attempts counts the failed attempts of the message now pending.
	Attempts int
	// FailingSince is when the pending message's first attempt failed;
	// zero when it has not failed.
	FailingSince time.Time
}

// NotifiedPage is the page an update was found on, as messages show it.
type NotifiedPage struct {
	ID  int64  `json:"id"`
	URL string `json:"url"`
	// Name is the page's display name (Page.DisplayName): its name, else
	// its title, else its host.
	Name string `json:"name"`
}

// TestBatch is what a test message of sub carries: a sample update of a
// page in sub's scope (the first of pages that is), marked as a sample in
// its text and URL, so that a receiver sees the fields of a real message.
// With no page in scope the sample's page is a made-up one, id 0. Its id
// is new at every call: a test is never a repeat.
func TestBatch(sub Subscription, pages []Page, now time.Time) Batch {
	page := NotifiedPage{URL: "https://portal.example/", Name: "a sample page (none is in this subscription's scope yet)"}
	for _, p := range pages {
		if sub.PageID != 0 && p.ID != sub.PageID || sub.Tag != "" && !slices.Contains(p.Tags, sub.Tag) {
			continue
		}
		page = NotifiedPage{ID: p.ID, URL: p.BaseURL, Name: p.DisplayName()}
		break
	}
	u := Update{PageID: page.ID, PageName: page.Name, URL: strings.TrimSuffix(page.URL, "/") + "/portalwatch-test-message",
		Text: "Test message from portalwatch: a sample of the updates this subscription will send", Code: "test",
		DiscoveredAt: now.UTC()}
	return Batch{ID: fmt.Sprintf("msg_test_%d_%d", sub.ID, now.UnixNano()), Updates: []Update{u},
		Pages: map[int64]NotifiedPage{page.ID: page}}
}

// Batch is one message's worth of updates and events for one
// subscription: the updates one check found, or one event, or for a
// digest every pending update and event. ID is stable: a batch computed
// again from the same cursor has the same ID and the same contents, so
// receivers can drop a repeat.
type Batch struct {
	ID      string
	Updates []Update
	// Events are the events of the kinds the subscription asked for, in
	// the order they were recorded: one, alone, without a digest.
	Events []Event
	// Pages holds every page Updates and Events refer to, by id.
	Pages map[int64]NotifiedPage
	// Next is the cursor after the batch; opaque outside the store.
	Next string
}

// Empty reports whether b holds nothing to send.
func (b Batch) Empty() bool { return len(b.Updates) == 0 && len(b.Events) == 0 }

// Type is the type of the message that carries b: an event's kind when
// b is one event alone, else TypeUpdatesCreated (a digest of events too,
// which is about the updates first and lists its events after them).
func (b Batch) Type() string {
	if len(b.Updates) == 0 && len(b.Events) == 1 {
		return string(b.Events[0].Kind)
	}
	return TypeUpdatesCreated
}

// IDRange returns the first and the last id that b holds, updates and
// events alike (they share one sequence), as the delivery log keeps them.
func (b Batch) IDRange() (first, last int64) {
	for _, id := range b.ids() {
		if first == 0 || id < first {
			first = id
		}
		last = max(last, id)
	}
	return first, last
}

func (b Batch) ids() []int64 {
	ids := make([]int64, 0, len(b.Updates)+len(b.Events))
	for _, u := range b.Updates {
		ids = append(ids, u.ID)
	}
	for _, e := range b.Events {
		ids = append(ids, e.ID)
	}
	return ids
}

// DeliveryStatus is a message's state in the delivery log.
type DeliveryStatus string

// The delivery states.
const (
	Delivered DeliveryStatus = "delivered"
	Failed    DeliveryStatus = "failed" // will be retried
	Paused    DeliveryStatus = "paused" // failed too long; the subscription is paused
)

// DeliveryLogEntry is one entry of a subscription's delivery log.
type DeliveryLogEntry struct {
	SubscriptionID int64
	MessageID      string
	UpdateCount    int
	Status         DeliveryStatus
	Attempts       int
	LastAttemptAt  time.Time
	// ResponseCode is the webhook's HTTP status, the SMTP reply code, or 0
	// when there was no answer.
	ResponseCode int
	LastError    string
}

// SubscriptionStatus is a subscription with its newest delivery log entry
// (zero when nothing was delivered yet).
type SubscriptionStatus struct {
	Subscription
	Last DeliveryLogEntry
}

// Attempt is the outcome of one attempt to deliver a batch, as the store
// records it.
type Attempt struct {
	// ResponseCode is the HTTP status or SMTP reply code, 0 for none.
	ResponseCode int
	// Error is why the attempt failed, on one line; empty for a delivery.
	Error string
	// RetryAt is when to try again after a failure.
	RetryAt time.Time
	// PauseNow pauses the subscription at once (the target said it is
	// gone); otherwise it is paused once its pending message has failed
	// for PauseAfter.
	PauseNow   bool
	PauseAfter time.Duration
}

// Message types, a message's "type" (the webhook body's, and what an
// e-mail says).
const (
	TypeUpdatesCreated = "updates.created"
	TypeTest           = "subscription.test"
)

// SecretPrefix starts every webhook signing secret (Standard Webhooks).
const SecretPrefix = "whsec_"

// NewWebhookSecret returns a new signing secret for a webhook subscription:
// "whsec_" and the base64 of 32 random bytes.
func NewWebhookSecret() string {
	var key [32]byte
	rand.Read(key[:]) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key[:])
}

// SendResult is the outcome of one attempt to send a message.
type SendResult struct {
	// Code is the HTTP status or SMTP reply code; 0 when none came.
	Code int
	// Err is why the message was not accepted; nil for a delivery.
	Err error
	// Gone says the target will never accept it (HTTP 410, an unknown
	// mailbox, a broken secret): the subscription is paused at once.
	Gone bool
}

// MaxErrorBytes bounds the error a delivery log keeps of a failed attempt.
const MaxErrorBytes = 1024

// ErrorLine squeezes a failed attempt's error (a receiver's answer, an SMTP
// reply) onto one line of valid UTF-8 of at most MaxErrorBytes, as delivery
// logs keep it.
func ErrorLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > MaxErrorBytes {
		s = s[:MaxErrorBytes]
	}
	return strings.ToValidUTF8(s, "?")
}

// MaskedTarget is the subscription's target as it is shown: a webhook URL
// with its query's values and its password hidden (receivers put tokens
// there), an e-mail address as it is.
func (s Subscription) MaskedTarget() string {
	if s.Channel != Webhook {
		return s.Target
	}
	return MaskURL(s.Target)
}

// MaskURL returns raw with every query value and the password of its user
// information replaced by "xxxxx"; raw itself when it does not parse, with
// no query, password or fragment to hide ("xxxxx" when it does not parse
// but holds "?" or "@", which might be a secret).
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsAny(raw, "?@#") {
			return "xxxxx"
		}
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		u.RawQuery = q.Encode()
	}
	if u.Fragment != "" {
		u.Fragment = "xxxxx"
	}
	return u.String()
}

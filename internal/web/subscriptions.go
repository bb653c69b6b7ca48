package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// SubscriptionStore reads and writes notification subscriptions and their
// delivery logs. Subscription, SetSubscriptionEvents, RemoveSubscription
// and ResumeSubscription return watch.ErrSubscriptionNotFound for an
// unknown id; AddSubscription
// returns watch.ErrPageNotFound when PageID names no page. Its input has
// passed registration already.
type SubscriptionStore interface {
	Subscriptions(ctx context.Context) ([]watch.SubscriptionStatus, error)
	Subscription(ctx context.Context, id int64) (watch.Subscription, error)
	AddSubscription(ctx context.Context, sub watch.Subscription) (watch.Subscription, error)
	SetSubscriptionEvents(ctx context.Context, id int64, kinds []watch.EventKind) (watch.Subscription, error)
	Deliveries(ctx context.Context, id int64, limit int) ([]watch.DeliveryLogEntry, error)
	RemoveSubscription(ctx context.Context, id int64) error
	ResumeSubscription(ctx context.Context, id int64) error
}

// TestSender sends a subscription a test message now, through the same
// senders (and dial guard) the notifier uses, as `watchctl notify test`
// does. It must honour ctx.
type TestSender interface {
	SendTest(ctx context.Context, sub watch.Subscription, sample watch.Batch) watch.SendResult
}

// Deliveries: a log page holds 20 entries unless ?limit= says otherwise,
// at most maxDeliveries (the store keeps 100 per subscription).
const (
	defaultDeliveries = 20
	maxDeliveries     = 100
)

// subscriptionJSON is a subscription as the API shows it; the signing
// secret is shown only by the answer that created it.
type subscriptionJSON struct {
	ID           int64         `json:"id"`
	Channel      watch.Channel `json:"channel"`
	Target       string        `json:"target"`
	Digest       watch.Digest  `json:"digest"`
	PageID       int64         `json:"page_id,omitempty"`
	Tag          string        `json:"tag,omitempty"`
	Scope        string        `json:"scope"`
	CreatedAt    time.Time     `json:"created_at"`
	Paused       bool          `json:"paused"`
	PausedAt     *time.Time    `json:"paused_at,omitempty"`
	PausedReason string        `json:"paused_reason"`
	// WaitArticle is how long a message may be held for the articles of
	// its updates, in the form of watch.FormatDuration; "0s": not at all.
	WaitArticle        string  `json:"wait_article"`
	WaitArticleSeconds float64 `json:"wait_article_seconds"`
	// Events are the kinds of event it is sent besides updates; [] for
	// none, never null.
	Events []watch.EventKind `json:"events"`
	// LastDelivery is the newest delivery log entry; absent until the
	// notifier first tried to deliver.
	LastDelivery *deliveryJSON `json:"last_delivery,omitempty"`
}

// createdSubscriptionJSON is the answer to a creation: the only one that
// carries the webhook's signing secret.
type createdSubscriptionJSON struct {
	subscriptionJSON
	Secret string `json:"secret,omitempty"`
}

// deliveryJSON is a delivery log entry as the API shows it.
type deliveryJSON struct {
	MessageID     string               `json:"message_id"`
	UpdateCount   int                  `json:"update_count"`
	Status        watch.DeliveryStatus `json:"status"`
	Attempts      int                  `json:"attempts"`
	LastAttemptAt time.Time            `json:"last_attempt_at"`
	ResponseCode  int                  `json:"response_code"`
	LastError     string               `json:"last_error"`
}

func toSubscriptionJSON(sub watch.Subscription) subscriptionJSON {
	out := subscriptionJSON{ID: sub.ID, Channel: sub.Channel, Target: sub.MaskedTarget(), Digest: sub.Digest, PageID: sub.PageID,
		Tag: sub.Tag, Scope: sub.Scope(), CreatedAt: sub.CreatedAt.UTC(), Paused: !sub.PausedAt.IsZero(), PausedReason: sub.PausedReason,
		WaitArticle: watch.FormatDuration(sub.WaitArticle), WaitArticleSeconds: sub.WaitArticle.Seconds(),
		Events: append([]watch.EventKind{}, sub.Events...)}
	if out.Paused {
		t := sub.PausedAt.UTC()
		out.PausedAt = &t
	}
	return out
}

func toDeliveryJSON(d watch.DeliveryLogEntry) deliveryJSON {
	return deliveryJSON{MessageID: d.MessageID, UpdateCount: d.UpdateCount, Status: d.Status, Attempts: d.Attempts,
		LastAttemptAt: d.LastAttemptAt.UTC(), ResponseCode: d.ResponseCode, LastError: d.LastError}
}

// subscriptionInput is what a new subscription is made of, from the API's
// JSON or the web page's forms.
type subscriptionInput struct {
	Channel string  `json:"channel"`
	URL     string  `json:"url"`
	Address string  `json:"address"`
	Digest  string  `json:"digest"`
	PageID  *int64  `json:"page_id"`
	Tag     *string `json:"tag"`
	// WaitArticle is a duration such as "30s"; absent or "" is no wait.
	WaitArticle string `json:"wait_article"`
	// Events are the kinds of event to send besides updates.
	Events []string `json:"events"`
}

// subscriptionEdit is what PATCH may change of a subscription; a field
// absent stays as it is.
type subscriptionEdit struct {
	Events *[]string `json:"events"`
}

// refuse is a refusal of one input field, answered 422 beside it.
func refuse(field, format string, args ...any) error {
	return &watch.RefusedError{Field: field, Err: fmt.Errorf(format, args...)}
}

// checkSubscription turns in into a subscription through the gates
// `watchctl notify add` uses: the webhook URL through the registration
// and non-public address check (with the name resolved), the address
// through CheckEmail, the tag through CheckTag. Refusals are
// *watch.RefusedError naming the input's field.
func (s *Server) checkSubscription(ctx context.Context, in subscriptionInput) (watch.Subscription, error) {
	var sub watch.Subscription
	switch watch.Channel(in.Channel) {
	case watch.Webhook:
		if in.Address != "" {
			return sub, refuse("address", "a webhook takes url, not address")
		}
		if in.Digest != "" && in.Digest != string(watch.DigestNone) {
			return sub, refuse("digest", "webhooks are sent each check's updates at once; digests are for e-mail")
		}
		if strings.TrimSpace(in.URL) == "" {
			return sub, refuse("url", "give the receiver's URL, such as https://hooks.example.com/portalwatch")
		}
		sub = watch.Subscription{Channel: watch.Webhook, Digest: watch.DigestNone}
	case watch.Email:
		if in.URL != "" {
			return sub, refuse("url", "an e-mail subscription takes address, not url")
		}
		digest, err := watch.ParseDigest(in.Digest)
		if err != nil {
			return sub, refuse("digest", "%v", err)
		}
		sub = watch.Subscription{Channel: watch.Email, Digest: digest}
	default:
		return sub, refuse("channel", "channel %q: want webhook or email", in.Channel)
	}
	if in.PageID != nil && in.Tag != nil {
		return sub, refuse("tag", "give page_id or tag, not both")
	}
	wait, err := watch.ParseWaitArticle(in.WaitArticle)
	if err != nil {
		return sub, refuse("wait_article", "wait_article %q: %v", in.WaitArticle, err)
	}
	sub.WaitArticle = wait
	if sub.Events, err = watch.EventKindsOf(in.Events); err != nil {
		return sub, refuse("events", "events: %v", err)
	}
	if in.PageID != nil {
		if *in.PageID <= 0 {
			return sub, refuse("page_id", "page_id %d: want a page id (a positive whole number)", *in.PageID)
		}
		sub.PageID = *in.PageID
	}
	if in.Tag != nil {
		tag, err := registration.CheckTag(*in.Tag)
		if err != nil {
			return sub, err
		}
		sub.Tag = tag
	}
	if sub.Channel == watch.Email {
		target, err := registration.CheckEmail(strings.TrimSpace(in.Address))
		var refused *watch.RefusedError
		if errors.As(err, &refused) {
			refused.Field = "address"
		}
		sub.Target = target
		return sub, err
	}
	// Last: it resolves the name, the only slow check.
	target, err := s.cfg.Policy.CheckWebhook(ctx, strings.TrimSpace(in.URL))
	sub.Target = target
	return sub, err
}

// addSubscription checks in and stores it; a webhook gets a new signing
// secret. A page id that names no page is refused on page_id.
func (s *Server) addSubscription(ctx context.Context, in subscriptionInput) (watch.Subscription, error) {
	sub, err := s.checkSubscription(ctx, in)
	if err != nil {
		return watch.Subscription{}, err
	}
	if sub.Channel == watch.Webhook {
		sub.Secret = watch.NewWebhookSecret()
	}
	added, err := s.deps.Subscriptions.AddSubscription(ctx, sub)
	if errors.Is(err, watch.ErrPageNotFound) {
		return watch.Subscription{}, refuse("page_id", "no page has id %d (see GET /api/v1/pages)", sub.PageID)
	}
	return added, err
}

// subscriptionID reads the {id} of the path: a positive whole number, else
// 404 (no subscription can have it).
func (s *Server) subscriptionID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.problem(w, r, http.StatusNotFound, fmt.Sprintf("%q is not a subscription id: ids are positive whole numbers", r.PathValue("id")))
		return 0, false
	}
	return id, true
}

// subscriptionError answers err of a subscription read or write: 404 for
// an unknown id, else as writeError.
func (s *Server) subscriptionError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, watch.ErrSubscriptionNotFound) {
		s.problem(w, r, http.StatusNotFound, err.Error()+" (see GET /api/v1/subscriptions)")
		return
	}
	s.writeError(w, r, err)
}

func (s *Server) apiListSubscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := s.deps.Subscriptions.Subscriptions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]subscriptionJSON, len(subs))
	for i, st := range subs {
		out[i] = toSubscriptionJSON(st.Subscription)
		if !st.Last.LastAttemptAt.IsZero() {
			d := toDeliveryJSON(st.Last)
			out[i].LastDelivery = &d
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"subscriptions": out})
}

func (s *Server) apiCreateSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscriptionInput
	if !s.decodeJSON(w, r, &in) {
		return
	}
	sub, err := s.addSubscription(r.Context(), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/subscriptions/%d", sub.ID))
	w.Header().Set("Cache-Control", "no-store") // the secret
	writeJSON(w, http.StatusCreated, createdSubscriptionJSON{subscriptionJSON: toSubscriptionJSON(sub), Secret: sub.Secret})
}

func (s *Server) apiEditSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := s.subscriptionID(w, r)
	if !ok {
		return
	}
	var in subscriptionEdit
	if !s.decodeJSON(w, r, &in) {
		return
	}
	var (
		sub watch.Subscription
		err error
	)
	if in.Events == nil {
		// Nothing to change: the answer is the subscription as it is.
		sub, err = s.deps.Subscriptions.Subscription(r.Context(), id)
	} else {
		var kinds []watch.EventKind
		if kinds, err = watch.EventKindsOf(*in.Events); err != nil {
			s.writeError(w, r, refuse("events", "events: %v", err))
			return
		}
		sub, err = s.deps.Subscriptions.SetSubscriptionEvents(r.Context(), id, kinds)
	}
	if err != nil {
		s.subscriptionError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toSubscriptionJSON(sub))
}

func (s *Server) apiDeliveries(w http.ResponseWriter, r *http.Request) {
	id, ok := s.subscriptionID(w, r)
	if !ok {
		return
	}
	limit := defaultDeliveries
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxDeliveries {
			s.problem(w, r, http.StatusBadRequest, fmt.Sprintf("limit %q: want a whole number from 1 to %d", v, maxDeliveries))
			return
		}
		limit = n
	}
	// The log of an unknown id is empty; the lookup tells it from one
	// that has delivered nothing yet.
	if _, err := s.deps.Subscriptions.Subscription(r.Context(), id); err != nil {
		s.subscriptionError(w, r, err)
		return
	}
	log, err := s.deps.Subscriptions.Deliveries(r.Context(), id, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]deliveryJSON, len(log))
	for i, d := range log {
		out[i] = toDeliveryJSON(d)
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": out})
}

// testResultJSON is the answer to a test message that was delivered.
type testResultJSON struct {
	Delivered    bool `json:"delivered"`
	ResponseCode int  `json:"response_code"`
}

// sendTest sends subscription id a test message. It returns the
// subscription, the outcome, and an error only when the message could not
// be attempted (unknown id, no sender).
func (s *Server) sendTest(ctx context.Context, id int64) (watch.Subscription, watch.SendResult, error) {
	sub, err := s.deps.Subscriptions.Subscription(ctx, id)
	if err != nil {
		return sub, watch.SendResult{}, err
	}
	if s.deps.Tester == nil {
		return sub, watch.SendResult{}, errNoTester
	}
	pages, err := s.deps.Pages.Pages(ctx)
	if err != nil {
		return sub, watch.SendResult{}, err
	}
	return sub, s.deps.Tester.SendTest(ctx, sub, watch.TestBatch(sub, pages, time.Now())), nil
}

// errNoTester is answered when the server was started without senders.
var errNoTester = errors.New("this server was started without notification senders and cannot send test messages; use `watchctl notify test ID`")

func (s *Server) apiTestSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := s.subscriptionID(w, r)
	if !ok {
		return
	}
	sub, res, err := s.sendTest(r.Context(), id)
	switch {
	case errors.Is(err, errNoTester):
		s.problem(w, r, http.StatusServiceUnavailable, err.Error())
		return
	case err != nil:
		s.subscriptionError(w, r, err)
		return
	case res.Err != nil:
		// The target's refusal is not the server's failure: 502 says the
		// request was fine and the far side did not accept the message.
		s.problem(w, r, http.StatusBadGateway, fmt.Sprintf("test message to %s not delivered: %v", sub.MaskedTarget(), res.Err))
		return
	}
	writeJSON(w, http.StatusOK, testResultJSON{Delivered: true, ResponseCode: res.Code})
}

func (s *Server) apiResumeSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := s.subscriptionID(w, r)
	if !ok {
		return
	}
	if err := s.deps.Subscriptions.ResumeSubscription(r.Context(), id); err != nil {
		s.subscriptionError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) apiDeleteSubscription(w http.ResponseWriter, r *http.Request) {
	id, ok := s.subscriptionID(w, r)
	if !ok {
		return
	}
	if err := s.deps.Subscriptions.RemoveSubscription(r.Context(), id); err != nil {
		s.subscriptionError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

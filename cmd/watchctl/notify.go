package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/portalwatch/portalwatch/internal/fetch"
	"github.com/portalwatch/portalwatch/internal/notifier"
	"github.com/portalwatch/portalwatch/internal/registration"
	"github.com/portalwatch/portalwatch/internal/senders"
	"github.com/portalwatch/portalwatch/internal/store"
	"github.com/portalwatch/portalwatch/internal/watch"
)

// notifyCmd groups the subscription commands: who is told about updates,
// and how their deliveries went.
type notifyCmd struct {
	Add    notifyAddCmd    `cmd:"" help:"Subscribe a webhook or an e-mail address to updates."`
	List   notifyListCmd   `cmd:"" help:"List subscriptions with their last delivery."`
	Set    notifySetCmd    `cmd:"" help:"Change the events a subscription is sent besides updates."`
	Remove notifyRemoveCmd `cmd:"" help:"Delete a subscription and its delivery log."`
	Test   notifyTestCmd   `cmd:"" help:"Send a test message to a subscription now."`
	Resume notifyResumeCmd `cmd:"" help:"Retry a paused subscription now."`
}

type notifyAddCmd struct {
	Webhook notifyAddWebhookCmd `cmd:"" help:"Post each check's updates to a URL, signed (Standard Webhooks). Prints the signing secret once."`
	Email   notifyAddEmailCmd   `cmd:"" help:"Mail updates to an address, at once or as a digest."`
}

// scope is the --page or --tag a subscription may be limited to.
type scope struct {
	Page string `placeholder:"ID" xor:"scope" help:"Only this page's updates."`
	Tag  string `placeholder:"TAG" xor:"scope" help:"Only the updates of pages with this tag."`
}

func (s scope) apply(sub *watch.Subscription) error {
	if s.Page != "" {
		id, err := parseID(s.Page)
		if err != nil {
			return err
		}
		sub.PageID = id
	}
	if s.Tag != "" {
		tag, err := registration.CheckTag(s.Tag)
		if err != nil {
			return err
		}
		sub.Tag = tag
	}
	return nil
}

// articleWait is the --wait-article every subscription may set.
type articleWait struct {
	WaitArticle string `name:"wait-article" placeholder:"DURATION" default:"0" help:"Hold each message up to this long after its updates were found while their articles are still being read, so that it carries headlines and leads (such as 30s; at most 10m). 0: send at once, articles pending."`
}

func (w articleWait) apply(sub *watch.Subscription) error {
	d, err := watch.ParseWaitArticle(w.WaitArticle)
	if err != nil {
		return usagef("--wait-article %s: %v", w.WaitArticle, err)
	}
	sub.WaitArticle = d
	return nil
}

// eventKinds is the --events every subscription may set.
type eventKinds struct {
	Events string `placeholder:"KINDS" help:"Also send these events, comma-separated: link.rewritten (a known link's headline changed), page.degraded (the watch may be blind to a page), page.recovered (a healthy check after that). Each goes out as a message of its own, or in the digest."`
}

func (k eventKinds) apply(sub *watch.Subscription) error {
	kinds, err := watch.ParseEventKinds(k.Events)
	if err != nil {
		return usagef("--events %s: %v", k.Events, err)
	}
	sub.Events = kinds
	return nil
}

// eventsNote describes a subscription's events after what added or
// changed it prints; empty without any.
func eventsNote(sub watch.Subscription) string {
	if len(sub.Events) == 0 {
		return ""
	}
	return ", and events " + eventList(sub.Events)
}

// eventList is kinds comma-separated, as --events takes them.
func eventList(kinds []watch.EventKind) string {
	words := make([]string, len(kinds))
	for i, k := range kinds {
		words[i] = string(k)
	}
	return strings.Join(words, ",")
}

// waitNote describes a subscription's wait for articles after what added
// it prints; empty without one.
func waitNote(sub watch.Subscription) string {
	if sub.WaitArticle == 0 {
		return ""
	}
	return ", waiting up to " + watch.FormatDuration(sub.WaitArticle) + " for articles"
}

type notifyAddWebhookCmd struct {
	URL string `arg:"" name:"url" help:"The receiver: an absolute http or https URL."`
	scope
	articleWait
	eventKinds
}

func (a *notifyAddWebhookCmd) Run(c *cli) error {
	sub := watch.Subscription{Channel: watch.Webhook, Secret: watch.NewWebhookSecret(), Digest: watch.DigestNone}
	if err := a.scope.apply(&sub); err != nil {
		return err
	}
	if err := a.articleWait.apply(&sub); err != nil {
		return err
	}
	if err := a.eventKinds.apply(&sub); err != nil {
		return err
	}
	target, err := c.policy.CheckWebhook(c.ctx, a.URL)
	if err != nil {
		return err
	}
	sub.Target = target
	added, err := c.subscribe(sub)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "subscription %d: webhook %s for %s%s%s\n", added.ID, added.Target, added.Scope(), waitNote(added), eventsNote(added))
	fmt.Fprintf(c.stdout, "signing secret (shown only now; keep it with the receiver): %s\n", added.Secret)
	return nil
}

type notifyAddEmailCmd struct {
	Address string `arg:"" name:"address" help:"The recipient, such as desk@example.com."`
	Digest  string `default:"none" enum:"none,hourly,daily" help:"none: each check's updates at once; hourly or daily: one message per hour or day (UTC)."`
	scope
	articleWait
	eventKinds
}

func (a *notifyAddEmailCmd) Run(c *cli) error {
	digest, err := watch.ParseDigest(a.Digest)
	if err != nil {
		return usagef("--%v", err)
	}
	sub := watch.Subscription{Channel: watch.Email, Digest: digest}
	if err := a.scope.apply(&sub); err != nil {
		return err
	}
	if err := a.articleWait.apply(&sub); err != nil {
		return err
	}
	if err := a.eventKinds.apply(&sub); err != nil {
		return err
	}
	if sub.Target, err = registration.CheckEmail(a.Address); err != nil {
		return err
	}
	added, err := c.subscribe(sub)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "subscription %d: e-mail to %s for %s, digest %s%s%s\n", added.ID, added.Target, added.Scope(), added.Digest,
		waitNote(added), eventsNote(added))
	if c.cfg.Senders.Email.URL == "" {
		fmt.Fprintln(c.stdout, "note: PORTALWATCH_SMTP_URL is not set; the notifier cannot send e-mail until it is")
	}
	return nil
}

func (c *cli) subscribe(sub watch.Subscription) (watch.Subscription, error) {
	st, err := c.open()
	if err != nil {
		return watch.Subscription{}, err
	}
	defer st.Close()
	added, err := st.AddSubscription(c.ctx, sub)
	if errors.Is(err, watch.ErrPageNotFound) {
		return watch.Subscription{}, usagef("no page has id %d (see `watchctl list`)", sub.PageID)
	}
	return added, err
}

type notifyListCmd struct{}

func (notifyListCmd) Run(c *cli) error {
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	subs, err := st.Subscriptions(c.ctx)
	if err != nil {
		return err
	}
	tw := newTable(c.stdout)
	fmt.Fprintln(tw, "ID\tCHANNEL\tTARGET\tSCOPE\tDIGEST\tWAIT ARTICLE\tEVENTS\tLAST DELIVERY\tSTATUS\tATTEMPTS\tCODE\tLAST ERROR\tPAUSED")
	for _, s := range subs {
		last, status, attempts, code := "never", "-", "-", "-"
		if !s.Last.LastAttemptAt.IsZero() {
			last = s.Last.LastAttemptAt.Local().Format("2006-01-02 15:04:05")
			status, attempts = string(s.Last.Status), fmt.Sprint(s.Last.Attempts)
			if s.Last.ResponseCode != 0 {
				code = fmt.Sprint(s.Last.ResponseCode)
			}
		}
		paused := "-"
		if !s.PausedAt.IsZero() {
			paused = s.PausedAt.Local().Format("2006-01-02 15:04:05") + ": " + oneLine(s.PausedReason)
		}
		wait := "-"
		if s.WaitArticle > 0 {
			wait = watch.FormatDuration(s.WaitArticle)
		}
		events := "-"
		if len(s.Events) > 0 {
			events = eventList(s.Events)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Channel, s.MaskedTarget(), s.Scope(), s.Digest,
			wait, events, last, status, attempts, code, oneLine(s.Last.LastError), paused)
	}
	return tw.Flush()
}

type notifyIDArg struct {
	ID string `arg:"" name:"id" help:"The subscription's id (see watchctl notify list)."`
}

func (a notifyIDArg) id() (int64, error) {
	id, err := parseID(a.ID)
	if err != nil {
		return 0, usagef("%q is not a subscription id: want a positive whole number (see `watchctl notify list`)", a.ID)
	}
	return id, nil
}

func notFound(err error, id int64) error {
	if errors.Is(err, watch.ErrSubscriptionNotFound) {
		return usagef("no subscription has id %d (see `watchctl notify list`)", id)
	}
	return err
}

type notifySetCmd struct {
	notifyIDArg
	Events string `required:"" placeholder:"KINDS" help:"The events to send besides updates, comma-separated, replacing the subscription's: link.rewritten, page.degraded, page.recovered; '' for none. Events of a kind added that were recorded since its last delivery are sent too."`
}

func (a *notifySetCmd) Run(c *cli) error {
	id, err := a.id()
	if err != nil {
		return err
	}
	kinds, err := watch.ParseEventKinds(a.Events)
	if err != nil {
		return usagef("--events %s: %v", a.Events, err)
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	sub, err := st.SetSubscriptionEvents(c.ctx, id, kinds)
	if err != nil {
		return notFound(err, id)
	}
	events := "no events, updates only"
	if len(sub.Events) > 0 {
		events = "events " + eventList(sub.Events)
	}
	fmt.Fprintf(c.stdout, "subscription %d: %s for %s\n", sub.ID, events, sub.Scope())
	return nil
}

type notifyRemoveCmd struct{ notifyIDArg }

func (r *notifyRemoveCmd) Run(c *cli) error {
	return r.change(c, (*store.Store).RemoveSubscription, "removed subscription %d\n")
}

type notifyResumeCmd struct{ notifyIDArg }

func (r *notifyResumeCmd) Run(c *cli) error {
	return r.change(c, (*store.Store).ResumeSubscription, "subscription %d will be tried again now\n")
}

// change applies do to the subscription the argument names and prints done
// with its id; an id no subscription has is a usage error.
func (a notifyIDArg) change(c *cli, do func(*store.Store, context.Context, int64) error, done string) error {
	id, err := a.id()
	if err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	if err := do(st, c.ctx, id); err != nil {
		return notFound(err, id)
	}
	fmt.Fprintf(c.stdout, done, id)
	return nil
}

type notifyTestCmd struct{ notifyIDArg }

func (r *notifyTestCmd) Run(c *cli) error {
	id, err := r.id()
	if err != nil {
		return err
	}
	st, err := c.open()
	if err != nil {
		return err
	}
	defer st.Close()
	sub, err := st.Subscription(c.ctx, id)
	if err != nil {
		return notFound(err, id)
	}
	senders, closeSenders, err := senders.New(c.cfg.Senders, fetch.DialGuard(c.cfg.AllowPrivate))
	if err != nil {
		return err
	}
	defer closeSenders()
	pages, err := st.Pages(c.ctx)
	if err != nil {
		return err
	}
	res := notifier.SendTest(c.ctx, senders, sub, watch.TestBatch(sub, pages, time.Now()))
	if res.Err != nil {
		return fmt.Errorf("test message to subscription %d not delivered: %w", id, res.Err)
	}
	fmt.Fprintf(c.stdout, "test message delivered to %s (response %d)\n", sub.MaskedTarget(), res.Code)
	return nil
}
